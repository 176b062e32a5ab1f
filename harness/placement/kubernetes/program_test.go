package kubernetes

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/infra/syncw"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// A program's pod: chaoslab's agent from the client image with its
// config as arguments, on its node's network, its limits the
// container's, its files from a ConfigMap and a host binary from the
// node; a thread limit is refused before anything is created.
func TestProgramObjects(t *testing.T) {
	s := &Site{runID: "r1", ns: "chaoslab-r1", nodes: []node{{name: "n1", ip: "10.250.0.10"}}, servers: map[string]*server{}, programs: map[string]*program{}, early: map[string]*pod{}}
	prog := lab.Program{Name: "client-03-1", Role: "client", Agent: "zk-tree-mirror", Config: map[string]int{"x": 1},
		Env: []string{"GOMEMLIMIT=40MiB"}, Limits: lab.Limits{MemoryMB: 72, CPUCores: 0.25},
		Files:      map[string]string{"/etc/agent.hcl": "a = 1\n"},
		HostBinary: "/cache/consul", HostBinaryAt: "/bin/consul"}
	pg := &program{site: s, prog: prog, node: s.nodes[0]}
	cm, pd := pg.objects("client-03-1", "chaoslab/chaoslab:dev", []string{"agent", "zk-tree-mirror", "--config", `{"x":1}`})
	var got struct {
		Metadata objectMeta `json:"metadata"`
		Spec     struct {
			NodeName      string `json:"nodeName"`
			HostNetwork   bool   `json:"hostNetwork"`
			RestartPolicy string `json:"restartPolicy"`
			Containers    []struct {
				Name      string   `json:"name"`
				Image     string   `json:"image"`
				Args      []string `json:"args"`
				Env       []struct{ Name, Value string }
				Resources struct {
					Limits map[string]string `json:"limits"`
				} `json:"resources"`
				VolumeMounts []struct {
					Name      string `json:"name"`
					MountPath string `json:"mountPath"`
				} `json:"volumeMounts"`
			} `json:"containers"`
			Volumes []struct {
				Name     string `json:"name"`
				HostPath *struct {
					Path string `json:"path"`
				} `json:"hostPath"`
			} `json:"volumes"`
		} `json:"spec"`
	}
	require.NoError(t, json.Unmarshal(mustJSON(pd), &got))
	require.Equal(t, map[string]string{LabelManaged: "true", LabelRun: "r1", LabelProgram: "client-03-1", LabelRole: "client"}, got.Metadata.Labels)
	require.Equal(t, "n1", got.Spec.NodeName)
	require.True(t, got.Spec.HostNetwork)
	require.Equal(t, "Never", got.Spec.RestartPolicy)
	c := got.Spec.Containers[0]
	require.Equal(t, programContainer, c.Name)
	require.Equal(t, []string{"agent", "zk-tree-mirror", "--config", `{"x":1}`}, c.Args)
	require.Equal(t, "GOMEMLIMIT", c.Env[1].Name)
	require.Equal(t, map[string]string{"memory": "72Mi", "cpu": "250m"}, c.Resources.Limits)
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m.Name
	}
	require.Equal(t, map[string]string{"/etc/agent.hcl": "files", "/bin/consul": "host-binary"}, mounts)
	require.Equal(t, "/cache/consul", got.Spec.Volumes[1].HostPath.Path)
	require.Equal(t, "a = 1\n", cm["data"].(map[string]string)["f0-agent.hcl"])

	_, err := s.Start(context.Background(), lab.Program{Name: "fe-01-0", Agent: "kinesis-frontend", Limits: lab.Limits{Pids: 40}})
	require.ErrorContains(t, err, "Kubernetes limits them per node")
}

// fakeKubectl is a kubectl that prints a program's output as the API
// server would: both streams together for `logs -f`, one of them for a
// log request naming a stream.
func fakeKubectl(t *testing.T) kubectl {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubectl")
	script := `#!/bin/sh
case "$*" in
*stream=Stdout*) echo '{"t":1,"id":"c1"}'; echo '{"t":2,"id":"c1"}' ;;
*stream=Stderr*) echo 'level=INFO msg=started'; echo '{"json":"on stderr stays in the log"}' ;;
logs*) echo 'level=INFO msg=started'; echo '{"t":1,"id":"c1"}'; echo 'not {json'; echo '{"t":2,"id":"c1"}' ;;
esac
`
	require.NoError(t, os.WriteFile(path, []byte(script), 0o755))
	return kubectl{path: path}
}

// A program's output: apart when the API server serves the streams
// apart, else a JSON object line to the output and every other line to
// the log; no line lost, none twice.
func TestFollowOutput(t *testing.T) {
	k := fakeKubectl(t)
	for _, split := range []bool{true, false} {
		var mu sync.Mutex
		var out []string
		var log strings.Builder
		done, stop, err := followOutput(context.Background(), k, "ns", "pod", programContainer, split,
			func(l []byte) { mu.Lock(); out = append(out, string(l)); mu.Unlock() }, syncw.New(&log))
		require.NoError(t, err)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the output's copy did not end with kubectl")
		}
		stop()
		require.Equal(t, []string{`{"t":1,"id":"c1"}`, `{"t":2,"id":"c1"}`}, out, "split %v", split)
		require.Contains(t, log.String(), "level=INFO msg=started\n")
		if split {
			require.Contains(t, log.String(), `{"json":"on stderr stays in the log"}`)
		} else {
			require.Contains(t, log.String(), "not {json\n")
		}
	}
}
