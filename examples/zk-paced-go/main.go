// Command zk-paced is a ZooKeeper mirror that is gentle with the
// ensemble, as the action items of IL-0587 asked of Elastic's proxies
// (TreeWatcher), written against go-zookeeper/zk and nothing of chaoslab:
//
//   - a resumed session is not refreshed: the client library re-sets the
//     session's watches on the new connection (setWatches), and what
//     changed while it was away arrives as watch events;
//   - only a new session walks the tree, with at most window reads in
//     flight, so that the server sets the pace; a walk is abandoned when
//     its session is lost;
//   - the re-reads that watch events ask for go through a window of their own.
//
// It reads the environment chaoslab starts it with (CHAOSLAB_ZK_CONNECT,
// CHAOSLAB_TREE_ROOT, CHAOSLAB_SESSION_TIMEOUT_MS, CHAOSLAB_CLIENT_ID,
// CHAOSLAB_REPORT_INTERVAL_MS) and prints one JSON line per interval: its
// requests in flight, the znodes it holds, the highest write sequence it
// has seen (seq=N in a znode's data). -quiet prints nothing.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
)

const window = 8

type mirror struct {
	conn    *zk.Conn
	root    string
	walks   sync.Map // session id -> struct{}
	slots   chan struct{}
	rereads chan struct{}

	mu      sync.Mutex
	nodes   map[string]bool
	maxSeq  int64
	pending atomic.Int64
}

func main() {
	quiet := flag.Bool("quiet", os.Getenv("CHAOSLAB_EXAMPLE_QUIET") == "1", "print no samples")
	flag.Parse()
	env := func(k, def string) string {
		if v := os.Getenv(k); v != "" {
			return v
		}
		return def
	}
	ms := func(k, def string) time.Duration {
		n, _ := strconv.Atoi(env(k, def))
		return time.Duration(n) * time.Millisecond
	}
	m := &mirror{root: env("CHAOSLAB_TREE_ROOT", "/"), nodes: map[string]bool{},
		slots: make(chan struct{}, window), rereads: make(chan struct{}, window)}
	conn, events, err := zk.Connect(strings.Split(env("CHAOSLAB_ZK_CONNECT", "127.0.0.1:2181"), ","), ms("CHAOSLAB_SESSION_TIMEOUT_MS", "10000"),
		zk.WithLogger(log.New(os.Stderr, "", log.LstdFlags)))
	if err != nil {
		log.Fatal(err)
	}
	m.conn = conn
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go m.sessions(ctx, events)
	tick := time.NewTicker(ms("CHAOSLAB_REPORT_INTERVAL_MS", "1000"))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			conn.Close()
			return
		case <-tick.C:
		}
		if !*quiet {
			m.report(env("CHAOSLAB_CLIENT_ID", "paced"))
		}
	}
}

// sessions walks the tree once per new session; a resumed one keeps its
// watches and needs nothing.
func (m *mirror) sessions(ctx context.Context, events <-chan zk.Event) {
	for ev := range events {
		if ev.Type != zk.EventSession || ev.State != zk.StateHasSession {
			continue
		}
		sid := m.conn.SessionID()
		if _, seen := m.walks.LoadOrStore(sid, struct{}{}); !seen {
			go m.walk(ctx, sid)
		}
	}
}

// walk visits every znode with at most window reads in flight.
func (m *mirror) walk(ctx context.Context, sid int64) {
	todo := make(chan string, 1<<20)
	var wg sync.WaitGroup
	wg.Add(1)
	todo <- m.root
	go func() { wg.Wait(); close(todo) }()
	for i := 0; i < window; i++ {
		go func() {
			for p := range todo {
				if ctx.Err() == nil && m.conn.SessionID() == sid {
					for _, c := range m.read(p, m.slots, true) {
						wg.Add(1)
						todo <- path.Join(p, c)
					}
				}
				wg.Done()
			}
		}()
	}
}

// read reads a znode (and its children), watching both, within slots.
func (m *mirror) read(p string, slots chan struct{}, children bool) []string {
	slots <- struct{}{}
	m.pending.Add(1)
	defer func() { m.pending.Add(-1); <-slots }()
	data, _, ch, err := m.conn.GetW(p)
	if err != nil {
		return nil
	}
	m.saw(p, data)
	go m.watch(p, ch, false)
	if !children {
		return nil
	}
	kids, _, cch, err := m.conn.ChildrenW(p)
	if err != nil {
		return nil
	}
	go m.watch(p, cch, true)
	return kids
}

// watch re-reads a znode when its watch fires, which re-arms it.
func (m *mirror) watch(p string, ch <-chan zk.Event, children bool) {
	ev, ok := <-ch
	if !ok || ev.Type == zk.EventNotWatching {
		return // the session is gone: the next session's walk reads it
	}
	if children {
		kids, _, cch, err := m.conn.ChildrenW(p)
		if err == nil {
			go m.watch(p, cch, true)
			for _, c := range kids {
				if !m.has(path.Join(p, c)) {
					go m.read(path.Join(p, c), m.rereads, true)
				}
			}
		}
		return
	}
	m.read(p, m.rereads, false)
}

func (m *mirror) saw(p string, data []byte) {
	seq := int64(0)
	head, _, _ := strings.Cut(string(data[:min(len(data), 64)]), "\n")
	for _, f := range strings.Fields(head) {
		if v, ok := strings.CutPrefix(f, "seq="); ok {
			seq, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nodes[p] = true
	m.maxSeq = max(m.maxSeq, seq)
}

func (m *mirror) has(p string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.nodes[p]
}

func (m *mirror) report(id string) {
	m.mu.Lock()
	line := map[string]any{"t": time.Now().UnixMilli(), "id": id, "pending": m.pending.Load(),
		"nodes": len(m.nodes) - 1, "max_seq": m.maxSeq, "state": m.conn.State().String()}
	m.mu.Unlock()
	b, _ := json.Marshal(line)
	fmt.Println(string(b))
}
