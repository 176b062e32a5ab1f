package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// programContainer is the name of a program pod's one container.
const programContainer = "program"

// LabelProgram marks the pod of a program (a client, an agent): its
// value is the pod's name, so the watch tells it from a server's.
const LabelProgram = "org.chaoslab.program"

// program is a program started on the site as a pod of its own, on the
// network of a node (the nodes in turn), its limits the container's.
type program struct {
	*podProc
	site *Site
	prog lab.Program
	node node

	mu       sync.Mutex
	stopLogs func()
	logsDone <-chan struct{}
}

// Start runs a program as a pod: chaoslab's agent from the client
// image, or Command from Image; its memory and CPU limits are the
// container's (the kubelet's OOM kill is read from the pod's status,
// OOMKilled); it returns once the container runs. A thread limit is
// refused: Kubernetes limits pids per node, not per container.
func (s *Site) Start(ctx context.Context, prog lab.Program) (lab.Proc, error) {
	if prog.Limits.Pids > 0 {
		return nil, fmt.Errorf("start %s: a limit of %d threads: %s", prog.Name, prog.Limits.Pids, s.p.RefusesLimit("pids"))
	}
	img, args, err := s.programImage(prog)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, fmt.Errorf("start %s: the site is closed", prog.Name)
	}
	n := s.nodes[s.laidOut%len(s.nodes)]
	s.laidOut++
	pg := &program{site: s, prog: prog, node: n}
	name := podName(prog.Name)
	s.programs[name] = pg
	s.mu.Unlock()
	cm, spec := pg.objects(name, img, args)
	if cm != nil {
		if err := s.k.apply(ctx, s.ns, cm); err != nil {
			return nil, fmt.Errorf("start %s: %w", prog.Name, err)
		}
	}
	out, err := s.k.run(ctx, mustJSON(spec), "create", "-n", s.ns, "-f", "-", "-o", "json")
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", prog.Name, err)
	}
	var created pod
	if err := json.Unmarshal(out, &created); err != nil {
		return nil, fmt.Errorf("start %s: %w", prog.Name, err)
	}
	pp := s.claim(name, created.Metadata.UID)
	select {
	case <-pp.started:
	case <-ctx.Done():
		return nil, fmt.Errorf("start %s: pod %s/%s not running: %w", prog.Name, s.ns, name, ctx.Err())
	}
	if err := pp.startErr(); err != nil {
		return nil, fmt.Errorf("start %s: %w", prog.Name, err)
	}
	pg.follow(context.WithoutCancel(ctx))
	return pg, nil
}

// claim makes the pod uid the program's and gives it what the watch
// said of it before.
func (s *Site) claim(name, uid string) *podProc {
	pp := newPodProc(s.ns, name, programContainer, uid)
	s.mu.Lock()
	pg := s.programs[name]
	pg.podProc = pp
	ev := s.early[uid]
	delete(s.early, uid)
	s.mu.Unlock()
	if ev != nil {
		pp.update("MODIFIED", ev)
	}
	return pp
}

// programImage is the image and arguments of a program.
func (s *Site) programImage(prog lab.Program) (string, []string, error) {
	if prog.Agent == "" {
		if prog.Image == "" {
			return "", nil, fmt.Errorf("start %s: a command in a pod needs its image", prog.Name)
		}
		return prog.Image, prog.Command, nil
	}
	img := s.p.Image(lab.AgentImage)
	if img == "" {
		return "", nil, fmt.Errorf("start %s: no client image was prepared", prog.Name)
	}
	args, err := prog.AgentArgs()
	return img, args, err
}

// objects are the program's ConfigMap of files (nil: none) and its pod.
func (pg *program) objects(name, img string, args []string) (cm, pd map[string]any) {
	p := pg.prog
	labels := map[string]string{LabelManaged: "true", LabelRun: labelValue(pg.site.runID), LabelProgram: name, LabelRole: labelValue(p.Role)}
	env := []map[string]any{{"name": "GOTRACEBACK", "value": "single"}}
	for _, kv := range p.Env {
		k, v, _ := cutEnv(kv)
		env = append(env, map[string]any{"name": k, "value": v})
	}
	c := map[string]any{"name": programContainer, "image": img, "imagePullPolicy": "Never",
		"env": env, "resources": resources(p.Limits)}
	if len(args) > 0 {
		c["args"] = args
	}
	if p.Entrypoint != nil {
		c["command"] = p.Entrypoint
	}
	var volumes, mounts []map[string]any
	cm, vol, fm := fileObjects(name, p.Files, labels)
	if cm != nil {
		volumes, mounts = append(volumes, vol), fm
	}
	if p.HostBinary != "" {
		v, m := hostBinary(p.HostBinary, p.HostBinaryAt)
		volumes, mounts = append(volumes, v), append(mounts, m)
	}
	if len(mounts) > 0 {
		c["volumeMounts"] = mounts
	}
	pd = map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "labels": labels},
		"spec": map[string]any{
			"nodeName":                      pg.node.name,
			"hostNetwork":                   true,
			"dnsPolicy":                     "Default",
			"restartPolicy":                 "Never",
			"terminationGracePeriodSeconds": 5,
			"enableServiceLinks":            false,
			"automountServiceAccountToken":  false,
			"containers":                    []any{c},
			"volumes":                       volumes,
		},
	}
	return cm, pd
}

