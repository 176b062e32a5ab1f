package journal_test

import (
	"context"
	"errors"
	"math"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/infra/docker"
	"github.com/chaoslab/chaoslab/harness/journal"
	"github.com/chaoslab/chaoslab/harness/labtest"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/verdict"
)

// killAfter is how long into the fault the controller is killed.
const killAfter = 4 * time.Second

// TestIntegration_KilledControllerLocal: `chaoslab run` on processes is
// killed with SIGKILL mid-fault; `chaoslab report DIR` gives a report
// marked aborted with the samples up to the kill, and the next run's
// sweep leaves no process, no cgroup of the run.
func TestIntegration_KilledControllerLocal(t *testing.T) {
	labtest.SkipUnlessZooKeeper(t)
	killMidFault(t, "local")
}

// TestIntegration_KilledControllerDocker: the same on containers; nothing
// is left: no container, no network of the run.
func TestIntegration_KilledControllerDocker(t *testing.T) {
	labtest.SkipUnlessZooKeeper(t)
	if err := docker.Available(context.Background()); err != nil {
		t.Skipf("no Docker engine: %v", err)
	}
	for _, img := range []string{"chaoslab/zookeeper:3.8.0-deb12", "chaoslab/chaoslab:dev"} {
		if err := exec.Command("docker", "image", "inspect", img).Run(); err != nil {
			t.Skipf("no image %s here: run `chaoslab images build`", img)
		}
	}
	killMidFault(t, "docker")
}

func killMidFault(t *testing.T, placement string) {
	began := time.Now()
	bin, err := labtest.ChaoslabBinary()
	require.NoError(t, err)
	out := t.TempDir()
	cmd := exec.Command(bin, "run", "testdata/kill-mid-fault.yaml", "--placement", placement, "--seed", "1", "--out", out)
	cmd.Stdout, cmd.Stderr = labtest.Writer{T: t}, labtest.Writer{T: t}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	dir, faultAt := waitForFault(t, out, 90*time.Second)
	time.Sleep(killAfter)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	_ = cmd.Wait()
	t.Logf("controller killed %.1fs after the fault began (%.1fs into the test)", killed.Sub(faultAt).Seconds(), killed.Sub(began).Seconds())

	rep := reportOf(t, bin, dir)
	require.Equal(t, verdict.Aborted, rep.Verdict)
	require.Contains(t, rep.Reason, "the controller died")
	v := rep.Variant("vulnerable")
	require.NotNil(t, v)
	require.Equal(t, verdict.Aborted, v.Verdict)
	require.NotEmpty(t, v.Faults, "the fault's start is on the timeline")
	killT := killed.Sub(v.StartedAt).Seconds()
	last := lastSample(v, "server.")
	t.Logf("last server sample at %.1fs, kill at %.1fs of the variant's clock", last, killT)
	require.Greater(t, last, killT-2.5, "the samples go up to the kill (the sampler ticks every second)")
	require.LessOrEqual(t, last, killT+0.5)
	clients := lastSample(v, "client.pending")
	t.Logf("last client sample at %.1fs", clients)
	require.Greater(t, clients, killT-3.5, "the clients' own samples too (they report every second)")

	run, err := journal.Load(dir)
	require.NoError(t, err)
	left := leftovers(t, run)
	t.Logf("left by the killed controller before the sweep: %s", strings.Join(left, "; "))

	done, err := journal.Sweep(context.Background(), out, labLog(t))
	require.NoError(t, err)
	require.Equal(t, []string{dir}, done)
	require.Empty(t, leftovers(t, run), "nothing of the run is left after the sweep")
	labtest.NoProcessNaming(t, dir)
	t.Logf("whole test: %.1fs", time.Since(began).Seconds())
}

// waitForFault waits until the run's journal says the fault began; it
// returns the run folder.
func waitForFault(t *testing.T, out string, within time.Duration) (string, time.Time) {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		dirs, _ := filepath.Glob(filepath.Join(out, "*", journal.File))
		if len(dirs) == 1 {
			recs, _ := journal.Read(filepath.Dir(dirs[0]))
			for _, r := range recs {
				if r.Kind == journal.KindEvent && r.Event.Kind == "fault" {
					return filepath.Dir(dirs[0]), r.Wall
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no fault within %s", within)
	return "", time.Time{}
}

// reportOf runs `chaoslab report DIR`: exit 1 (an aborted run did not
// meet its expectation), the report rebuilt from the journal.
func reportOf(t *testing.T, bin, dir string) *reports.Report {
	cmd := exec.Command(bin, "report", dir)
	b, err := cmd.CombinedOutput()
	t.Logf("chaoslab report:\n%s", b)
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee) && ee.ExitCode() == 1, "exit 1 for an aborted run: %v", err)
	require.Contains(t, string(b), "report rebuilt from the run's journal")
	rep, err := reports.Load(dir)
	require.NoError(t, err)
	return rep
}

// lastSample is the time of the last value of the series named prefix*.
func lastSample(v *reports.VariantResult, prefix string) float64 {
	last := math.Inf(-1)
	for _, s := range v.Series {
		if strings.HasPrefix(s.Name, prefix) && len(s.Points) > 0 {
			last = math.Max(last, s.Points[len(s.Points)-1].T)
		}
	}
	return last
}

// leftovers are what the journal names that still exists: programs
// (same pid and start time), cgroups of its run ids, containers and
// networks labelled with them.
func leftovers(t *testing.T, run *journal.Run) []string {
	var out []string
	var runIDs []string
	for _, r := range run.Records {
		switch {
		case r.Kind == journal.KindProc && r.Container == "" && journal.Same(r.Pid, r.Start, r.Boot):
			out = append(out, "process "+r.Name)
		case r.Kind == journal.KindSite:
			runIDs = append(runIDs, r.RunID)
		}
	}
	require.NotEmpty(t, runIDs)
	for _, id := range runIDs {
		v1, _ := filepath.Glob("/sys/fs/cgroup/*/chaoslab/" + id)
		v2, _ := filepath.Glob("/sys/fs/cgroup/chaoslab/" + id)
		for _, g := range append(v1, v2...) {
			out = append(out, "cgroup "+g)
		}
		out = append(out, engineLeftovers(t, id)...)
	}
	return out
}

// engineLeftovers are the containers and networks labelled with run id
// (none asked for where no engine answers).
func engineLeftovers(t *testing.T, id string) []string {
	ctx := context.Background()
	if docker.Available(ctx) != nil {
		return nil
	}
	cli, err := docker.Client(ctx)
	require.NoError(t, err)
	var out []string
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: docker.Filters(id)})
	require.NoError(t, err)
	for _, c := range cs.Items {
		out = append(out, "container "+strings.Join(c.Names, ","))
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: docker.Filters(id)})
	require.NoError(t, err)
	for _, n := range ns.Items {
		out = append(out, "network "+n.Name)
	}
	return out
}
