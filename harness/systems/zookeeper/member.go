package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/servers"
	"github.com/chaoslab/chaoslab/harness/systems/zookeeper/zkcheck"
)

var (
	_ faults.Replacer      = (*member)(nil)
	_ faults.Gater         = (*member)(nil)
	_ faults.EventRecorder = (*member)(nil)
	_ InitLimiter          = (*member)(nil)
)

// member is one ZooKeeper server: the generic faults through its
// placement, its role and gates from the four-letter words, its
// initLimit in its zoo.cfg.
type member struct {
	*servers.Member
	id int // myid
}

// newMember makes server s (myid id) a member of c.
func newMember(c *cluster, s lab.Server, id int) *member {
	m := &member{id: id}
	m.Member = &servers.Member{Server: s, Env: c.env,
		RoleOf: func(ctx context.Context, _ lab.Server) (string, error) { return m.state(ctx) },
		Gate:   func(ctx context.Context, _ lab.Server, gate string) error { return gateCheck(ctx, m, c.members, gate) },
	}
	return m
}

// FourLetter sends a four-letter word to the server's client port.
func (m *member) FourLetter(ctx context.Context, cmd string) (string, error) {
	out, err := zkcheck.FourLetter(ctx, m.Addr("client", lab.FromHost), cmd)
	if err != nil {
		return "", fmt.Errorf("ask %s: %w", m.Name(), err)
	}
	return out, nil
}

// Mntr is the server's mntr answer as a map.
func (m *member) Mntr(ctx context.Context) (map[string]string, error) { return mntr(ctx, m.Server) }

func (m *member) state(ctx context.Context) (string, error) {
	kv, err := m.Mntr(ctx)
	if err != nil {
		return "", err
	}
	return kv["zk_server_state"], nil
}

// Version is the running server's zk_version without the build date.
func (m *member) Version(ctx context.Context) (string, error) {
	kv, err := m.Mntr(ctx)
	if err != nil {
		return "", err
	}
	v, _, _ := strings.Cut(kv["zk_version"], ", built on")
	return strings.TrimSpace(v), nil
}

// Zxid is the last transaction the server applied (srvr's Zxid).
func (m *member) Zxid(ctx context.Context) (uint64, error) {
	out, err := m.FourLetter(ctx, "srvr")
	if err != nil {
		return 0, err
	}
	z, err := parseZxid(out)
	if err != nil {
		return 0, fmt.Errorf("read zxid of %s: %w", m.Name(), err)
	}
	return z, nil
}

// errNotServing: a server that answers but does not serve.
var errNotServing = errors.New("not currently serving requests")

// parseZxid reads the Zxid line of a srvr answer ("Zxid: 0x100000002").
func parseZxid(srvr string) (uint64, error) {
	if strings.Contains(srvr, "not currently serving requests") {
		return 0, errNotServing
	}
	for line := range strings.SplitSeq(srvr, "\n") {
		v, ok := strings.CutPrefix(strings.TrimSpace(line), "Zxid:")
		if !ok {
			continue
		}
		z, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(v), "0x"), 16, 64)
		if err != nil {
			return 0, fmt.Errorf("parse zxid %q: %w", strings.TrimSpace(v), err)
		}
		return z, nil
	}
	return 0, fmt.Errorf("parse zxid: no Zxid line in %q", zkcheck.Truncate(srvr, 200))
}

// cfgPath is the server's zoo.cfg.
func (m *member) cfgPath() string { return m.Layout().ConfDir + "/zoo.cfg" }

// InitLimit is the initLimit of its zoo.cfg, in ticks: what it was
// started with, or will be at its next start.
func (m *member) InitLimit() (int, error) {
	cfg, ok := m.File(m.cfgPath())
	if !ok {
		return 0, fmt.Errorf("read zoo.cfg of %s: none", m.Name())
	}
	return initLimitOf(m.Name(), cfg)
}

// SetInitLimit rewrites the initLimit of its zoo.cfg; ZooKeeper reads it
// only at start, so it takes effect at the next restart.
func (m *member) SetInitLimit(ticks int) error {
	if ticks < 1 {
		return fmt.Errorf("set initLimit of %s: want at least 1 tick, got %d", m.Name(), ticks)
	}
	cfg, ok := m.File(m.cfgPath())
	if !ok || !initLimitLine.MatchString(cfg) {
		return fmt.Errorf("set initLimit of %s: zoo.cfg has no initLimit line", m.Name())
	}
	return m.WriteFile(m.cfgPath(), initLimitLine.ReplaceAllString(cfg, "initLimit="+strconv.Itoa(ticks)))
}
