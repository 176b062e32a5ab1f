package kubernetes

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/harness/infra/syncw"
)

// forward is a `kubectl port-forward` of a pod's ports to free ports on
// 127.0.0.1: how the harness reaches a server, never by its address.
type forward struct {
	cmd   *exec.Cmd
	local map[int]int // the pod's port -> the local one
	done  chan struct{}

	mu   sync.Mutex
	tail []string // the last lines it said on stderr
}

// websocketsEnv turns kubectl's port-forward over websockets on or off.
const websocketsEnv = "KUBECTL_PORT_FORWARD_WEBSOCKETS"

var forwarding = regexp.MustCompile(`^Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)`)

// startForward forwards ports of pod and returns once each is forwarded
// (or the forward failed); it runs until ctx ends or the pod goes.
func startForward(ctx context.Context, k kubectl, ns, pod string, ports []int) (*forward, error) {
	args := []string{"port-forward", "-n", ns, "--address", "127.0.0.1", "pod/" + pod}
	for _, p := range ports {
		args = append(args, ":"+strconv.Itoa(p))
	}
	cmd := k.command(ctx, args...)
	// kubectl 1.31+ tunnels a forward over websockets; the server's
	// close of a connection was not seen through it (a ZooKeeper
	// four-letter word's answer never ended): SPDY, unless asked.
	if os.Getenv(websocketsEnv) == "" {
		cmd.Env = append(os.Environ(), websocketsEnv+"=false")
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	errp, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("port-forward %s: %w", pod, err)
	}
	f := &forward{cmd: cmd, local: map[int]int{}, done: make(chan struct{})}
	mapped := make(chan struct{})
	go func() {
		// Every line, read to the end: it prints one per connection.
		sc := bufio.NewScanner(out)
		n := 0
		for sc.Scan() {
			if m := forwarding.FindStringSubmatch(sc.Text()); m != nil {
				l, _ := strconv.Atoi(m[1])
				r, _ := strconv.Atoi(m[2])
				f.mu.Lock()
				f.local[r] = l
				f.mu.Unlock()
				if n++; n == len(ports) {
					close(mapped)
				}
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		sc := bufio.NewScanner(errp)
		for sc.Scan() {
			f.mu.Lock()
			f.tail = append(f.tail, sc.Text())
			if len(f.tail) > 5 {
				f.tail = f.tail[1:]
			}
			f.mu.Unlock()
		}
	}()
	go func() {
		<-stderrDone
		_ = cmd.Wait()
		close(f.done)
	}()
	select {
	case <-mapped:
		return f, nil
	case <-f.done:
		return nil, fmt.Errorf("port-forward %s: %s", pod, f.said())
	case <-time.After(30 * time.Second):
		f.stop()
		return nil, fmt.Errorf("port-forward %s: no port forwarded after 30 s: %s", pod, f.said())
	}
}

// said is what the forward said on stderr last.
func (f *forward) said() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.tail) == 0 {
		return "ended"
	}
	return strings.Join(f.tail, "; ")
}

// port is the local port a pod's port is forwarded to (0: none, or the
// forward has ended).
func (f *forward) port(remote int) int {
	if f == nil {
		return 0
	}
	select {
	case <-f.done:
		return 0
	default:
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.local[remote]
}

// stop ends the forward and waits for it.
func (f *forward) stop() {
	if f == nil {
		return
	}
	if f.cmd.Process != nil {
		_ = f.cmd.Process.Kill()
	}
	<-f.done
}

// followLogs appends what a pod's container prints (stdout and stderr,
// as the kubelet keeps them) to path, until the container ends or ctx
// does; the returned channel is closed then.
func followLogs(ctx context.Context, k kubectl, ns, pod, container, path string) (<-chan struct{}, func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	cmd := k.command(ctx, "logs", "-f", "-n", ns, "pod/"+pod, "-c", container)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		cancel()
		f.Close()
		return nil, nil, fmt.Errorf("follow logs of %s: %w", pod, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(done)
	}()
	return done, cancel, nil
}

// splitStreams is the feature gate under which the API server serves a
// container's standard output and error apart (alpha since 1.32).
const splitStreams = "PodLogsQuerySplitStreams"

// featureEnabled reads from the API server's metrics whether a feature
// gate is on.
func featureEnabled(ctx context.Context, k kubectl, gate string) (bool, error) {
	out, err := k.run(ctx, nil, "get", "--raw", "/metrics")
	if err != nil {
		return false, err
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "kubernetes_feature_enabled{") && strings.Contains(line, `name="`+gate+`"`) {
			f := strings.Fields(line)
			return f[len(f)-1] == "1", nil
		}
	}
	return false, sc.Err()
}

// followOutput copies a container's output from its first line until it
// ends or stop is called: each standard output line to stdout, standard
// error to stderr. With split, the API server serves the two streams
// apart; else they come together, and a line that is a JSON object goes
// to stdout (what chaoslab's agents print there), every other to stderr.
// A nil stdout sends every line to stderr.
func followOutput(ctx context.Context, k kubectl, ns, pod, container string, split bool, stdout func([]byte), stderr io.Writer) (<-chan struct{}, func(), error) {
	ctx, cancel := context.WithCancel(ctx)
	errw := syncw.New(stderr)
	toOut := func(line []byte) {
		if stdout != nil {
			stdout(line)
			return
		}
		errw.Write(append(line, '\n'))
	}
	logURL := func(stream string) string {
		return "/api/v1/namespaces/" + ns + "/pods/" + pod + "/log?container=" + container + "&follow=true&stream=" + stream
	}
	type source struct {
		args []string
		line func([]byte)
	}
	var sources []source
	if split {
		sources = []source{
			{[]string{"get", "--raw", logURL("Stdout")}, toOut},
			{[]string{"get", "--raw", logURL("Stderr")}, func(l []byte) { errw.Write(append(l, '\n')) }},
		}
	} else {
		sources = []source{{[]string{"logs", "-f", "-n", ns, "pod/" + pod, "-c", container}, func(l []byte) {
			if stdout != nil && json.Valid(l) && bytes.HasPrefix(bytes.TrimSpace(l), []byte("{")) {
				stdout(l)
				return
			}
			errw.Write(append(l, '\n'))
		}}}
	}
	var wg sync.WaitGroup
	for _, src := range sources {
		cmd := k.command(ctx, src.args...)
		out, err := cmd.StdoutPipe()
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			cancel()
			wg.Wait()
			return nil, nil, fmt.Errorf("follow output of %s: %w", pod, err)
		}
		wg.Go(func() {
			rd := bufio.NewReaderSize(out, 64<<10)
			for {
				line, err := rd.ReadBytes('\n')
				if len(line) > 0 {
					src.line(bytes.TrimSuffix(line, []byte("\n")))
				}
				if err != nil {
					break
				}
			}
			_ = cmd.Wait()
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return done, cancel, nil
}
