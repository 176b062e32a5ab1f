package zkmirror

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/lab"
)

func TestFormatParseDataRoundTrip(t *testing.T) {
	cases := []struct {
		seq  int64
		idx  int
		size int
	}{
		{0, -1, 0},
		{0, 0, 1024},
		{1, 0, 1024},
		{41, 40, 1024},
		{123456789, 119, 64},
		{7, -1, 256},
		{1 << 62, 1 << 30, 0},
	}
	for _, c := range cases {
		b := FormatData(c.seq, c.idx, c.size)
		seq, idx := ParseData(b)
		assert.Equal(t, c.seq, seq, "seq of %+v", c)
		assert.Equal(t, c.idx, idx, "idx of %+v", c)
	}
}

func TestFormatDataPadsToSize(t *testing.T) {
	b := FormatData(5, 3, 1024)
	require.Len(t, b, 1024)
	head := "seq=5 idx=3\n"
	assert.Equal(t, head, string(b[:len(head)]))
	assert.Equal(t, strings.Repeat("x", 1024-len(head)), string(b[len(head):]))

	// Exactly the header's length: no padding.
	b = FormatData(5, 3, len(head))
	assert.Equal(t, head, string(b))
}

func TestFormatDataHeaderLongerThanSize(t *testing.T) {
	// The header is never cut: a size below it gives the header alone.
	for _, size := range []int{0, 1, 5, 12} {
		b := FormatData(98765, 42, size)
		assert.Equal(t, "seq=98765 idx=42\n", string(b), "size %d", size)
		seq, idx := ParseData(b)
		assert.Equal(t, int64(98765), seq)
		assert.Equal(t, 42, idx)
	}
	b := FormatData(0, -1, 0)
	assert.Equal(t, "seq=0 idx=-1\n", string(b))
}

func TestParseDataForeignContent(t *testing.T) {
	// Data the harness did not write: no sequence, not hot.
	for _, b := range [][]byte{nil, {}, []byte("hello"), []byte("{\"json\":1}"), []byte("idx=oops seq=nope\n")} {
		seq, idx := ParseData(b)
		assert.Equal(t, int64(0), seq, "%q", b)
		assert.Equal(t, -1, idx, "%q", b)
	}
	// Only the first line counts.
	seq, idx := ParseData([]byte("seq=3\nidx=9\n"))
	assert.Equal(t, int64(3), seq)
	assert.Equal(t, -1, idx)
	// Field order does not matter.
	seq, idx = ParseData([]byte("idx=4 seq=17\nxxxx"))
	assert.Equal(t, int64(17), seq)
	assert.Equal(t, 4, idx)
}

func TestNextWrite(t *testing.T) {
	const hot = 120
	// A znode still holding its seeded data gets write idx+1 first.
	assert.Equal(t, int64(1), NextWrite(0, 0, hot))
	assert.Equal(t, int64(41), NextWrite(0, 40, hot))
	assert.Equal(t, int64(120), NextWrite(0, 119, hot))
	// After that, every hot-count writes.
	assert.Equal(t, int64(121), NextWrite(1, 0, hot))
	assert.Equal(t, int64(161), NextWrite(41, 40, hot))
	assert.Equal(t, int64(240), NextWrite(120, 119, hot))
	assert.Equal(t, int64(1000+hot), NextWrite(1000, 0, hot))
	// A single hot znode gets every write.
	assert.Equal(t, int64(1), NextWrite(0, 0, 1))
	assert.Equal(t, int64(8), NextWrite(7, 0, 1))
}

func TestNextWriteFollowsTheWritersRoundRobin(t *testing.T) {
	// The write after s to the same znode is the next s' > s with the same
	// (s'-1) % H, for every s and H.
	for _, h := range []int{1, 2, 3, 7, 120} {
		for s := int64(1); s <= 500; s++ {
			idx := int((s - 1) % int64(h))
			want := s + 1
			for int((want-1)%int64(h)) != idx {
				want++
			}
			require.Equal(t, want, NextWrite(s, idx, h), "held %d idx %d H %d", s, idx, h)
		}
	}
}

func testLog(t0 time.Time, n int, every time.Duration) []Write {
	log := make([]Write, n)
	for i := range log {
		log[i] = Write{Seq: int64(i + 1), Path: fmt.Sprintf("/hot/%d", i%4), At: t0.Add(time.Duration(i+1) * every)}
	}
	return log
}

