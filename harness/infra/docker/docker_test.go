package docker

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/infra/owner"
)

func TestRyukDisabledByInit(t *testing.T) {
	// Set by this package's init unless the environment had it already.
	require.NotEmpty(t, os.Getenv(RyukEnv))
}

func TestLabels(t *testing.T) {
	require.Equal(t, map[string]string{LabelManaged: "true", LabelRun: "r1", LabelOwner: Owner()}, Labels("r1"))
	require.Equal(t, map[string]string{LabelManaged: "true"}, Labels(""))
	m := MergeLabels(Labels("r1"), map[string]string{LabelMember: "zk1"}, map[string]string{LabelRun: "r2"})
	require.Equal(t, map[string]string{LabelManaged: "true", LabelRun: "r2", LabelMember: "zk1", LabelOwner: Owner()}, m)

	f := Filters("r1")
	require.Equal(t, map[string]bool{"org.chaoslab.managed=true": true, "org.chaoslab.run=r1": true}, f["label"])
	require.Equal(t, map[string]bool{"org.chaoslab.managed=true": true}, Filters("")["label"])
}

func TestCheckRunID(t *testing.T) {
	for _, ok := range []string{"r1", "il-0587-20260101T120000", "a.b_c-d", strings.Repeat("x", 63)} {
		require.NoError(t, CheckRunID(ok), ok)
	}
	for _, bad := range []string{"", "-x", "a b", "a/b", "a=b", strings.Repeat("x", 64)} {
		require.Error(t, CheckRunID(bad), bad)
	}
}

func TestSweptString(t *testing.T) {
	require.True(t, Swept{}.Empty())
	s := Swept{Containers: []string{"c"}, Networks: []string{"n"}}
	require.False(t, s.Empty())
	require.Equal(t, "1 containers [c], 1 networks [n], 0 volumes []", s.String())
}

// requireDocker skips unless a Docker engine answers.
func requireDocker(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	if err := Available(context.Background()); err != nil {
		t.Skipf("integration test: no Docker engine: %v", err)
	}
}

// shellImage returns a local image with /bin/sh, or skips.
func shellImage(t *testing.T) string {
	t.Helper()
	img, err := FirstImage(context.Background(), os.Getenv("CHAOSLAB_ZOOKEEPER_IMAGE"),
		"chaoslab/zookeeper:3.8.0-deb12", "zookeeper:3.8", "chaoslab-dev/zookeeper:test", "debian:bookworm")
	if err != nil {
		t.Skipf("integration test: no image with a shell on this engine (%v); build one with harness/dockerzk/testdata/build-test-image.sh", err)
	}
	return img
}

func runID(t *testing.T) string {
	return "t" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))[:min(20, len(t.Name()))] + "-" + time.Now().Format("150405.000")
}

func createContainer(t *testing.T, ctx context.Context, img, run, name string, script string) string {
	t.Helper()
	cli, err := Client(ctx)
	require.NoError(t, err)
	res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: name,
		Config: &container.Config{
			Image: img, Entrypoint: []string{"/bin/sh", "-c", script},
			Labels: MergeLabels(Labels(run), map[string]string{LabelComponent: "test"}),
		},
		HostConfig: &container.HostConfig{},
	})
	require.NoError(t, err)
	return res.ID
}

func dockerCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	require.NoError(t, err, "docker %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

func TestIntegration_ImageExists(t *testing.T) {
	requireDocker(t)
	ctx := context.Background()
	ok, err := ImageExists(ctx, "chaoslab-test/does-not-exist:never")
	require.NoError(t, err)
	require.False(t, ok)
	img := shellImage(t)
	ok, err = ImageExists(ctx, img)
	require.NoError(t, err)
	require.True(t, ok)
	_, err = FirstImage(ctx, "chaoslab-test/does-not-exist:never")
	require.ErrorIs(t, err, ErrNoImage)
}

func TestIntegration_SweepRemovesEverythingOfTheRun(t *testing.T) {
	requireDocker(t)
	img := shellImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, other := runID(t), runID(t)+"-other"
	t.Cleanup(func() { _, _ = Sweep(context.Background(), run); _, _ = Sweep(context.Background(), other) })
	cli, err := Client(ctx)
	require.NoError(t, err)

	// A running, a paused and a never-started container, a network and a
	// volume of the run; one container of another run.
	running := createContainer(t, ctx, img, run, run+"-running", "sleep 300")
	paused := createContainer(t, ctx, img, run, run+"-paused", "sleep 300")
	createContainer(t, ctx, img, run, run+"-created", "true")
	keep := createContainer(t, ctx, img, other, other+"-keep", "sleep 300")
	for _, id := range []string{running, paused} {
		_, err := cli.ContainerStart(ctx, id, client.ContainerStartOptions{})
		require.NoError(t, err)
	}
	_, err = cli.ContainerPause(ctx, paused, client.ContainerPauseOptions{})
	require.NoError(t, err)
	_, err = cli.NetworkCreate(ctx, run+"-net", client.NetworkCreateOptions{Driver: "bridge", Labels: Labels(run)})
	require.NoError(t, err)
	_, err = cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: run + "-vol", Labels: Labels(run)})
	require.NoError(t, err)

	left, err := Leftovers(ctx, run)
	require.NoError(t, err)
	require.Len(t, left, 4)

	swept, err := Sweep(ctx, run)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{run + "-running", run + "-paused", run + "-created"}, swept.Containers)
	require.Equal(t, []string{run + "-net"}, swept.Networks)
	require.Equal(t, []string{run + "-vol"}, swept.Volumes)

	require.Empty(t, dockerCLI(t, "ps", "-aq", "--filter", "label="+LabelRun+"="+run))
	require.Empty(t, dockerCLI(t, "network", "ls", "-q", "--filter", "label="+LabelRun+"="+run))
	require.Empty(t, dockerCLI(t, "volume", "ls", "-q", "--filter", "label="+LabelRun+"="+run))
	require.Contains(t, dockerCLI(t, "ps", "-aq", "--no-trunc", "--filter", "label="+LabelRun+"="+other), keep, "another run's container stays")

	// Sweeping again finds nothing. (Sweep(ctx, "") is not tried here: it
	// would remove the containers of tests running in other packages.)
	swept, err = Sweep(ctx, run)
	require.NoError(t, err)
	require.True(t, swept.Empty())
}

func TestIntegration_FollowLogsAcrossRestartsUntilRemoved(t *testing.T) {
	requireDocker(t)
	img := shellImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := runID(t)
	t.Cleanup(func() { _, _ = Sweep(context.Background(), run) })
	cli, err := Client(ctx)
	require.NoError(t, err)
	id := createContainer(t, ctx, img, run, run+"-logs", `echo "out $(date +%s%N)"; echo "err line" >&2; sleep 0.3; echo bye`)
	_, err = cli.ContainerStart(ctx, id, client.ContainerStartOptions{})
	require.NoError(t, err)

	path := filepath.Join(t.TempDir(), "logs", "c.log")
	l, err := FollowLogs(ctx, id, path)
	require.NoError(t, err)
	require.Equal(t, path, l.Path())
	read := func() string { b, _ := os.ReadFile(path); return string(b) }
	require.Eventually(t, func() bool { return strings.Contains(read(), "stopped: exit code 0") }, 20*time.Second, 50*time.Millisecond, read())

	// Started again: the second run's output is appended once.
	_, err = cli.ContainerStart(ctx, id, client.ContainerStartOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return strings.Count(read(), "bye") == 2 && strings.Count(read(), "stopped:") == 2 }, 20*time.Second, 50*time.Millisecond, read())
	s := read()
	require.Equal(t, 2, strings.Count(s, "err line"), s)
	require.Equal(t, 2, strings.Count(s, "out "), s)
	require.Contains(t, s, "started again")

	// Removed: the copy ends by itself.
	_, err = cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true})
	require.NoError(t, err)
	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the log copy did not end after the container was removed")
	}
	require.NoError(t, l.Stop())
}

func TestIntegration_Available(t *testing.T) {
	requireDocker(t)
	require.NoError(t, Available(context.Background()))
}

func TestOwner(t *testing.T) {
	o := Owner()
	require.NotEmpty(t, o)
	require.True(t, owner.Alive(o), "this process is alive")
	require.Equal(t, o, Labels("run-1")[LabelOwner])
	require.NotContains(t, Labels(""), LabelOwner)
}
