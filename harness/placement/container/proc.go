package container

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/network"

	"github.com/chaoslab/chaoslab/harness/infra/docker"
	"github.com/chaoslab/chaoslab/harness/infra/limits"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// Start runs a program as a container on the variant's network: chaoslab's
// own agent from the client image, or Command from Image.
func (s *Site) Start(ctx context.Context, prog lab.Program) (lab.Proc, error) {
	pd, err := s.prepare(ctx, prog, false)
	if err != nil {
		return nil, err
	}
	return pd.Start(ctx)
}

// Prepare readies a program to start with others at once: an agent's
// container is started with the agent held until Start releases it (the
// engine starts about three containers a second here); another program's
// container is created.
func (s *Site) Prepare(ctx context.Context, prog lab.Program) (lab.Pending, error) {
	return s.prepare(ctx, prog, prog.Agent != "")
}

// prepare creates a program's container, and starts it with its agent
// held when hold is set.
func (s *Site) prepare(ctx context.Context, prog lab.Program, hold bool) (lab.Pending, error) {
	img, cmd, err := s.image(prog)
	if err != nil {
		return nil, err
	}
	name := s.runID + "-" + prog.Name
	alias := prog.Alias
	if alias == "" {
		alias = prog.Name
	}
	mem := memoryPlan(prog, img)
	lines := &lineSplitter{onStdout: prog.Stdout, log: prog.Stderr}
	if lines.log == nil {
		lines.log = io.Discard
	}
	env := envMap(prog, mem)
	if hold {
		env[lab.HoldEnv] = "1"
	}
	opts := []testcontainers.ContainerCustomizer{
		testcontainers.WithName(name),
		testcontainers.WithCmd(cmd...),
		testcontainers.WithEnv(env),
		testcontainers.WithLabels(docker.MergeLabels(docker.Labels(s.runID), map[string]string{
			docker.LabelComponent: prog.Role, docker.LabelMember: alias,
		})),
		network.WithNetworkName([]string{alias}, s.net.Name),
		testcontainers.WithLogger(docker.SlogPrintf(s.log)),
		testcontainers.WithHostConfigModifier(mem.hostConfig),
	}
	if !hold {
		opts = append(opts, testcontainers.WithNoStart())
	}
	for path, content := range prog.Files {
		opts = append(opts, testcontainers.WithFiles(testcontainers.ContainerFile{Reader: strings.NewReader(content), ContainerFilePath: path, FileMode: 0o644}))
	}
	if prog.HostBinary != "" {
		if err := cachePages(prog.HostBinary); err != nil {
			return nil, fmt.Errorf("start %s: %w", prog.Name, err)
		}
		bind := prog.HostBinary + ":" + prog.HostBinaryAt + ":ro"
		opts = append(opts, testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) { hc.Binds = append(hc.Binds, bind) }))
	}
	if prog.Entrypoint != nil {
		opts = append(opts, testcontainers.WithEntrypoint(prog.Entrypoint...))
	}
	if prog.Limits.Pids > 0 {
		opts = append(opts, docker.WithPidsLimit(int64(prog.Limits.Pids)))
	}
	if prog.Limits.CPUCores > 0 {
		opts = append(opts, docker.WithCPULimit(prog.Limits.CPUCores))
	}
	var held chan struct{}
	if hold {
		held = lines.catchHeld()
	}
	// A create is not cut short: the engine goes on with a container
	// whose caller gave up, and it can leave an endpoint on the run's
	// network that nothing removes (the network then cannot be removed
	// until the engine restarts). The container is stopped with the
	// site's others.
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("create container %s: %w", name, err)
	}
	c, err := testcontainers.Run(context.WithoutCancel(ctx), img, opts...)
	if err != nil {
		if c != nil {
			_ = c.Terminate(context.WithoutCancel(ctx))
		}
		return nil, fmt.Errorf("create container %s: %w", name, err)
	}
	pd := &pending{s: s, c: c, name: name, mem: mem, prog: prog, lines: lines}
	if prog.Stdout != nil || prog.Stderr != nil || hold {
		// Its output, each line once, from the first (FollowStreams).
		if pd.logs, err = docker.FollowStreams(ctx, c.GetContainerID(), lines.stream(testcontainers.StdoutLog), lines.stream(testcontainers.StderrLog)); err != nil {
			_ = c.Terminate(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("create container %s: %w", name, err)
		}
	}
	if hold {
		return pd.held(ctx, held)
	}
	return pd, nil
}

