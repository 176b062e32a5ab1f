package runner

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// The expected end of a variant is never before now: a warm-up waiting
// for a steady workload, or a teardown slower than planned, moves it
// later, and the schedule says by how much.
func TestScheduleNeverOverruns(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := schedule{t0: t0, length: 80 * time.Second, warm: 35 * time.Second, setup: 10 * time.Second, tail: 5 * time.Second}
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	require.Equal(t, at(95*time.Second), s.expectedEnd(at(time.Second)), "setup as guessed")
	require.Equal(t, at(100*time.Second), s.expectedEnd(at(15*time.Second)), "setup slower than guessed")
	work := at(8 * time.Second)
	s.work, s.first = work, work.Add(85*time.Second)
	require.Equal(t, at(93*time.Second), s.expectedEnd(at(20*time.Second)))
	late := s.expectedEnd(at(50 * time.Second))
	require.Equal(t, at(100*time.Second), late, "warm-up still waiting 7 s after its end")
	require.Equal(t, 7*time.Second, s.late(late))
	s.end = at(95 * time.Second)
	require.Equal(t, at(100*time.Second), s.expectedEnd(at(60*time.Second)))
	require.Equal(t, at(106*time.Second), s.expectedEnd(at(101*time.Second)), "health checks ran past the end")
	s.done = at(96 * time.Second)
	for _, now := range []time.Duration{97 * time.Second, 100 * time.Second, 130 * time.Second} {
		require.True(t, s.expectedEnd(at(now)).After(at(now)), "at %s", now)
	}
}

// The leader shown is a stable reading: the same single leader in the
// last two rounds, "electing" otherwise (two members answering as leader
// after a paused one resumes, or none).
func TestLeaderStable(t *testing.T) {
	r := func(roles ...string) []lab.MemberSample {
		var out []lab.MemberSample
		for i, role := range roles {
			out = append(out, lab.MemberSample{Member: []string{"zk1", "zk2", "zk3"}[i], OK: role != "", Role: role})
		}
		return out
	}
	s := &sampler{}
	require.Equal(t, "", s.leader(), "not sampled yet")
	s.rounds = [][]lab.MemberSample{r("follower", "leader", "follower"), r("follower", "leader", "follower")}
	require.Equal(t, "zk2", s.leader())
	s.rounds = append(s.rounds, r("leader", "leader", "follower"))
	require.Equal(t, "electing", s.leader(), "two leaders")
	s.rounds = append(s.rounds, r("", "leader", "follower"))
	require.Equal(t, "electing", s.leader(), "one round is not a stable reading")
	s.rounds = append(s.rounds, r("follower", "leader", "follower"))
	require.Equal(t, "zk2", s.leader())
	s.rounds = append(s.rounds, r("", "", "follower"))
	require.Equal(t, "electing", s.leader(), "no leader answers")
}