func TestStaleness(t *testing.T) {
	t0 := time.Date(2019, 1, 18, 9, 9, 0, 0, time.UTC)
	log := testLog(t0, 10, time.Second) // write s acknowledged at t0+s

	// Before any write: nothing to miss.
	assert.Equal(t, time.Duration(0), Staleness(nil, 1, t0.Add(time.Hour)))
	assert.Equal(t, time.Duration(0), Staleness([]Write{}, 1, t0))

	// The mirror's next write has not happened yet: it misses nothing.
	assert.Equal(t, time.Duration(0), Staleness(log, 11, t0.Add(time.Hour)))
	assert.Equal(t, time.Duration(0), Staleness(log, 1000, t0.Add(time.Hour)))

	// Written: its age at t.
	assert.Equal(t, 5*time.Second, Staleness(log, 1, t0.Add(6*time.Second)))
	assert.Equal(t, 2500*time.Millisecond, Staleness(log, 4, t0.Add(6500*time.Millisecond)))
	assert.Equal(t, time.Duration(0), Staleness(log, 4, t0.Add(4*time.Second)), "acknowledged at t exactly")
	assert.Equal(t, 90*time.Second, Staleness(log, 10, t0.Add(100*time.Second)))

	// Written after t (a sample taken before the write's acknowledgement
	// was logged): not stale yet.
	assert.Equal(t, time.Duration(0), Staleness(log, 4, t0.Add(3*time.Second)))

	// next < 1 is not a write.
	assert.Equal(t, time.Duration(0), Staleness(log, 0, t0.Add(time.Hour)))
	assert.Equal(t, time.Duration(0), Staleness(log, -3, t0.Add(time.Hour)))
}

func TestTreePaths(t *testing.T) {
	tr := Tree{Root: "/chaoslab/deployments", Fanout: []int{3, 2, 4}}
	ps := tr.Paths()
	require.Len(t, ps, 3+3*2+3*2*4)
	assert.Equal(t, "/chaoslab/deployments/n0-0000", ps[0])
	assert.Equal(t, "/chaoslab/deployments/n0-0002", ps[2])
	assert.Equal(t, "/chaoslab/deployments/n0-0000/n1-0000", ps[3])
	assert.Equal(t, "/chaoslab/deployments/n0-0002/n1-0001/n2-0003", ps[len(ps)-1])

	seen := map[string]int{}
	for i, p := range ps {
		_, dup := seen[p]
		require.False(t, dup, "duplicate %s", p)
		seen[p] = i
		require.True(t, strings.HasPrefix(p, tr.Root+"/"), p)
		// Parents before children.
		parent := p[:strings.LastIndex(p, "/")]
		if parent != tr.Root {
			pi, ok := seen[parent]
			require.True(t, ok, "parent of %s not listed before it", p)
			assert.Less(t, pi, i)
		}
	}
	// Levels in order: depth never decreases.
	depth := func(p string) int { return strings.Count(strings.TrimPrefix(p, tr.Root), "/") }
	for i := 1; i < len(ps); i++ {
		assert.LessOrEqual(t, depth(ps[i-1]), depth(ps[i]))
	}
}

func TestTreePathsCount(t *testing.T) {
	for _, fan := range [][]int{{1}, {5}, {30, 200}, {10, 100, 10}, {2, 2, 2, 2, 2}, {4, 0}} {
		tr := Tree{Root: "/r", Fanout: fan}
		want, level := 0, 1
		for _, f := range fan {
			level *= f
			want += level
		}
		assert.Len(t, tr.Paths(), want, "fanout %v", fan)
	}
	// The IL-0587 tree: 30 + 30*200.
	assert.Len(t, Tree{Root: "/chaoslab/deployments", Fanout: []int{30, 200}}.Paths(), 6030)
}

func TestTreeLeaves(t *testing.T) {
	tr := Tree{Root: "/r", Fanout: []int{3, 4}}
	ls := tr.Leaves()
	require.Len(t, ls, 12)
	for _, l := range ls {
		assert.Equal(t, 2, strings.Count(strings.TrimPrefix(l, "/r"), "/"), l)
	}
	assert.Equal(t, "/r/n0-0000/n1-0000", ls[0])
	assert.Equal(t, "/r/n0-0002/n1-0003", ls[11])

	one := Tree{Root: "/r", Fanout: []int{5}}
	assert.Equal(t, one.Paths(), one.Leaves())

	assert.Len(t, Tree{Root: "/r", Fanout: []int{30, 200}}.Leaves(), 6000)
}

