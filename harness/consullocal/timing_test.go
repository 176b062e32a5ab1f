package consullocal

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTimings measures how long clusters take to be healthy and to close:
// CONSULLOCAL_TIMINGS=<rounds> go test -run TestTimings -v ./harness/consullocal/
// ($CONSULLOCAL_ARGS: extra agent flags, space-separated;
// $CONSULLOCAL_LOGDIR: keep the nodes' logs there).
func TestTimings(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("CONSULLOCAL_TIMINGS"))
	if rounds <= 0 {
		t.Skip("set CONSULLOCAL_TIMINGS=<rounds> to measure start-up times")
	}
	bin := consulBinary(t)
	extra := strings.Fields(os.Getenv("CONSULLOCAL_ARGS"))
	for _, shape := range [][2]int{{1, 2}, {3, 2}} {
		var starts, closes []time.Duration
		for r := range rounds {
			logDir := os.Getenv("CONSULLOCAL_LOGDIR")
			logsFor := func(string) io.Writer { return nil }
			if logDir != "" {
				d := filepath.Join(logDir, strconv.Itoa(shape[0])+"s"+strconv.Itoa(shape[1])+"a-"+strconv.Itoa(r))
				os.MkdirAll(d, 0o755)
				logsFor = func(n string) io.Writer {
					f, err := os.Create(filepath.Join(d, n+".log"))
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { f.Close() })
					return f
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			began := time.Now()
			c, err := Start(ctx, Options{Servers: shape[0], Agents: shape[1], Binary: bin, ExtraArgs: extra, Logs: logsFor})
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			starts = append(starts, time.Since(began))
			began = time.Now()
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			closes = append(closes, time.Since(began))
		}
		t.Logf("%d servers + %d agents, %v: healthy in %s; Close %s", shape[0], shape[1], extra, stats(starts), stats(closes))
	}
}

func stats(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	r := func(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }
	return "min " + r(s[0]).String() + " median " + r(s[len(s)/2]).String() + " max " + r(s[len(s)-1]).String() + " mean " + r(sum/time.Duration(len(s))).String()
}
