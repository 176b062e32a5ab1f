package zkmirror

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Switch is what the control file of a running client says: the strategy
// to load its mirror with from now on (switch-strategy).
type Switch struct {
	Strategy string `json:"strategy"`
	Window   int    `json:"window"`
}

// strategy is the one a mirror uses now; slots bound a paced mirror's
// re-reads after watch events in flight (nil for full-refresh).
type strategy struct {
	name   string
	window int
	slots  chan struct{}
}

func (m *Mirror) strategy() *strategy { return m.strat.Load() }

func (m *Mirror) setStrategy(name string, window int) {
	st := &strategy{name: name, window: window}
	if name == Paced {
		st.slots = make(chan struct{}, window)
	}
	m.strat.Store(st)
}

// controlFile is the client's side of the control file: read again when
// it changed.
type controlFile struct {
	path string
	mod  time.Time
	size int64
}

// pollControl switches the strategy when the control file says so. A
// switch applies to what the mirror does next (the next reconnect, the
// next watch event); reads in flight finish as they started.
func (m *Mirror) pollControl() {
	c := &m.control
	if c.path == "" {
		return
	}
	fi, err := os.Stat(c.path)
	if err != nil || (fi.ModTime().Equal(c.mod) && fi.Size() == c.size) {
		return
	}
	c.mod, c.size = fi.ModTime(), fi.Size()
	b, err := os.ReadFile(c.path)
	if err != nil {
		return
	}
	var sw Switch
	if err := json.Unmarshal(b, &sw); err != nil {
		m.log.Warn("control file", "err", err)
		return
	}
	if err := sw.check(m.cfg.Client); err != nil {
		m.log.Warn("control file", "err", err)
		return
	}
	old := m.strategy()
	m.setStrategy(sw.Strategy, sw.Window)
	m.log.Info("strategy switched", "from", old.name, "window_from", old.window, "to", sw.Strategy, "window", sw.Window)
}

// check says whether the client's settings with the switch are valid.
func (sw Switch) check(c Client) error {
	c.Strategy, c.Window = sw.Strategy, sw.Window
	if ps := c.Check(); len(ps) > 0 {
		return fmt.Errorf("switch strategy: %s: %s", ps[0].Field, ps[0].Msg)
	}
	return nil
}

// writeControl writes a switch for a client at path, atomically.
func writeControl(path string, sw Switch) error {
	b, err := json.Marshal(sw)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write control file: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("write control file: %w", err)
	}
	return os.Rename(tmp, path)
}