// follow copies the program's output: its standard output line by line
// to Stdout and its standard error to Stderr, each stream on its own
// where the cluster serves them apart (PodLogsQuerySplitStreams), else
// both together, a line that is a JSON object going to Stdout (what
// chaoslab's agents print there) and every other to Stderr.
func (pg *program) follow(ctx context.Context) {
	p := pg.prog
	if p.Stdout == nil && p.Stderr == nil {
		return
	}
	stderr := p.Stderr
	if stderr == nil {
		stderr = io.Discard
	}
	done, stop, err := followOutput(ctx, pg.site.k, pg.ns, pg.name, programContainer, pg.site.p.splitLogs(), p.Stdout, stderr)
	if err != nil {
		pg.site.log.Warn("follow program output", "program", p.Name, "err", err)
		return
	}
	pg.mu.Lock()
	pg.stopLogs, pg.logsDone = stop, done
	pg.mu.Unlock()
}

// observe takes an event of the program's pod.
func (pg *program) observe(typ string, p *pod) {
	pg.site.mu.Lock()
	pp := pg.podProc
	if pp == nil || pp.uid != p.Metadata.UID {
		pg.site.early[p.Metadata.UID] = p
		pg.site.mu.Unlock()
		return
	}
	pg.site.mu.Unlock()
	pp.update(typ, p)
}

// Host: a program runs on its node's network.
func (pg *program) Host() string { return pg.node.ip }

// Signal: SIGTERM and SIGKILL delete the pod (the kubelet sends SIGTERM,
// then SIGKILL after the grace, at least a second); other signals are not
// sent here yet.
func (pg *program) Signal(sig syscall.Signal) error {
	grace := 0
	switch sig {
	case syscall.SIGTERM:
		grace = 5
	case syscall.SIGKILL:
		grace = 1
	default:
		return fmt.Errorf("signal %s to %s: %w", sig, pg.Desc(), errNotYet)
	}
	pg.markStopped()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	_, err := pg.site.k.run(ctx, nil, "delete", "pod", pg.name, "-n", pg.ns, "--grace-period="+strconv.Itoa(grace), "--wait=false")
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("signal %s to %s: %w", sig, pg.Desc(), err)
	}
	return nil
}

// Stop deletes the pod (SIGTERM, SIGKILL after grace) and waits for its
// end.
func (pg *program) Stop(grace time.Duration) lab.ProcExit {
	secs := max(1, int(grace.Round(time.Second)/time.Second))
	pg.markStopped()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout+grace)
	defer cancel()
	_, err := pg.site.k.runFor(ctx, opTimeout+grace, nil, "delete", "pod", pg.name, "-n", pg.ns, "--grace-period="+strconv.Itoa(secs), "--wait=true")
	if err != nil && !isNotFound(err) {
		pg.site.log.Warn("stop program", "program", pg.prog.Name, "err", err)
	}
	select {
	case <-pg.done:
	case <-time.After(10 * time.Second):
		pg.end(lab.ProcExit{How: "its pod was deleted", Stopped: true})
	}
	return pg.Exit()
}

// Release waits a moment for the rest of the program's output, stops
// following it and deletes the pod of a program that ended by itself.
func (pg *program) Release() error {
	pg.mu.Lock()
	stop, done := pg.stopLogs, pg.logsDone
	pg.stopLogs = nil
	pg.mu.Unlock()
	if done != nil {
		select {
		case <-done:
		case <-time.After(2 * time.Second):
		}
	}
	if stop != nil {
		stop()
	}
	pg.site.mu.Lock()
	delete(pg.site.programs, pg.name)
	pg.site.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	_, err := pg.site.k.run(ctx, nil, "delete", "pod", pg.name, "-n", pg.ns, "--grace-period=1", "--wait=false")
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("release %s: %w", pg.Desc(), err)
	}
	return nil
}

var _ lab.Proc = (*program)(nil)

// hostBinary is a program's build on the node (this machine's, on the
// test cluster) as a volume and its mount at at, as the container
// placement binds it.
func hostBinary(path, at string) (volume, mount map[string]any) {
	return map[string]any{"name": "host-binary", "hostPath": map[string]any{"path": path, "type": "File"}},
		map[string]any{"name": "host-binary", "mountPath": at, "readOnly": true}
}

// RefusesLimit: a pod's processes and threads are limited per node (the
// kubelet's podPidsLimit), not per container.
func (p *Placement) RefusesLimit(kind string) string {
	if kind == "pids" {
		return "the kubernetes placement cannot hold one program to a number of threads (pids): Kubernetes limits them per node (the kubelet's podPidsLimit), not per container"
	}
	return ""
}

// errNoController: the lab drives the cluster from outside it (through
// the API server): its pods have no route to a listener of this process.
var errNoController = errors.New("programs on the kubernetes placement cannot reach a listener of the lab's own process: the lab drives the cluster from outside it, through its API server")

// ReachesController: they cannot (errNoController).
func (p *Placement) ReachesController() error { return errNoController }

// ControllerHost: there is none (errNoController).
func (s *Site) ControllerHost(context.Context) (string, error) { return "", errNoController }