// pending is a created container.
type pending struct {
	s     *Site
	c     *testcontainers.DockerContainer
	name  string
	mem   *memPlan
	prog  lab.Program
	lines *lineSplitter
	logs  *docker.LogFollower // nil when its output goes nowhere
}

// Start starts the container and returns once it runs; a container that
// does not start is removed.
func (pd *pending) Start(ctx context.Context) (lab.Proc, error) {
	if err := pd.c.Start(ctx); err != nil {
		_ = pd.c.Terminate(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("start container %s: %w", pd.name, err)
	}
	p, err := pd.running(ctx)
	if err != nil {
		return nil, err
	}
	pd.s.started(p)
	return p, nil
}

// running is the started container as a process of the site: located,
// watched and stopped with the site.
func (pd *pending) running(ctx context.Context) (*proc, error) {
	s, c := pd.s, pd.c
	p := &proc{c: &docker.Container{Container: c}, name: pd.name, mem: pd.mem, prog: pd.prog, lines: pd.lines, logs: pd.logs, done: make(chan struct{}), started: time.Now()}
	if err := p.locate(ctx, s.net.Name); err != nil {
		_ = c.Terminate(context.WithoutCancel(ctx))
		return nil, err
	}
	go p.watch()
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	return p, nil
}

// started tells the site's watcher that p runs.
func (s *Site) started(p *proc) {
	s.mu.Lock()
	onStart := s.onStart
	s.mu.Unlock()
	if onStart != nil {
		onStart(p.prog, p)
	}
}

// image is the image and command of a program.
func (s *Site) image(prog lab.Program) (string, []string, error) {
	if prog.Agent == "" {
		if prog.Image == "" {
			return "", nil, fmt.Errorf("start %s: a command in a container needs its image", prog.Name)
		}
		return prog.Image, prog.Command, nil
	}
	img := s.Image(lab.AgentImage)
	if img == "" {
		return "", nil, fmt.Errorf("start %s: no client image was prepared", prog.Name)
	}
	args, err := prog.AgentArgs()
	return img, args, err
}

func envMap(prog lab.Program, mem *memPlan) map[string]string {
	env := map[string]string{"GOTRACEBACK": "single"}
	for _, kv := range prog.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	if mem.lockText {
		env[limits.LockTextEnv] = "1"
	}
	return env
}

// proc is one container.
type proc struct {
	c       *docker.Container
	name    string
	mem     *memPlan
	prog    lab.Program
	lines   *lineSplitter
	logs    *docker.LogFollower
	started time.Time
	pid     int
	cgroup  string // its pids cgroup
	memcg   string // its memory cgroup
	ip      string
	done    chan struct{}
	exit    lab.ProcExit

	mu       sync.Mutex
	stats    lab.ProcStats
	stopping bool
	released bool
}

// locate finds the container's process and its address on the network:
// the harness reaches it there (this machine routes to its bridges), not
// through published ports that a docker-proxy would relay.
func (p *proc) locate(ctx context.Context, net string) error {
	if ins, err := p.c.Inspect(ctx); err == nil && ins.State != nil {
		p.pid = ins.State.Pid
		p.cgroup = cgroupDir(p.pid, "pids")
		p.memcg = cgroupDir(p.pid, "memory")
	}
	ip, err := p.c.IP(ctx, net)
	if err != nil || !ip.IsValid() {
		return fmt.Errorf("find address of %s on %s: %v", p.name, net, err)
	}
	p.ip = ip.String()
	p.readCounters()
	return nil
}

func (p *proc) Desc() string { return "container " + p.name }
func (p *proc) Pid() int     { return p.pid }

// Host is its address on the variant's network (a reconnection changes
// it).
func (p *proc) Host() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ip
}

