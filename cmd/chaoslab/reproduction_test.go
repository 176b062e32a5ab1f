package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The built-in revisions name IL-0384's: the proof of restart-fleet's
// pace and the mend of its front-end server, the later one last counts.
func TestBuiltinRevisionsNameFaultProofsAndMendedPrograms(t *testing.T) {
	revs, err := builtinRevisions()
	require.NoError(t, err)
	var whats []string
	for _, r := range revs {
		if r.Scenario == "il-0384-kinesis-thread-per-peer" {
			whats = append(whats, r.What)
		}
	}
	require.Contains(t, whats, "restart-fleet proved that an all-at-once restart was all at once")
	require.Contains(t, whats, "the front-end server reached a peer registered again at its new address")
}
