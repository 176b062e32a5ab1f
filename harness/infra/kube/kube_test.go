package kube_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chaoslab/chaoslab/harness/infra/images"
	"github.com/chaoslab/chaoslab/harness/infra/kube"
	"github.com/chaoslab/chaoslab/harness/labtest"
)

func TestMain(m *testing.M) { labtest.Main(m, labtest.Chaoslab) }

// TestIntegration_KubeUpDown starts the test cluster with
// scripts/kube-up.sh in a folder of its own, runs a pod to Ready (etcd from
// the image `chaoslab images build` made when Docker has it, else the
// pause image), and checks that scripts/kube-down.sh leaves none of it:
// no process, cgroup, mount or namespace of the cluster, and of its folder
// only the logs. It never builds Kubernetes: without the binaries in the
// cache (./scripts/kube-up.sh builds them once, ~15 min) it is skipped.
func TestIntegration_KubeUpDown(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: starts a Kubernetes cluster (skipped with -short)")
	}
	if os.Geteuid() != 0 {
		t.Skip("integration test: the test cluster needs root (namespaces, mounts, cgroups)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := images.KubernetesCached(ctx, images.Options{}); errors.Is(err, images.ErrNotBuilt) {
		t.Skipf("the test cluster's binaries are not built (%v)", err)
	} else if err != nil {
		t.Fatal(err)
	}
	chaoslab, err := labtest.ChaoslabBinary()
	if err != nil {
		t.Fatal(err)
	}
	src, err := images.FindSourceDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := func(name string, args ...string) error {
		cmd := exec.CommandContext(ctx, filepath.Join(src, "scripts", name), args...)
		cmd.Env = append(os.Environ(), "CHAOSLAB_KUBE_DIR="+dir, "CHAOSLAB="+chaoslab)
		out, err := cmd.CombinedOutput()
		t.Logf("%s:\n%s", strings.Join(append([]string{name}, args...), " "), out)
		return err
	}
	down := false
	t.Cleanup(func() {
		if !down {
			script("kube-down.sh")
		}
	})

	// etcd when its image is in Docker (kube-up.sh moves it over), else
	// the pause image the cluster always has.
	pod := `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe"}, "spec": {
	  "terminationGracePeriodSeconds": 1,
	  "containers": [{"name": "pause", "image": "` + images.PauseRef + `", "imagePullPolicy": "Never"}]}}`
	imagesArg := "none"
	if exec.Command("docker", "image", "inspect", images.EtcdRef).Run() == nil {
		imagesArg = "etcd"
		pod = `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe"}, "spec": {
		  "terminationGracePeriodSeconds": 1,
		  "containers": [{"name": "etcd", "image": "` + images.EtcdRef + `", "imagePullPolicy": "Never",
		    "args": ["--listen-client-urls=http://0.0.0.0:2379", "--advertise-client-urls=http://127.0.0.1:2379"],
		    "readinessProbe": {"tcpSocket": {"port": 2379}, "periodSeconds": 1}}]}}`
	}
	start := time.Now()
	if err := script("kube-up.sh", "--images", imagesArg); err != nil {
		t.Fatalf("kube-up.sh: %v", err)
	}
	t.Logf("kube-up.sh took %s", time.Since(start).Round(100*time.Millisecond))
	if ms, err := os.ReadFile(filepath.Join(dir, "log", "ready-ms")); err == nil {
		n, _ := strconv.Atoi(strings.TrimSpace(string(ms)))
		t.Logf("start to ready for pods: %.1f s", float64(n)/1000)
		if n > 30000 {
			t.Errorf("the cluster took %.1f s to be ready for pods, want under 30 s", float64(n)/1000)
		}
	}
	kubectl := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, filepath.Join(dir, "bin", "kubectl"), append([]string{"--kubeconfig", kube.Kubeconfig(dir)}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
		}
		return strings.TrimSpace(out.String())
	}
	start = time.Now()
	kubectl(pod, "apply", "-f", "-")
	kubectl("", "wait", "--for=condition=Ready", "pod/probe", "--timeout=120s")
	t.Logf("pod probe Ready %s after apply", time.Since(start).Round(100*time.Millisecond))

	// The pod's processes, from its cgroups, and the cluster's namespace.
	uid := kubectl("", "get", "pod", "probe", "-o", "jsonpath={.metadata.uid}")
	cg, _ := os.ReadFile(filepath.Join(dir, "run", "cgroup"))
	cgroup := strings.TrimSpace(string(cg))
	pids := podProcesses(cgroup, uid)
	if len(pids) < 2 {
		t.Fatalf("pod probe (uid %s): processes %v in cgroups %s, want its sandbox's and its container's", uid, pids, cgroup)
	}
	nspid, _ := os.ReadFile(filepath.Join(dir, "run", "ns.pid"))
	netns, err := os.Readlink("/proc/" + strings.TrimSpace(string(nspid)) + "/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pod probe: processes %v; the cluster's network namespace %s", pids, netns)

	down = true
	if err := script("kube-down.sh"); err != nil {
		t.Errorf("kube-down.sh: %v", err)
	}
	for _, p := range pids {
		if _, err := os.Stat("/proc/" + p); err == nil {
			t.Errorf("process %s of pod probe is still alive", p)
		}
	}
	labtest.NoProcessNaming(t, dir)
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		if ns, _ := os.Readlink(p + "/ns/net"); ns == netns {
			t.Errorf("%s is still in the cluster's network namespace %s", p, netns)
		}
		if mi, _ := os.ReadFile(p + "/mountinfo"); bytes.Contains(mi, []byte(" "+dir+"/")) {
			t.Errorf("%s still sees a mount of the cluster's folder", p)
		}
	}
	if left, _ := filepath.Glob("/sys/fs/cgroup/*/" + cgroup); len(left) > 0 {
		t.Errorf("cgroups left: %v", left)
	}
	if _, err := os.Stat("/sys/fs/cgroup/" + cgroup); err == nil {
		t.Errorf("cgroup left: /sys/fs/cgroup/%s", cgroup)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "log" {
			t.Errorf("left in the cluster's folder: %s", e.Name())
		}
	}
}

// podProcesses are the pids in the cgroups of the pod with uid under the
// cluster's cgroup root (the pids hierarchy on v1; v2's one tree).
func podProcesses(root, uid string) []string {
	var pids []string
	for _, base := range []string{"/sys/fs/cgroup/pids/" + root, "/sys/fs/cgroup/" + root} {
		filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" || !strings.Contains(p, strings.ReplaceAll(uid, "-", "")) && !strings.Contains(p, uid) {
				return nil
			}
			b, _ := os.ReadFile(p)
			pids = append(pids, strings.Fields(string(b))...)
			return nil
		})
		if len(pids) > 0 {
			break
		}
	}
	return pids
}
