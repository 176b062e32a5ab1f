package zkensemble

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/chaoslab/chaoslab/harness/zkcheck"
)

// Replace stands a fresh server in for the member: it kills the member's
// process if it runs, empties its data directory (the one Start created,
// keeping only myid) and starts it again with the same id, addresses and
// zoo.cfg. It returns once the process is started: the new server has no
// data and must sync a snapshot from the leader before it serves, which
// is for the caller to wait for.
func (m *Member) Replace(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("replace %s: %w", m.Name, err)
	}
	if m.Running() {
		if err := m.Kill(); err != nil && !errors.Is(err, ErrNotRunning) {
			return fmt.Errorf("replace %s: %w", m.Name, err)
		}
	}
	if err := m.wipeData(); err != nil {
		return fmt.Errorf("replace %s: %w", m.Name, err)
	}
	if err := m.start(); err != nil {
		return fmt.Errorf("replace %s: %w", m.Name, err)
	}
	m.ens.log.Info("zkensemble: replaced with an empty data dir", "member", m.Name, "pid", m.PID(), "data", m.DataDir)
	return nil
}

// wipeData empties the member's data directory and writes its myid
// again. It refuses any directory but the one Start made for this member
// (Dir/zkN/data of the ensemble's run folder).
func (m *Member) wipeData() error {
	if m.ens == nil || m.ens.Dir == "" {
		return errors.New("wipe data: not a member of a started ensemble")
	}
	want := filepath.Join(m.ens.Dir, memberName(m.ID), "data")
	if filepath.Clean(m.DataDir) != want {
		return fmt.Errorf("wipe data: %s is not the data dir this ensemble made (%s)", m.DataDir, want)
	}
	if err := os.RemoveAll(want); err != nil {
		return fmt.Errorf("wipe data: %w", err)
	}
	if err := os.MkdirAll(want, 0o755); err != nil {
		return fmt.Errorf("wipe data: %w", err)
	}
	if err := os.WriteFile(filepath.Join(want, "myid"), []byte(strconv.Itoa(m.ID)+"\n"), 0o644); err != nil {
		return fmt.Errorf("wipe data: write myid: %w", err)
	}
	return nil
}

// Zxid is the last transaction id the member has applied (srvr's Zxid).
// A server that does not serve gives an error wrapping ErrNotServing.
func (m *Member) Zxid(ctx context.Context) (uint64, error) {
	out, err := zkcheck.FourLetter(ctx, m.ClientAddr, "srvr")
	if err != nil {
		return 0, fmt.Errorf("read zxid of %s: %w", m.Name, err)
	}
	z, err := ParseZxid(out)
	if err != nil {
		return 0, fmt.Errorf("read zxid of %s: %w", m.Name, err)
	}
	return z, nil
}

// ParseZxid reads the Zxid line of a srvr answer ("Zxid: 0x100000002").
func ParseZxid(srvr string) (uint64, error) {
	if strings.Contains(srvr, "not currently serving requests") {
		return 0, ErrNotServing
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
