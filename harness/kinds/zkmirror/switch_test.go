package zkmirror

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A running mirror reads its control file at each report: a valid switch
// changes its strategy (and a paced one's window of slots), an invalid
// one or an unchanged file changes nothing.
func TestControlFileSwitchesStrategy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "control", "client-01.json")
	cfg := Config{Client: NewSettings().Client, ID: "client-01", Control: path}
	cfg.Strategy = FullRefresh
	m := &Mirror{cfg: cfg, log: slog.New(slog.NewTextHandler(io.Discard, nil)), nodes: map[string]*entry{}}
	m.state.Store("connecting")
	m.setStrategy(cfg.Strategy, cfg.Window)
	m.control.path = cfg.Control
	m.pollControl()
	require.Equal(t, FullRefresh, m.strategy().name, "no file: no switch")
	require.Nil(t, m.strategy().slots)

	require.NoError(t, writeControl(path, Switch{Strategy: Paced, Window: 3}))
	m.pollControl()
	require.Equal(t, Paced, m.strategy().name)
	require.Equal(t, 3, m.strategy().window)
	require.Equal(t, 3, cap(m.strategy().slots))
	require.Equal(t, Paced, m.sample().Strategy, "the sample says it")

	require.NoError(t, os.WriteFile(path, []byte(`{"strategy":"jittered","window":3}`), 0o644))
	m.pollControl()
	require.Equal(t, Paced, m.strategy().name, "an unknown strategy is refused")
	require.Error(t, Switch{Strategy: Paced, Window: 0}.check(cfg.Client))
	require.Error(t, Switch{Strategy: Paced, Window: MaxWindow + 1}.check(cfg.Client))
}
