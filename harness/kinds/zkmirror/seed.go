package zkmirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Tree is the shape of the seeded subtree: Fanout[i] children at depth i+1,
// each znode holding DataBytes bytes.
type Tree struct {
	// Root is the absolute znode path of the subtree's root.
	Root string `yaml:"path" json:"path"`
	// Fanout gives the children per node at each depth: [30, 200] is 30
	// children of the root with 200 children each.
	Fanout []int `yaml:"fanout" json:"fanout"`
	// DataBytes is the size of each znode's data, in bytes.
	DataBytes int `yaml:"data_bytes" json:"data_bytes"`
}

// Nodes is the number of znodes below (not counting) the root, at most
// math.MaxInt32 (a tree that big is refused anyway).
func (t Tree) Nodes() int {
	n, level := 0, 1
	for _, f := range t.Fanout {
		switch {
		case f <= 0:
			level = 0
		case level > math.MaxInt32/f:
			level = math.MaxInt32
		default:
			level *= f
		}
		n = min(n+level, math.MaxInt32)
	}
	return n
}

// Paths lists every znode below the root, parents before children.
func (t Tree) Paths() []string {
	var out []string
	level := []string{t.Root}
	for d, f := range t.Fanout {
		var next []string
		for _, p := range level {
			for i := 0; i < f; i++ {
				next = append(next, path.Join(p, fmt.Sprintf("n%d-%04d", d, i)))
			}
		}
		out = append(out, next...)
		level = next
	}
	return out
}

// Leaves lists the znodes at the deepest level.
func (t Tree) Leaves() []string {
	if len(t.Fanout) == 0 {
		return nil
	}
	all := t.Paths()
	n := 1
	for _, f := range t.Fanout {
		n *= f
	}
	return all[len(all)-n:]
}

// BallastBytes is the data of each ballast znode.
const BallastBytes = 64

// BallastTree is the tree of n ballast znodes beside root (none for n <=
// 0): up to 1000 under each of ceil(n/1000) parents, so that a
// getChildren of one stays small.
func BallastTree(root string, n int) Tree {
	if n <= 0 {
		return Tree{Root: root + "-ballast"}
	}
	if n <= 1000 {
		return Tree{Root: root + "-ballast", Fanout: []int{n}, DataBytes: BallastBytes}
	}
	return Tree{Root: root + "-ballast", Fanout: []int{(n + 999) / 1000, 1000}, DataBytes: BallastBytes}
}

// HotSet picks the hot leaves (share of them, at least one when share > 0)
// with the run's seed, sorted so the writer's round robin is reproducible.
func HotSet(t Tree, share float64, seed uint64) []string {
	leaves := t.Leaves()
	share = min(max(share, 0), 1)
	n := int(float64(len(leaves))*share + 0.5)
	if share > 0 && n == 0 && len(leaves) > 0 {
		n = 1
	}
	r := rand.New(rand.NewPCG(seed, 0x407))
	idx := r.Perm(len(leaves))[:n]
	sort.Ints(idx)
	out := make([]string, n)
	for i, j := range idx {
		out[i] = leaves[j]
	}
	return out
}

