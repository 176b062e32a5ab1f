package zookeeper

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// Connections asks every running member for its client connections
// (`cons`): each one's outstanding requests, packets received and sent.
func (c *cluster) Connections(ctx context.Context) []lab.ConnSample {
	ms := c.members
	per := make([][]lab.ConnSample, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		if !m.Running() || m.Paused() {
			continue
		}
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, 800*time.Millisecond)
			defer cancel()
			out, err := m.FourLetter(cctx, "cons")
			if err == nil {
				per[i] = parseCons(m.Name(), out)
			}
		})
	}
	wg.Wait()
	var all []lab.ConnSample
	for _, p := range per {
		all = append(all, p...)
	}
	return all
}

// consLine is one connection of `cons`:
//
//	/127.0.0.1:48378[1](queued=0,recved=12,sent=12,sid=0x1000...,lop=GETD,...)
var consLine = regexp.MustCompile(`^\s*/?(\S+?)\[\d+\]\((.*)\)\s*$`)

func parseCons(member, out string) []lab.ConnSample {
	var conns []lab.ConnSample
	for _, line := range strings.Split(out, "\n") {
		m := consLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		cs := lab.ConnSample{Member: member, Remote: m[1]}
		for _, kv := range strings.Split(m[2], ",") {
			k, v, _ := strings.Cut(kv, "=")
			x, _ := strconv.ParseFloat(v, 64)
			switch k {
			case "queued":
				cs.Outstanding = x
			case "recved":
				cs.Received = x
			case "sent":
				cs.Sent = x
			case "sid":
				cs.Session = v
			}
		}
		conns = append(conns, cs)
	}
	return conns
}
