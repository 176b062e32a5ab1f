package kubernetes

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// pod is the part of a pod the placement reads.
type pod struct {
	Metadata objectMeta `json:"metadata"`
	Spec     struct {
		NodeName    string `json:"nodeName"`
		HostNetwork bool   `json:"hostNetwork"`
		Containers  []struct {
			Name  string `json:"name"`
			Ports []struct {
				ContainerPort int `json:"containerPort"`
				HostPort      int `json:"hostPort"`
			} `json:"ports"`
			Resources struct {
				Limits map[string]string `json:"limits"`
			} `json:"resources"`
		} `json:"containers"`
	} `json:"spec"`
	Status struct {
		Phase             string            `json:"phase"`
		Reason            string            `json:"reason"`
		Message           string            `json:"message"`
		PodIP             string            `json:"podIP"`
		ContainerStatuses []containerStatus `json:"containerStatuses"`
	} `json:"status"`
}

type containerStatus struct {
	Name string `json:"name"`
	// ContainerID is the runtime's id of its current container
	// ("containerd://ID").
	ContainerID string `json:"containerID"`
	// Resources are what the kubelet applied to the running container.
	Resources *struct {
		Limits map[string]string `json:"limits"`
	} `json:"resources"`
	Ready        bool           `json:"ready"`
	RestartCount int            `json:"restartCount"`
	State        containerState `json:"state"`
	LastState    containerState `json:"lastState"`
}

type containerState struct {
	Waiting *struct {
		Reason  string `json:"reason"`
		Message string `json:"message"`
	} `json:"waiting"`
	Running *struct {
		StartedAt string `json:"startedAt"`
	} `json:"running"`
	Terminated *terminated `json:"terminated"`
}

type terminated struct {
	// StartedAt is set when the container ran before it ended.
	StartedAt string `json:"startedAt"`
	ExitCode  int    `json:"exitCode"`
	Signal    int    `json:"signal"`
	Reason    string `json:"reason"`
	Message   string `json:"message"`
}

// container is the status of the pod's container name (nil: none yet).
func (p *pod) container(name string) *containerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == name {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// limit is the container's limit of a resource as the API has it ("").
func (p *pod) limit(container, resource string) string {
	for _, c := range p.Spec.Containers {
		if c.Name == container {
			return c.Resources.Limits[resource]
		}
	}
	return ""
}

// stuck are the reasons a container waits for that no wait ends (pods
// never pull; a configuration the kubelet cannot make).
var stuck = map[string]bool{
	"ErrImageNeverPull": true, "InvalidImageName": true, "ImageInspectError": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
}

// exitOf is how a container ended, as the kubelet says: OOMKilled is the
// kernel's OOM kill of the container (its cgroup's), as on the container
// placement.
func exitOf(t *terminated) lab.ProcExit {
	e := lab.ProcExit{Code: t.ExitCode}
	sig := t.Signal
	if sig == 0 && t.ExitCode > 128 && t.ExitCode < 128+65 {
		sig = t.ExitCode - 128
	}
	if sig > 0 {
		e.Signal = syscall.Signal(sig).String()
	}
	e.OOM = t.Reason == "OOMKilled"
	switch {
	case e.OOM:
		e.How = fmt.Sprintf("OOM-killed (the kubelet's OOMKilled, exit code %d)", t.ExitCode)
	case e.Signal != "":
		e.How = fmt.Sprintf("ended by signal %q (exit code %d, %s)", e.Signal, t.ExitCode, t.Reason)
	default:
		e.How = fmt.Sprintf("exited with code %d (%s)", t.ExitCode, t.Reason)
	}
	return e
}

// quantity reads a resource quantity as the API writes it: "500m", "2",
// "700Mi", "1Gi", "734003200"; it returns the value in units (cores,
// bytes).
func quantity(q string) (float64, error) {
	if q == "" {
		return 0, nil
	}
	mult := map[string]float64{"m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
		"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40}
	for _, suf := range []string{"Ki", "Mi", "Gi", "Ti", "m", "k", "M", "G", "T"} {
		if n, ok := strings.CutSuffix(q, suf); ok {
			v, err := strconv.ParseFloat(n, 64)
			if err != nil {
				return 0, fmt.Errorf("quantity %q: %w", q, err)
			}
			return v * mult[suf], nil
		}
	}
	v, err := strconv.ParseFloat(q, 64)
	if err != nil || math.IsNaN(v) {
		return 0, fmt.Errorf("quantity %q: not a number", q)
	}
	return v, nil
}

var (
	portName   = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,13}[a-z0-9])?$`)
	notKeySafe = regexp.MustCompile(`[^-._a-zA-Z0-9]+`)
)

// keySafe is s as (part of) a ConfigMap key.
func keySafe(s string) string { return notKeySafe.ReplaceAllString(s, "_") }

// cutEnv splits K=V.
func cutEnv(kv string) (string, string, bool) { return strings.Cut(kv, "=") }

// uniq are the non-empty values of ss, each once, in order.
func uniq(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// logSize is the size of a log file (0 when it does not exist yet).
func logSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}