func (p *proc) setIP(ip string) {
	p.mu.Lock()
	p.ip = ip
	p.mu.Unlock()
}

// Signal sends sig to the container's process (docker kill --signal).
func (p *proc) Signal(sig syscall.Signal) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	cli, err := docker.Client(context.Background())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = cli.ContainerKill(ctx, p.c.GetContainerID(), client.ContainerKillOptions{Signal: strconv.Itoa(int(sig))})
	if err != nil && !docker.IsNotFound(err) {
		return fmt.Errorf("signal %s: %w", p.name, err)
	}
	return nil
}

func (p *proc) Pause() error  { return p.c.Pause(context.Background()) }
func (p *proc) Resume() error { return p.c.Unpause(context.Background()) }

func (p *proc) Stats() lab.ProcStats {
	select {
	case <-p.done:
	default:
		p.readCounters()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// readCounters reads /proc and the container's pids cgroup.
func (p *proc) readCounters() {
	ps, perr := limits.ProcStats(p.pid)
	cur, refused, ok := readPids(p.cgroup)
	charged, chargedOK := readCharged(p.memcg)
	p.mu.Lock()
	defer p.mu.Unlock()
	if perr == nil {
		p.stats.RSSBytes, p.stats.Threads, p.stats.CPUSeconds = ps.RSSBytes, ps.Threads, ps.CPUSeconds
	}
	if ok {
		p.stats.Pids, p.stats.PidsRefused = cur, max(p.stats.PidsRefused, refused)
	}
	if chargedOK {
		p.stats.MemoryChargedBytes = charged
		p.stats.MemoryPeakBytes = max(p.stats.MemoryPeakBytes, charged, readPeak(p.memcg))
	}
	p.stats.MemoryLimitBytes, p.stats.MemoryNote = p.mem.limitBytes(), p.mem.note()
}

// watch polls the container's state until it ended.
func (p *proc) watch() {
	defer close(p.done)
	for {
		time.Sleep(250 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ins, err := p.c.Inspect(ctx)
		cancel()
		if err != nil {
			if docker.IsNotFound(err) {
				p.exit = lab.ProcExit{Code: -1, Err: err, How: "its container is gone", Stopped: p.isStopping()}
				return
			}
			continue
		}
		st := ins.State
		if st == nil || st.Running || st.Paused {
			p.readCounters()
			p.mu.Lock()
			since := time.Since(p.started)
			p.mu.Unlock()
			p.mem.settle(p.c, p.prog, since)
			continue
		}
		// Give the log stream a moment to deliver the last lines.
		time.Sleep(300 * time.Millisecond)
		p.exit = describeExit(st.ExitCode, st.OOMKilled, p.isStopping(), p.mem)
		return
	}
}

func (p *proc) isStopping() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopping
}

func describeExit(code int, oom, stopped bool, mem *memPlan) lab.ProcExit {
	e := lab.ProcExit{Code: code, Stopped: stopped}
	if code > 128 {
		e.Signal = syscall.Signal(code - 128).String()
	}
	switch {
	case oom:
		e.OOM, e.Signal = true, "killed"
		e.How = fmt.Sprintf("killed by the kernel OOM killer (container state OOMKilled, exit %d, %s)", code, mem.note())
	case stopped:
		e.How = "stopped by the harness"
	case code == 137:
		e.How = "killed by SIGKILL (exit 137, not an OOM kill by the container state)"
	default:
		e.How = fmt.Sprintf("exited with status %d", code)
	}
	return e
}

func (p *proc) Done() <-chan struct{} { return p.done }

// ended says whether the container has stopped.
func (p *proc) ended() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}
func (p *proc) Exit() lab.ProcExit { <-p.done; return p.exit }

// Stop stops the container (SIGTERM, SIGKILL after grace) and waits.
func (p *proc) Stop(grace time.Duration) lab.ProcExit {
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
	select {
	case <-p.done:
		return p.exit
	default:
	}
	_ = p.c.Unpause(context.Background()) // a paused container cannot stop
	g := max(grace, time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), g+30*time.Second)
	defer cancel()
	_ = p.c.Stop(ctx, &g)
	<-p.done
	return p.exit
}

