package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// `chaoslab sim` lists the models, refuses an unknown one by name, and for
// a model writes its report and prints its summary.
func TestSimCommand(t *testing.T) {
	run := func(args ...string) (string, error) {
		cmd := simCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(args)
		err := cmd.Execute()
		return out.String(), err
	}
	out, err := run()
	require.NoError(t, err)
	for _, id := range []string{"IL-0587", "IL-0384", "AWS-EBS-2011"} { // as `chaoslab list` prints them
		require.Contains(t, out, id)
	}

	_, err = run("no-such-incident")
	require.ErrorContains(t, err, `find model "no-such-incident"`)
	_, err = run("ebs", "--scale", "fleet")
	require.ErrorContains(t, err, `scale "fleet"`)

	dir := t.TempDir()
	out, err = run("aws-ebs-2011", "--out", dir, "--seed", "2")
	require.NoError(t, err)
	require.Contains(t, out, "REPRODUCED")
	require.Contains(t, out, "against the write-up")
	runs, err := filepath.Glob(filepath.Join(dir, "aws-ebs-2011-sim-incident-*", "index.html"))
	require.NoError(t, err)
	require.Len(t, runs, 1)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(runs[0]), "report.json"))
	require.NoError(t, err)
	var rep struct {
		Seed  int64  `json:"seed"`
		Rerun string `json:"rerun"`
	}
	require.NoError(t, json.Unmarshal(b, &rep))
	require.Equal(t, int64(2), rep.Seed)
	require.Equal(t, "chaoslab sim aws-ebs-2011 --seed 2", rep.Rerun)
}
