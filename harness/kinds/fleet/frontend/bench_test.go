package frontend

import (
	"encoding/json"
	"testing"
)

// The CPU cost of one full shard-map exchange between two peers: what a
// server pays per peer when it bootstraps from peers.
func BenchmarkFullSync8000(b *testing.B) {
	t := NewTable(8000, 16)
	msg, _ := json.Marshal(peerMsg{Op: "sync", Ready: true, Digest: t.Digest(), Table: t})
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		var m peerMsg
		if err := json.Unmarshal(msg, &m); err != nil {
			b.Fatal(err)
		}
		_ = m.Table.Digest()
		if _, err := json.Marshal(m); err != nil {
			b.Fatal(err)
		}
	}
}