func TestHotSetSize(t *testing.T) {
	il0587 := Tree{Root: "/chaoslab/deployments", Fanout: []int{30, 200}}
	cases := []struct {
		tree  Tree
		share float64
		want  int
	}{
		{il0587, 0.02, 120},
		{il0587, 1, 6000},
		{il0587, 0, 0},
		{Tree{Root: "/r", Fanout: []int{10}}, 0.25, 3},  // 2.5 rounds up
		{Tree{Root: "/r", Fanout: []int{10}}, 0.24, 2},  // 2.4 rounds down
		{Tree{Root: "/r", Fanout: []int{10}}, 0.01, 1},  // at least one when share > 0
		{Tree{Root: "/r", Fanout: []int{10}}, 0.049, 1}, // 0.49 would round to 0
		{Tree{Root: "/r", Fanout: []int{2, 50}}, 0.1, 10},
	}
	for _, c := range cases {
		assert.Len(t, HotSet(c.tree, c.share, 1), c.want, "share %v of %v", c.share, c.tree.Fanout)
	}
}

func TestHotSetSortedSubsetOfLeaves(t *testing.T) {
	tr := Tree{Root: "/chaoslab/deployments", Fanout: []int{30, 200}}
	leaves := map[string]bool{}
	for _, l := range tr.Leaves() {
		leaves[l] = true
	}
	for _, seed := range []uint64{0, 1, 42, 7919} {
		hot := HotSet(tr, 0.02, seed)
		require.Len(t, hot, 120)
		assert.True(t, slices.IsSorted(hot), "seed %d", seed)
		seen := map[string]bool{}
		for _, h := range hot {
			assert.True(t, leaves[h], "%s is not a leaf", h)
			assert.False(t, seen[h], "%s picked twice", h)
			seen[h] = true
		}
	}
}

func TestHotSetDeterministic(t *testing.T) {
	tr := Tree{Root: "/chaoslab/deployments", Fanout: []int{30, 200}}
	a := HotSet(tr, 0.02, 42)
	assert.Equal(t, a, HotSet(tr, 0.02, 42), "same seed, same hot set")
	b := HotSet(tr, 0.02, 43)
	assert.NotEqual(t, a, b, "another seed, another hot set")
	// The whole tree is hot whatever the seed.
	assert.Equal(t, tr.Leaves(), HotSet(tr, 1, 42))
	assert.Equal(t, tr.Leaves(), HotSet(tr, 1, 43))
}

// heldAfter is what hot znode idx holds once the mirror has applied every
// write up to and including applied: the last write to it, or 0 (seeded).
func heldAfter(applied int64, idx, h int) int64 {
	var held int64
	for s := int64(1); s <= applied; s++ {
		if int((s-1)%int64(h)) == idx {
			held = s
		}
	}
	return held
}

// mirrorNext is what Mirror.sample reports as NextSeq for a mirror that
// knows every hot znode.
func mirrorNext(held []int64) int64 {
	next := int64(-1)
	for idx, s := range held {
		n := NextWrite(s, idx, len(held))
		if next < 0 || n < next {
			next = n
		}
	}
	return next
}

func TestNextWriteGivesTheFirstUnappliedWrite(t *testing.T) {
	// A mirror that applied the writer's writes 1..k in order: the minimum
	// over the hot znodes of NextWrite is k+1.
	for _, h := range []int{1, 2, 5, 120} {
		for k := int64(0); k <= 3*int64(h)+7; k++ {
			held := make([]int64, h)
			for idx := range held {
				held[idx] = heldAfter(k, idx, h)
			}
			require.Equal(t, k+1, mirrorNext(held), "H %d applied %d", h, k)
		}
	}
}