// Seed creates the tree (removing an earlier one), with hot znodes marked.
func Seed(ctx context.Context, conn *zk.Conn, t Tree, hot []string, logger *slog.Logger) error {
	if err := deleteTree(ctx, conn, t.Root); err != nil {
		return fmt.Errorf("seed tree: %w", err)
	}
	// Parents of the root.
	parts := strings.Split(strings.Trim(t.Root, "/"), "/")
	for i := range parts {
		p := "/" + strings.Join(parts[:i+1], "/")
		if _, err := conn.Create(p, FormatData(0, -1, 0), 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("seed tree: create %s: %w", p, err)
		}
	}
	hotIdx := map[string]int{}
	for i, h := range hot {
		hotIdx[h] = i
	}
	all := t.Paths()
	start := time.Now()
	// Create level by level, with a bounded number of creates in flight.
	for depth := range t.Fanout {
		var level []string
		for _, p := range all {
			if strings.Count(strings.TrimPrefix(p, t.Root), "/") == depth+1 {
				level = append(level, p)
			}
		}
		if err := createAll(ctx, conn, level, func(p string) []byte {
			idx, ok := hotIdx[p]
			if !ok {
				idx = -1
			}
			return FormatData(0, idx, t.DataBytes)
		}); err != nil {
			return fmt.Errorf("seed tree: %w", err)
		}
	}
	logger.Info("seeded tree", "root", t.Root, "znodes", len(all), "hot", len(hot), "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// createBatch is how many creates go in one multi-op: one transaction, one
// fsync of the ensemble's log, for up to ~400 KiB of 1 KiB znodes (under
// jute.maxbuffer, 1 MiB).
const createBatch = 400

// createAll creates the znodes of one level in multi-op batches, a few at
// a time: a transaction per znode made seeding the 6,000 of IL-0587 take
// seconds of every variant's setup.
func createAll(ctx context.Context, conn *zk.Conn, paths []string, data func(string) []byte) error {
	var batches [][]string
	n := createBatch
	if len(paths) > 0 {
		// A multi-op is one request: it must fit jute.maxbuffer.
		n = max(1, min(n, JuteMaxBuffer/2/(len(data(paths[0]))+len(paths[0])+64)))
	}
	for i := 0; i < len(paths); i += n {
		batches = append(batches, paths[i:min(i+n, len(paths))])
	}
	return parallel(ctx, batches, 8, func(b []string) error {
		var ops []any
		for _, p := range b {
			ops = append(ops, &zk.CreateRequest{Path: p, Data: data(p), Acl: zk.WorldACL(zk.PermAll)})
		}
		_, err := conn.Multi(ops...)
		return err
	})
}

func deleteTree(ctx context.Context, conn *zk.Conn, root string) error {
	children, _, err := conn.Children(root)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := parallel(ctx, children, 32, func(c string) error {
		return deleteTree(ctx, conn, path.Join(root, c))
	}); err != nil {
		return err
	}
	if err := conn.Delete(root, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("delete %s: %w", root, err)
	}
	return nil
}

func parallel[T any](ctx context.Context, items []T, n int, f func(T) error) error {
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for _, it := range items {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := f(it); err != nil {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("%v: %w", it, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// Write is one acknowledged write of the background writer.
type Write struct {
	Seq  int64
	Path string
	At   time.Time
}

// Writer changes the hot znodes round robin at a steady rate: write number
// seq goes to hot[(seq-1) % len(hot)]. Writes that fail are retried with the
// same sequence, so the log holds only acknowledged writes.
type Writer struct {
	Conn      *zk.Conn
	Hot       []string
	Rate      float64
	DataBytes int

	mu  sync.Mutex
	log []Write
}

// Run writes until ctx ends.
func (w *Writer) Run(ctx context.Context) {
	if w.Rate <= 0 || len(w.Hot) == 0 {
		return
	}
	interval := time.Duration(float64(time.Second) / w.Rate)
	next := time.Now()
	for seq := int64(1); ctx.Err() == nil; {
		idx := int((seq - 1) % int64(len(w.Hot)))
		p := w.Hot[idx]
		if _, err := w.Conn.Set(p, FormatData(seq, idx, w.DataBytes), -1); err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		w.mu.Lock()
		w.log = append(w.log, Write{Seq: seq, Path: p, At: time.Now()})
		w.mu.Unlock()
		seq++
		next = next.Add(interval)
		if d := time.Until(next); d > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
		} else {
			next = time.Now()
		}
	}
}

// Log returns the acknowledged writes so far.
func (w *Writer) Log() []Write {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Write(nil), w.log...)
}

// Staleness of a mirror whose first unseen write is number next, at time
// t, given the writer's log: how long ago that write was acknowledged (0
// when it has not happened yet, so the mirror misses nothing).
func Staleness(log []Write, next int64, t time.Time) time.Duration {
	// log[i].Seq == i+1.
	if next < 1 || next > int64(len(log)) {
		return 0
	}
	at := log[next-1].At
	if at.After(t) {
		return 0
	}
	return t.Sub(at)
}
