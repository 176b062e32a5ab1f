package runner

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/journal"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/verdict"
)

// TestRoundSeries: the journal's series of sample rounds are the
// report's: values per member, a gap only where a member reported before,
// and whether a leader answered.
func TestRoundSeries(t *testing.T) {
	units := map[string]string{"server.outstanding_requests": "requests", "ensemble.leaders": "elections"}
	st := newRoundState(units)
	rounds := [][]lab.MemberSample{
		{{T: 1, Member: "zk1", OK: true, Role: lab.RoleLeader, Values: map[string]float64{"server.outstanding_requests": 3}},
			{T: 1.1, Member: "zk2", OK: false}},
		{{T: 2, Member: "zk1", OK: false}, {T: 2.1, Member: "zk2", OK: true, Role: "follower", Values: map[string]float64{"server.outstanding_requests": 7}}},
	}
	got := roundSeries(rounds, st)
	by := map[[2]string][]lab.Point{}
	for _, s := range got {
		by[[2]string{s.Name, s.Source}] = s.Points
	}
	require.Equal(t, lab.Pt(1, 3), by[[2]string{"server.outstanding_requests", "zk1"}][0])
	require.True(t, math.IsNaN(float64(by[[2]string{"server.outstanding_requests", "zk1"}][1].V)), "zk1 did not answer: a gap")
	require.Equal(t, []lab.Point{lab.Pt(2.1, 7)}, by[[2]string{"server.outstanding_requests", "zk2"}], "no gap before zk2 ever answered")
	require.Equal(t, []lab.Point{lab.Pt(1, 1), lab.Pt(2, 0)}, by[[2]string{lab.SeriesLeader, "cluster"}])
	require.Equal(t, []lab.Point{lab.Pt(1, 1), lab.Pt(2, 0)}, by[[2]string{lab.SeriesQuorum, "cluster"}], "zk1 alone of the voters zk1 and zk2 (seen so far) is a majority; then zk2 alone is not")
	_, ok := by[[2]string{"ensemble.leaders", "zk1"}]
	require.False(t, ok, "no series a member never reported")

	next := roundSeries([][]lab.MemberSample{{{T: 3, Member: "zk2", OK: false}}}, st)
	require.Len(t, next, 3, "the gap of a later tick still knows what zk2 reported")
}

// TestRunSweepsDeadControllers: a run begins by finishing the folders
// under its --out whose controller died (here before anything of its own
// starts: it is refused), and leaves a live controller's folder alone.
func TestRunSweepsDeadControllers(t *testing.T) {
	scenarios.CaseChecker = nil
	s, err := scenarios.Find("il-0587-zk-treecache-reconnect-storm")
	require.NoError(t, err)
	out := t.TempDir()
	dead := exec.Command("true")
	require.NoError(t, dead.Start())
	deadStart, _ := journal.ProcStart(dead.Process.Pid)
	require.NoError(t, dead.Wait())
	me, err := journal.ProcStart(os.Getpid())
	require.NoError(t, err)
	head, err := json.Marshal(&reports.Report{Schema: reports.SchemaVersion, RunID: "x", Scenario: s.Info(), Spec: new(s.Spec()), Versions: map[string]string{}})
	require.NoError(t, err)
	mk := func(name string, pid int, start uint64) string {
		dir := filepath.Join(out, name)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		w, err := journal.Create(dir)
		require.NoError(t, err)
		w.Add(journal.Record{Kind: journal.KindHead, Pid: pid, Start: max(start, 1), Boot: journal.BootID(), Variants: []string{"vulnerable"}, Body: head}, true)
		require.NoError(t, w.Close())
		return dir
	}
	deadDir, liveDir := mk("dead", dead.Process.Pid, deadStart), mk("live", os.Getpid(), me)

	_, err = Run(context.Background(), s, Options{Placement: "docker", OutDir: out, Client: &lab.ClientProgram{Command: []string{"./my-client"}}})
	require.ErrorContains(t, err, "--client-image")
	r, err := reports.Load(deadDir)
	require.NoError(t, err, "the dead controller's folder has its report")
	require.Equal(t, verdict.Aborted, r.Verdict)
	_, err = os.Stat(filepath.Join(liveDir, "report.json"))
	require.ErrorIs(t, err, os.ErrNotExist, "a live controller's folder is left alone")
}

// TestQuorumSeries: a majority of the voters must serve; a member that
// answers but does not serve (syncing, in an election) or does not answer
// counts against it, and an observer neither way.
func TestQuorumSeries(t *testing.T) {
	m := func(name, role string) lab.MemberSample {
		return lab.MemberSample{T: 1, Member: name, OK: role != "down", Role: strings.TrimSuffix(role, "down")}
	}
	rounds := [][]lab.MemberSample{
		{m("zk1", "follower"), m("zk2", "follower"), m("zk3", "leader"), m("zk4", "observer")},
		{m("zk1", ""), m("zk2", "follower"), m("zk3", "leader"), m("zk4", "observer")},
		{m("zk1", ""), m("zk2", "down"), m("zk3", "leader"), m("zk4", "observer")},
		{m("zk1", "follower"), m("zk2", ""), m("zk3", ""), m("zk4", "observer")},
	}
	var got []float64
	for _, s := range roundSeries(rounds, newRoundState(nil)) {
		if s.Name == lab.SeriesQuorum {
			for _, p := range s.Points {
				got = append(got, float64(p.V))
			}
		}
	}
	require.Equal(t, []float64{1, 1, 0, 0}, got)
}