func TestNextWriteGivesTheFirstUnappliedWriteOutOfOrder(t *testing.T) {
	// Watches fire per znode, so a mirror can be behind on some hot znodes
	// and current on others. The first write it misses is the smallest s
	// whose znode holds something older than s.
	r := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 500; round++ {
		h := 1 + r.IntN(12)
		total := int64(r.IntN(80))
		held := make([]int64, h)
		for idx := range held {
			held[idx] = heldAfter(int64(r.IntN(int(total)+1)), idx, h)
		}
		first := int64(1)
		for {
			idx := int((first - 1) % int64(h))
			if held[idx] < first {
				break
			}
			first++
		}
		require.Equal(t, first, mirrorNext(held), "H %d held %v", h, held)
	}
}

func TestStalenessOfARoundRobinMirror(t *testing.T) {
	// Writer: 4 hot znodes, a write every 100ms; the mirror applied writes
	// 1..k. Its staleness at t is the age of write k+1, or 0 if that write
	// has not been acknowledged by t.
	const h = 4
	t0 := time.Date(2019, 1, 18, 9, 0, 0, 0, time.UTC)
	log := testLog(t0, 40, 100*time.Millisecond)
	for i, w := range log {
		require.Equal(t, fmt.Sprintf("/hot/%d", i%h), w.Path)
	}
	now := t0.Add(4 * time.Second) // every write is acknowledged
	for k := int64(0); k <= 40; k++ {
		held := make([]int64, h)
		for idx := range held {
			held[idx] = heldAfter(k, idx, h)
		}
		next := mirrorNext(held)
		want := time.Duration(0)
		if k < 40 {
			want = now.Sub(t0.Add(time.Duration(k+1) * 100 * time.Millisecond))
		}
		assert.Equal(t, want, Staleness(log, next, now), "applied %d", k)
	}
}

func TestWriterLogIsACopy(t *testing.T) {
	var w Writer
	assert.Empty(t, w.Log())
	w.log = testLog(time.Unix(0, 0), 3, time.Second)
	got := w.Log()
	require.Len(t, got, 3)
	got[0].Seq = 99
	assert.Equal(t, int64(1), w.Log()[0].Seq, "the caller's copy does not alias the writer's log")
}

func TestPacedReReadWaitsForASlot(t *testing.T) {
	// A paced mirror whose 2 slots are taken: a third re-read after a watch
	// event waits, counted as queued, and sends nothing; it gives up when
	// the mirror stops.
	ctx, cancel := context.WithCancel(context.Background())
	m := &Mirror{ctx: ctx}
	m.setStrategy(Paced, 2)
	slots := m.strategy().slots
	slots <- struct{}{}
	slots <- struct{}{}
	done := make(chan error, 1)
	go func() { _, err := m.readInWindow("/chaoslab/x", opData); done <- err }()
	require.Eventually(t, func() bool { return m.queued.Load() == 1 }, 2*time.Second, time.Millisecond)
	assert.Zero(t, m.inflight.Load(), "nothing in flight while waiting for a slot")
	select {
	case err := <-done:
		t.Fatalf("read returned while the window was full: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	assert.Zero(t, m.queued.Load())
	assert.Len(t, slots, 2, "a read that gave up holds no slot")
}

// Ballast: the count rounded up to whole thousands, at most 1000 children
// of a znode, beside the mirrored tree; none for 0.
func TestBallastTree(t *testing.T) {
	require.Zero(t, BallastTree("/a/b", 0).Nodes())
	require.Empty(t, BallastTree("/a/b", -1).Paths())
	small := BallastTree("/a/b", 300)
	require.Equal(t, "/a/b-ballast", small.Root)
	require.Equal(t, 300, small.Nodes())
	big := BallastTree("/a/b", 80500)
	require.Equal(t, []int{81, 1000}, big.Fanout)
	require.Equal(t, 81+81000, big.Nodes())
	require.Equal(t, BallastBytes, big.DataBytes)

	s := NewSettings()
	s.Ballast = MaxBallast + 1
	require.Contains(t, fmt.Sprint(s.Check()), "ballast")
	s.Ballast = 80000
	require.Empty(t, s.Check())
	require.Empty(t, s.CheckTopology(heap(512)), "80,000 ballast znodes fit half of 512 MiB")
	require.Contains(t, fmt.Sprint(s.CheckTopology(heap(32))), "ballast")
}

type heap int

func (h heap) ServerHeapMB() int  { return int(h) }
func (heap) Check() []lab.Problem { return nil }
