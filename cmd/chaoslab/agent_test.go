package main

import (
	"bytes"
	"context"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// A held agent says so, then runs once released with SIGUSR1; a held
// agent whose run ends first does not run.
func TestHoldUntilReleased(t *testing.T) {
	var out syncBuffer
	got := make(chan bool, 1)
	go func() { got <- holdUntilReleased(context.Background(), &out) }()
	require.Eventually(t, func() bool { return bytes.Contains(out.Bytes(), []byte(lab.HeldLine)) }, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, syscall.Kill(syscall.Getpid(), syscall.SIGUSR1))
	select {
	case ok := <-got:
		require.True(t, ok)
	case <-time.After(5 * time.Second):
		t.Fatal("not released by SIGUSR1")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.False(t, holdUntilReleased(ctx, &out))
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.b.Bytes()...)
}
