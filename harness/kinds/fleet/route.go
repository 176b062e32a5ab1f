package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chaoslab/chaoslab/harness/kinds/fleet/frontend"
)

// A server's route is the port it prints on stdout once it listens
// (listening). The line is its only word where the harness reaches it,
// and on containers a line now and then never came (4 of ~1,200
// incarnations of IL-0384 on containers lacked their first line; none of
// ~1,900 on processes): the health check then found no address for a
// server that routed and removed it. So when the line has not come
// routeWait after the start, the harness reads the port from the
// server's registration in etcd, which chaoslab's own server writes with
// its incarnation, and says so on the timeline.
const routeWait = time.Second

// Registry reads a server's registration (what membership holds).
type Registry interface {
	Member(ctx context.Context, id string) (frontend.Member, bool, error)
}

// etcdRegistry reads the registrations under the fleet's prefix.
type etcdRegistry struct {
	cli    *clientv3.Client
	prefix string
}

func (r etcdRegistry) Member(ctx context.Context, id string) (frontend.Member, bool, error) {
	resp, err := r.cli.Get(ctx, frontend.MembersPrefix(r.prefix)+id)
	if err != nil || len(resp.Kvs) == 0 {
		return frontend.Member{}, false, err
	}
	var m frontend.Member
	if err := json.Unmarshal(resp.Kvs[0].Value, &m); err != nil {
		return frontend.Member{}, false, fmt.Errorf("read registration of %s: %w", id, err)
	}
	return m, true, nil
}

// learnRoute reads s's port from its registration when its printed line
// is late; it returns the route, "" when the registration is not its
// running incarnation's (not there yet, or an earlier one's).
func (f *Fleet) learnRoute(ctx context.Context, s *Server) string {
	s.mu.Lock()
	p, inc, since := s.proc, s.running, time.Since(s.started)
	s.mu.Unlock()
	if f.cfg.Registry == nil || f.cfg.Program != nil || p == nil || since < routeWait {
		return ""
	}
	m, ok, err := f.cfg.Registry.Member(ctx, s.ID)
	if err != nil || !ok || m.Incarnation != inc {
		return ""
	}
	_, port, err := net.SplitHostPort(m.Route)
	if err != nil {
		return ""
	}
	s.mu.Lock()
	if s.proc != p || s.port != "" {
		s.mu.Unlock()
		return s.Route()
	}
	s.port = port
	s.routesRead++
	s.mu.Unlock()
	f.event("note", s.ID, fmt.Sprintf("its route line had not arrived %.1fs after its start (incarnation %d); the harness read port %s from its registration in etcd", since.Seconds(), inc, port))
	return s.Route()
}
