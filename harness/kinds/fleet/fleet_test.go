package fleet

import (
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// What the Go runtime prints when the OS refuses a thread, with and without
// cgo, is recognised even when the goroutine dump after it is long.
func TestThreadLimitMarks(t *testing.T) {
	for _, first := range []string{
		"runtime: failed to create new OS thread (have 40 already; errno=11)\nruntime: may need to increase max user processes (ulimit -u)\nfatal error: newosproc\n",
		"runtime/cgo: pthread_create failed: Resource temporarily unavailable\nSIGABRT: abort\n",
	} {
		tw := &tailWriter{w: io.Discard, max: 64}
		tw.Write([]byte("time=... level=INFO msg=\"peer learned\"\n"))
		tw.Write([]byte(first))
		tw.Write([]byte(strings.Repeat("goroutine 1 [running]:\nmain.main()\n", 200)))
		if !tw.marked() {
			t.Fatalf("not recognised: %q", first)
		}
		if !strings.HasPrefix(tw.mark, "runtime") {
			t.Fatalf("mark %q", tw.mark)
		}
		e := describeExit(lab.ProcExit{Code: 2}, tw.String(), "")
		if e.ThreadLimit {
			t.Fatal("the tail alone (after a long dump) should not carry the mark; the stream does")
		}
	}
	e := describeExit(lab.ProcExit{Code: 2}, "runtime: failed to create new OS thread (have 40 already; errno=11)\n", "")
	if !e.ThreadLimit || !strings.Contains(e.How, "failed to create new OS thread") {
		t.Fatalf("%+v", e)
	}
	e = describeExit(lab.ProcExit{Code: -1, Signal: "killed"}, "", "removed by the health check")
	if e.ThreadLimit || e.How != "removed by the health check" {
		t.Fatalf("%+v", e)
	}
}

// The spread of a restart counts each server's first start after it, and
// nothing before it.
func TestStartSpread(t *testing.T) {
	snaps := []Snapshot{
		{ID: "fe-01", StartTimes: []float64{1, 60.2, 90}},
		{ID: "fe-02", StartTimes: []float64{2, 61.5}},
		{ID: "fe-03", StartTimes: []float64{3}},
		{ID: "fe-04", StartTimes: []float64{4, 60.9}},
	}
	spread, n := startSpread(snaps, 60)
	require.Equal(t, 3, n)
	require.InDelta(t, 1.3, spread, 1e-9)
}

// refusingPids is a placement that cannot hold a program to a number of
// threads (the kubernetes placement).
type refusingPids struct{ lab.Placement }

func (refusingPids) Name() string { return "kubernetes" }
func (refusingPids) RefusesLimit(kind string) string {
	return map[string]string{"pids": "no pids here"}[kind]
}

// A fleet under a thread limit is refused before anything starts where
// the placement cannot hold each server to it.
func TestPreflightRefusesAThreadLimitThePlacementCannotHold(t *testing.T) {
	st := kind{}.NewSettings().(*Settings)
	err := kind{}.Preflight(refusingPids{}, st)
	require.ErrorContains(t, err, "thread_limit 40: no pids here")
	st.ThreadLimit = 0
	require.NoError(t, kind{}.Preflight(refusingPids{}, st))
}
