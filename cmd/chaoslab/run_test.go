package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// --client on this host runs under a shell; in an image its words are the
// command (an image may have no shell); names come from the program.
func TestClientProgram(t *testing.T) {
	p, err := clientProgram(runFlags{client: "/usr/bin/python3 examples/zk-treecache-python/treecache.py --quiet"})
	require.NoError(t, err)
	require.Equal(t, []string{"sh", "-c", "exec /usr/bin/python3 examples/zk-treecache-python/treecache.py --quiet"}, p.Command)
	require.Equal(t, "treecache", p.Name)

	p, err = clientProgram(runFlags{client: `/zk-paced -label 'a b'`, clientImage: "example/zk-paced:1"})
	require.NoError(t, err)
	require.Equal(t, []string{"/zk-paced", "-label", "a b"}, p.Command)
	require.Equal(t, "zk-paced", p.Name)

	p, err = clientProgram(runFlags{clientImage: "team/my-client:2.1"})
	require.NoError(t, err)
	require.Empty(t, p.Command, "the image's own command")
	require.Equal(t, "my-client", p.Name)

	_, err = clientProgram(runFlags{client: `/x 'unterminated`, clientImage: "x"})
	require.ErrorContains(t, err, "--client")
}
