package kubernetes

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/servers"
)

func TestNamespaceName(t *testing.T) {
	require.Equal(t, "chaoslab-il-0587-20250101-120000-a", NamespaceName("il-0587-20250101-120000-a"))
	n := NamespaceName("IL_0587.Mitigated")
	require.Regexp(t, `^chaoslab-il-0587-mitigated-[0-9a-f]{8}$`, n, "case and punctuation folded, told apart by a hash")
	long := NamespaceName(strings.Repeat("a", 70))
	require.LessOrEqual(t, len(long), 63)
	require.Regexp(t, `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`, long)
	require.NotEqual(t, long, NamespaceName(strings.Repeat("a", 71)))
	require.Equal(t, "zk1", podName("zk1"))
}

func TestLabelValue(t *testing.T) {
	require.Equal(t, "t-kubernetes-123", labelValue("t-kubernetes-123"))
	v := labelValue(strings.Repeat("r", 63) + "x")
	require.LessOrEqual(t, len(v), 63)
	require.Regexp(t, `^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`, labelValue("run:1/"))
}

func TestQuantity(t *testing.T) {
	for q, want := range map[string]float64{"": 0, "500m": 0.5, "2": 2, "700Mi": 700 << 20, "1Gi": 1 << 30, "734003200": 734003200, "1k": 1000} {
		got, err := quantity(q)
		require.NoError(t, err, q)
		require.InDelta(t, want, got, 1e-9, q)
	}
	_, err := quantity("lots")
	require.Error(t, err)
}

func TestExitOf(t *testing.T) {
	e := exitOf(&terminated{ExitCode: 137, Reason: "OOMKilled"})
	require.True(t, e.OOM)
	require.Equal(t, "killed", e.Signal)
	require.Contains(t, e.How, "OOM-killed")
	e = exitOf(&terminated{ExitCode: 143, Reason: "Error"})
	require.False(t, e.OOM)
	require.Equal(t, "terminated", e.Signal)
	e = exitOf(&terminated{ExitCode: 3, Reason: "Error"})
	require.Equal(t, 3, e.Code)
	require.Empty(t, e.Signal)
}

// A server's pod: its image never pulled, on its node's network at its
// layout's ports, its folders the pod's, each file mounted from its
// ConfigMap at its path, its limits the container's.
func TestServerObjects(t *testing.T) {
	s := &Site{runID: "r1", ns: "chaoslab-r1", nodes: []node{{name: "n1", ip: "10.250.0.10"}}, ports: map[int]bool{20000: true}, nextPort: 20000, servers: map[string]*server{}}
	l, err := s.Layout(lab.ServerSpec{Name: "zk1", Role: "zookeeper", Ports: []lab.Port{{Name: "client", Number: 2181}, {Name: "election", Number: 3888}}})
	require.NoError(t, err)
	require.Equal(t, "10.250.0.10", l.Host)
	require.Equal(t, map[string]int{"client": 20001, "election": 20002}, l.Ports, "ports no pod declares")
	p := lab.ServerProgram{Image: "zookeeper", ImageEnv: []string{"ZOO_MY_ID=1", "JVMFLAGS=-Xmx64m -Dx=y"},
		ImageArgs: []string{"start-foreground"},
		Files:     map[string]string{"/conf/zoo.cfg": "tickTime=2000\n", "/data/myid": "1\n"},
		Limits:    lab.Limits{MemoryMB: 300, CPUCores: 0.5}}
	sv := &server{Base: servers.NewBase(l, p), site: s, node: s.nodes[0], image: "chaoslab/zookeeper:x", pod: "zk1"}
	cm, pd := sv.objects()
	var got struct {
		Metadata objectMeta `json:"metadata"`
		Spec     struct {
			NodeName      string `json:"nodeName"`
			HostNetwork   bool   `json:"hostNetwork"`
			RestartPolicy string `json:"restartPolicy"`
			Containers    []struct {
				Image           string   `json:"image"`
				ImagePullPolicy string   `json:"imagePullPolicy"`
				Command         []string `json:"command"`
				Args            []string `json:"args"`
				Env             []struct{ Name, Value string }
				Ports           []struct {
					ContainerPort int `json:"containerPort"`
					HostPort      int `json:"hostPort"`
				} `json:"ports"`
				Resources struct {
					Limits map[string]string `json:"limits"`
				} `json:"resources"`
				VolumeMounts []struct {
					Name      string `json:"name"`
					MountPath string `json:"mountPath"`
					SubPath   string `json:"subPath"`
				} `json:"volumeMounts"`
			} `json:"containers"`
		} `json:"spec"`
	}
	require.NoError(t, json.Unmarshal(mustJSON(pd), &got))
	require.Equal(t, map[string]string{LabelManaged: "true", LabelRun: "r1", LabelMember: "zk1", LabelRole: "zookeeper"}, got.Metadata.Labels)
	require.Equal(t, "n1", got.Spec.NodeName)
	require.True(t, got.Spec.HostNetwork)
	require.Equal(t, "Never", got.Spec.RestartPolicy)
	c := got.Spec.Containers[0]
	require.Equal(t, "Never", c.ImagePullPolicy)
	require.Nil(t, c.Command, "the image's own entrypoint")
	require.Equal(t, []string{"start-foreground"}, c.Args)
	require.Equal(t, "JVMFLAGS", c.Env[1].Name)
	require.Equal(t, "-Xmx64m -Dx=y", c.Env[1].Value)
	require.Equal(t, 20001, c.Ports[0].ContainerPort)
	require.Equal(t, 20001, c.Ports[0].HostPort)
	require.Equal(t, map[string]string{"memory": "300Mi", "cpu": "500m"}, c.Resources.Limits)
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m.Name + ":" + m.SubPath
	}
	require.Equal(t, map[string]string{"/conf": "dir0:", "/data": "dir1:", "/conf/zoo.cfg": "files:f0-zoo.cfg", "/data/myid": "files:f1-myid"}, mounts)
	data := cm["data"].(map[string]string)
	require.Equal(t, "tickTime=2000\n", data["f0-zoo.cfg"])
	require.Equal(t, "1\n", data["f1-myid"])

	// With a claim, its folders are the claim's, each a folder of it;
	// the files still from the ConfigMap.
	sv.claim = claimName("zk1", 0)
	_, pd = sv.objects()
	require.NoError(t, json.Unmarshal(mustJSON(pd), &got))
	mounts = map[string]string{}
	for _, m := range got.Spec.Containers[0].VolumeMounts {
		mounts[m.MountPath] = m.Name + ":" + m.SubPath
	}
	require.Equal(t, map[string]string{"/conf": "data:dir0", "/data": "data:dir1", "/conf/zoo.cfg": "files:f0-zoo.cfg", "/data/myid": "files:f1-myid"}, mounts)
	vols := pd["spec"].(map[string]any)["volumes"].([]map[string]any)
	require.Equal(t, map[string]any{"claimName": "zk1-data-0"}, vols[0]["persistentVolumeClaim"])
}