// Release removes the container (which also ends its log stream).
func (p *proc) Release() error {
	<-p.done
	p.mu.Lock()
	if p.released {
		p.mu.Unlock()
		return nil
	}
	p.released = true
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := p.c.Terminate(ctx)
	if p.logs != nil {
		// The follower ends with the container; lines still on their way
		// are written first.
		_ = p.logs.Wait(5 * time.Second)
	}
	p.lines.flush()
	if err != nil && !docker.IsNotFound(err) {
		return fmt.Errorf("remove %s: %w", p.name, err)
	}
	return nil
}

// readPids reads a pids cgroup: tasks now, clones refused at the limit.
func readPids(dir string) (cur int64, refused uint64, ok bool) {
	if dir == "" {
		return 0, 0, false
	}
	b, err := os.ReadFile(filepath.Join(dir, "pids.current"))
	if err != nil {
		return 0, 0, false
	}
	cur, _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if b, err := os.ReadFile(filepath.Join(dir, "pids.events")); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, found := strings.CutPrefix(l, "max "); found {
				refused, _ = strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			}
		}
	}
	return cur, refused, true
}

// readCharged reads the memory the kernel charges to a container's cgroup:
// the figure the engine reports as its memory usage and the limit is
// judged against (v1 memory.usage_in_bytes, v2 memory.current).
func readCharged(dir string) (int64, bool) {
	if dir == "" {
		return 0, false
	}
	for _, f := range []string{"memory.current", "memory.usage_in_bytes"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return n, err == nil
	}
	return 0, false
}

// readPeak reads the most memory ever charged to a container's cgroup
// (v1 memory.max_usage_in_bytes, v2 memory.peak); 0 when unknown.
func readPeak(dir string) int64 {
	for _, f := range []string{"memory.peak", "memory.max_usage_in_bytes"} {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err == nil {
			n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			return n
		}
	}
	return 0
}

// cgroupDir finds a process's cgroup of one controller (pids, memory): v1's
// hierarchy of that controller or the v2 unified one.
func cgroupDir(pid int, controller string) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case strings.Contains(","+parts[1]+",", ","+controller+","):
			return filepath.Join("/sys/fs/cgroup", controller, parts[2])
		case parts[0] == "0" && parts[1] == "":
			return filepath.Join("/sys/fs/cgroup", parts[2])
		}
	}
	return ""
}

// lineSplitter turns a container's log chunks into lines: stdout lines go
// to onStdout (the samples), stderr to the program's log.
type lineSplitter struct {
	mu       sync.Mutex
	onStdout func([]byte)
	log      io.Writer
	out      bytes.Buffer
}

func (s *lineSplitter) Accept(l testcontainers.Log) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.LogType == testcontainers.StderrLog || s.onStdout == nil {
		_, _ = s.log.Write(l.Content)
		return
	}
	s.out.Write(l.Content)
	for {
		i := bytes.IndexByte(s.out.Bytes(), '\n')
		if i < 0 {
			return
		}
		line := append([]byte(nil), s.out.Next(i + 1)[:i]...)
		s.onStdout(line)
	}
}

// stream is a writer of one of the container's streams into s.
func (s *lineSplitter) stream(typ string) io.Writer { return streamWriter{s, typ} }

type streamWriter struct {
	s   *lineSplitter
	typ string
}

func (w streamWriter) Write(p []byte) (int, error) {
	w.s.Accept(testcontainers.Log{LogType: w.typ, Content: append([]byte(nil), p...)})
	return len(p), nil
}

func (s *lineSplitter) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.out.Len() > 0 && s.onStdout != nil {
		s.onStdout(bytes.TrimSpace(s.out.Bytes()))
		s.out.Reset()
	}
}

// cachePages reads a file once, so that its pages are in this machine's
// page cache (charged there) before a container maps them.
func cachePages(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	if _, err := io.Copy(io.Discard, f); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}
