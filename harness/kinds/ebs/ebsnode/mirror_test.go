package ebsnode

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// A primary copies its volume to a mirror and mirrors each write there,
// byte for byte on the mirror's disk; a mirror that stops answering is
// lost within the mirror timeout and the volume is stuck.
func TestMirrorCopiesWritesAndIsLost(t *testing.T) {
	mdir := t.TempDir()
	reps := &replicas{dir: mdir, files: map[string]*os.File{}}
	defer reps.close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	stall := make(chan struct{})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				select {
				case <-stall: // a mirror that takes the bytes but never answers
					<-make(chan struct{})
				default:
					reps.serve(c, 64*1024)
				}
			}()
		}
	}()
	defer ln.Close()
	s := DefaultSettings()
	s.VolumeKiB, s.MirrorTimeout = 16, lab.Duration(100*time.Millisecond)
	n := &node{cfg: Config{Settings: s, ID: "a1", Zone: "zone-a", Dir: t.TempDir(), Peers: map[string]string{"a2": ln.Addr().String()}}, log: slog.New(slog.DiscardHandler)}
	v, err := n.newVolume(VolumeConfig{ID: "vol-a1-1", Mirror: "a2"}, 1)
	require.NoError(t, err)
	defer v.file.Close()
	require.True(t, v.connect(context.Background(), "a2"))
	require.True(t, v.isLive())
	require.NoError(t, v.write(4096, []byte("mirrored bytes")))
	want, err := os.ReadFile(filepath.Join(n.cfg.Dir, "volume-vol-a1-1.img"))
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(mdir, "replica-vol-a1-1.img"))
	require.NoError(t, err)
	require.Equal(t, want, got, "the mirror holds the same bytes")

	close(stall)
	v.mu.Lock()
	v.conn.Close() // the next connection goes to a mirror that never answers
	v.mu.Unlock()
	require.ErrorIs(t, v.write(0, []byte("x")), errStuck)
	require.False(t, v.isLive())
	start := time.Now()
	require.False(t, v.connect(context.Background(), "a2"), "a full copy to a silent mirror fails")
	require.Less(t, time.Since(start), time.Duration(CopyFactor+1)*s.MirrorTimeout.D())
	require.ErrorIs(t, v.write(0, []byte("x")), errStuck)
	require.Equal(t, int64(1), n.blocked.Load())
}
