package zkensemble

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
)

var initLimitLine = regexp.MustCompile(`(?m)^initLimit=(\d+)$`)

// InitLimit is the initLimit in the member's zoo.cfg, in ticks: what the
// server was started with, or will be at its next start.
func (m *Member) InitLimit() (int, error) {
	b, err := os.ReadFile(m.ConfigPath)
	if err != nil {
		return 0, fmt.Errorf("read zoo.cfg: %w", err)
	}
	g := initLimitLine.FindSubmatch(b)
	if g == nil {
		return 0, fmt.Errorf("read zoo.cfg of %s: no initLimit line", m.Name)
	}
	return strconv.Atoi(string(g[1]))
}

// SetInitLimit rewrites the initLimit of the member's zoo.cfg; ZooKeeper
// reads it only at start, so it takes effect at the next Restart.
func (m *Member) SetInitLimit(ticks int) error {
	if ticks < 1 {
		return fmt.Errorf("set initLimit of %s: want at least 1 tick, got %d", m.Name, ticks)
	}
	b, err := os.ReadFile(m.ConfigPath)
	if err != nil {
		return fmt.Errorf("read zoo.cfg: %w", err)
	}
	if !initLimitLine.Match(b) {
		return fmt.Errorf("set initLimit of %s: zoo.cfg has no initLimit line", m.Name)
	}
	b = initLimitLine.ReplaceAll(b, []byte("initLimit="+strconv.Itoa(ticks)))
	if err := os.WriteFile(m.ConfigPath, b, 0o644); err != nil {
		return fmt.Errorf("write zoo.cfg: %w", err)
	}
	return nil
}
