package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/chaoslab/chaoslab/harness/infra/netcut"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/servers"
)

// serverContainer is the name of a server pod's one container.
const serverContainer = "server"

// errNotYet is what a fault this placement does not do yet returns.
var errNotYet = errors.New("not on the kubernetes placement yet (issue 27, step 3)")

// Layout: the server on the network of a node (servers in turn over the
// Ready nodes), at that node's InternalIP, on ports of the nodes' network
// no pod declares; its files in /conf and /data in its pod (the official
// images' folders), its output copied to the variant's log folder.
func (s *Site) Layout(spec lab.ServerSpec) (lab.ServerLayout, error) {
	s.mu.Lock()
	n := s.nodes[s.laidOut%len(s.nodes)]
	s.laidOut++
	if spec.User != "" {
		if s.users == nil {
			s.users = map[string]string{}
		}
		s.users[spec.Name] = spec.User
	}
	s.mu.Unlock()
	l := lab.ServerLayout{Name: spec.Name, Role: spec.Role, Host: n.ip, Bind: "0.0.0.0", Ports: map[string]int{},
		ConfDir: "/conf", DataDir: "/data", Log: filepath.Join(s.dir, "logs", spec.Name+".log")}
	for _, p := range spec.Ports {
		l.Ports[p.Name] = s.port()
	}
	return l, nil
}

// StartServer creates the server's pod from its image, with its files,
// on the node its layout names, forwards its ports to this machine and
// waits until it serves.
func (s *Site) StartServer(ctx context.Context, l lab.ServerLayout, p lab.ServerProgram) (lab.Server, error) {
	img := s.p.Image(p.Image)
	if img == "" {
		return nil, fmt.Errorf("start %s: no %s image was prepared", l.Name, p.Image)
	}
	n, ok := s.nodeAt(l.Host)
	if !ok {
		return nil, fmt.Errorf("start %s: no node at %s", l.Name, l.Host)
	}
	if err := os.MkdirAll(filepath.Dir(l.Log), 0o755); err != nil {
		return nil, err
	}
	sv := &server{Base: servers.NewBase(l, p), site: s, node: n, image: img, pod: podName(l.Name), seen: map[string]*pod{}}
	if s.p.storageClass() != "" {
		sv.claim = claimName(sv.pod, 0)
	}
	var ports []int
	for _, p := range l.Ports {
		ports = append(ports, p)
	}
	sort.Ints(ports)
	r, err := newRelay(s.k, s.ns, ports)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", l.Name, err)
	}
	sv.relay = r
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, fmt.Errorf("start %s: the site is closed", l.Name)
	}
	s.servers[l.Name] = sv
	s.mu.Unlock()
	if err := sv.start(ctx, false); err != nil {
		return nil, err
	}
	return sv, nil
}

func (s *Site) nodeAt(ip string) (node, bool) {
	for _, n := range s.nodes {
		if n.ip == ip {
			return n, true
		}
	}
	return node{}, false
}

// podName is a server's pod: its name as a DNS label.
func podName(name string) string { return NamespaceName(name)[len("chaoslab-"):] }

// server is one server's pod: replaced by a new pod of the same name (no
// data); its ports forwarded to this machine while it runs.
type server struct {
	*servers.Base
	site  *Site
	node  node
	image string
	pod   string

	mu       sync.Mutex
	proc     *podProc
	relay    *relay
	stopLogs func()
	seen     map[string]*pod // the last event of each pod uid not yet claimed
	detached bool
	frozen   *freezer // the pod's cgroup while the lab has it frozen
	// claim is the PersistentVolumeClaim of its folders ("": the pod's
	// own emptyDir), kept across kills, replaced by Replace; claimed says
	// it was created.
	claim   string
	claims  int
	claimed bool
	cutIn   netcut.Netns // the namespace of its cut (0: not cut)

	// Timings of the last start: created (the API accepted the pod),
	// running (its container runs), forwarded, serving.
	Timings struct{ Created, Running, Forwarded, Serving time.Duration }
}

// start creates the server's files and pod and waits until it runs and
// serves (answers, for a replacement: up).
func (sv *server) start(ctx context.Context, up bool) error {
	l := sv.Layout()
	began := time.Now()
	off := logSize(l.Log)
	cm, spec := sv.objects()
	if err := sv.makeClaim(ctx); err != nil {
		return fmt.Errorf("start %s: %w", l.Name, err)
	}
	if cm != nil {
		if err := sv.site.k.apply(ctx, sv.site.ns, cm); err != nil {
			return fmt.Errorf("start %s: %w", l.Name, err)
		}
	}
	out, err := sv.site.k.run(ctx, mustJSON(spec), "create", "-n", sv.site.ns, "-f", "-", "-o", "json")
	if err != nil {
		return fmt.Errorf("start %s: %w", l.Name, err)
	}
	var created pod
	if err := json.Unmarshal(out, &created); err != nil {
		return fmt.Errorf("start %s: %w", l.Name, err)
	}
	pp := newPodProc(sv.site.ns, sv.pod, serverContainer, created.Metadata.UID)
	sv.mu.Lock()
	sv.proc = pp
	if ev, ok := sv.seen[pp.uid]; ok {
		delete(sv.seen, pp.uid)
		pp.update("MODIFIED", ev)
	}
	sv.seen = map[string]*pod{}
	sv.Timings.Created = time.Since(began)
	sv.mu.Unlock()
	select {
	case <-pp.started:
	case <-ctx.Done():
		return fmt.Errorf("start %s: pod %s/%s not running: %w", l.Name, sv.site.ns, sv.pod, ctx.Err())
	}
	if err := pp.startErr(); err != nil {
		return fmt.Errorf("start %s: %w", l.Name, err)
	}
	sv.mu.Lock()
	sv.Timings.Running = time.Since(began)
	cut := sv.cutIn
	sv.mu.Unlock()
	if cut != 0 {
		// Cut off when it stopped: its new container is cut off too.
		if err := sv.Reconnect(ctx); err != nil {
			return fmt.Errorf("start %s: %w", l.Name, err)
		}
		if err := sv.Disconnect(ctx); err != nil {
			return fmt.Errorf("start %s: %w", l.Name, err)
		}
	}
	// The forward and the log copy live as long as the pod, not ctx.
	bg := context.WithoutCancel(ctx)
	if done, stop, err := followLogs(bg, sv.site.k, sv.site.ns, sv.pod, serverContainer, l.Log); err == nil {
		_ = done
		sv.mu.Lock()
		sv.stopLogs = stop
		sv.mu.Unlock()
	} else {
		sv.site.log.Warn("follow server log", "server", l.Name, "err", err)
	}
	go func() {
		// A container that ends by itself is no longer forwarded to.
		<-pp.done
		if sv.current() == pp {
			sv.relay.detach()
		}
	}()
	if err := sv.relay.attach(sv.pod); err != nil {
		return fmt.Errorf("start %s: %w", l.Name, err)
	}
	sv.mu.Lock()
	sv.Timings.Forwarded = time.Since(began)
	sv.mu.Unlock()
	if err := sv.WaitReady(ctx, sv, pp, off, up); err != nil {
		return err
	}
	sv.mu.Lock()
	sv.Timings.Serving = time.Since(began)
	sv.mu.Unlock()
	sv.site.log.Info("kubernetes: server serving", "server", l.Name, "pod", sv.site.ns+"/"+sv.pod, "node", sv.node.name,
		"created", sv.Timings.Created.Round(time.Millisecond), "running", sv.Timings.Running.Round(time.Millisecond),
		"forwarded", sv.Timings.Forwarded.Round(time.Millisecond), "serving", sv.Timings.Serving.Round(time.Millisecond))
	return nil
}

// objects are the server's ConfigMap of files (nil: it has none) and its
// pod, as the API takes them.
func (sv *server) objects() (cm, pd map[string]any) {
	l, p := sv.Layout(), sv.Program()
	labels := map[string]string{LabelManaged: "true", LabelRun: labelValue(sv.site.runID), LabelMember: l.Name, LabelRole: labelValue(l.Role)}
	var env []map[string]any
	for _, kv := range append(append([]string(nil), p.Env...), p.ImageEnv...) {
		k, v, _ := cutEnv(kv)
		env = append(env, map[string]any{"name": k, "value": v})
	}
	var ports []map[string]any
	names := make([]string, 0, len(l.Ports))
	for n := range l.Ports {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		port := map[string]any{"containerPort": l.Ports[n], "hostPort": l.Ports[n], "protocol": "TCP"}
		if portName.MatchString(n) {
			port["name"] = n
		}
		ports = append(ports, port)
	}
	c := map[string]any{
		"name": serverContainer, "image": sv.image, "imagePullPolicy": "Never",
		"env": env, "ports": ports, "resources": resources(sv.Limits()),
	}
	if p.ImageEntrypoint != nil {
		c["command"] = p.ImageEntrypoint
	}
	if p.ImageArgs != nil {
		c["args"] = p.ImageArgs
	}
	// Its folders are its claim's (kept across kills; a replacement gets
	// a new claim) or, without a StorageClass, the pod's own; its files
	// mounted one by one from its ConfigMap.
	var volumes, mounts []map[string]any
	sv.mu.Lock()
	claim := sv.claim
	sv.mu.Unlock()
	if claim != "" {
		volumes = append(volumes, map[string]any{"name": "data", "persistentVolumeClaim": map[string]any{"claimName": claim}})
	}
	for i, dir := range uniq(l.ConfDir, l.DataDir) {
		v := "dir" + strconv.Itoa(i)
		if claim != "" {
			mounts = append(mounts, map[string]any{"name": "data", "mountPath": dir, "subPath": v})
			continue
		}
		volumes = append(volumes, map[string]any{"name": v, "emptyDir": map[string]any{}})
		mounts = append(mounts, map[string]any{"name": v, "mountPath": dir})
	}
	cm, vol, fm := fileObjects(sv.pod, sv.Files(), labels)
	if cm != nil {
		volumes, mounts = append(volumes, vol), append(mounts, fm...)
	}
	if p.HostBinary != "" {
		v, m := hostBinary(p.HostBinary, p.HostBinaryAt)
		volumes, mounts = append(volumes, v), append(mounts, m)
	}
	c["volumeMounts"] = mounts
	var inits []any
	sv.site.mu.Lock()
	user := sv.site.users[l.Name]
	sv.site.mu.Unlock()
	if claim != "" && user != "" {
		// A claim's folders are root's (0750); the server switches to its
		// user itself: they are opened to it as a pod's own would be.
		inits = append(inits, map[string]any{
			"name": "open-folders", "image": sv.image, "imagePullPolicy": "Never",
			"command":         []string{"/bin/sh", "-c", `chmod 0777 "$@"`, "sh", l.ConfDir, l.DataDir},
			"securityContext": map[string]any{"runAsUser": 0},
			"volumeMounts":    mounts[:len(uniq(l.ConfDir, l.DataDir))],
			"resources":       resources(lab.Limits{}),
		})
	}
	grace := 5
	pd = map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": sv.pod, "labels": labels},
		"spec": map[string]any{
			"nodeName":                      sv.node.name,
			"hostNetwork":                   true,
			"dnsPolicy":                     "Default",
			"restartPolicy":                 "Never",
			"terminationGracePeriodSeconds": grace,
			"enableServiceLinks":            false,
			"automountServiceAccountToken":  false,
			"containers":                    []any{c},
			"volumes":                       volumes,
		},
	}
	if len(inits) > 0 {
		pd["spec"].(map[string]any)["initContainers"] = inits
	}
	return cm, pd
}

// fileObjects are a pod's files as a ConfigMap, its volume and a mount
// of each file at its path (nil when there are none).
func fileObjects(pod string, files, labels map[string]string) (cm, volume map[string]any, mounts []map[string]any) {
	if len(files) == 0 {
		return nil, nil, nil
	}
	paths := make([]string, 0, len(files))
	for f := range files {
		paths = append(paths, f)
	}
	sort.Strings(paths)
	data := map[string]string{}
	for i, f := range paths {
		key := "f" + strconv.Itoa(i) + "-" + keySafe(path.Base(f))
		data[key] = files[f]
		mounts = append(mounts, map[string]any{"name": "files", "mountPath": f, "subPath": key, "readOnly": true})
	}
	cm = map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": pod + "-files", "labels": labels}, "data": data}
	return cm, map[string]any{"name": "files", "configMap": map[string]any{"name": pod + "-files"}}, mounts
}

// resources are a program's limits as a container's: requests small, so
// that a run's pods fit a small node however much they may use.
func resources(lim lab.Limits) map[string]any {
	limits, requests := map[string]string{}, map[string]string{"cpu": "10m", "memory": "16Mi"}
	if lim.MemoryMB > 0 {
		limits["memory"] = strconv.Itoa(lim.MemoryMB) + "Mi"
		if lim.MemoryMB < 16 {
			requests["memory"] = limits["memory"]
		}
	}
	if lim.CPUCores > 0 {
		m := int(lim.CPUCores*1000 + 0.5)
		limits["cpu"] = strconv.Itoa(m) + "m"
		if m < 10 {
			requests["cpu"] = limits["cpu"]
		}
	}
	out := map[string]any{"requests": requests}
	if len(limits) > 0 {
		out["limits"] = limits
	}
	return out
}

func (sv *server) current() *podProc {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.proc
}

// observe takes an event of one of the server's pods (this one or one it
// replaced, told apart by uid).
func (sv *server) observe(typ string, p *pod) {
	sv.mu.Lock()
	pp := sv.proc
	if pp == nil || pp.uid != p.Metadata.UID {
		sv.seen[p.Metadata.UID] = p
		sv.mu.Unlock()
		return
	}
	sv.mu.Unlock()
	pp.update(typ, p)
}

func (sv *server) Proc() lab.Proc {
	if p := sv.current(); p != nil {
		return p
	}
	return nil
}

// Addr: the harness dials the server's relay on 127.0.0.1, which passes
// each connection through the pod's port forward; programs on the site
// dial the node's address.
func (sv *server) Addr(port string, v lab.View) string {
	l := sv.Layout()
	if v != lab.FromHost {
		return l.Addr(port)
	}
	return sv.relay.addr(l.Ports[port])
}

func (sv *server) Running() bool {
	p := sv.current()
	return p != nil && p.isRunning()
}

// Paused: the lab froze the pod and has not thawed it.
func (sv *server) Paused() bool {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.frozen != nil
}

// Pause freezes the pod's cgroup (freeze.go): its processes stop where
// they are and keep their sockets. Only where its node is this machine.
func (sv *server) Pause() error {
	pp := sv.current()
	if pp == nil || !pp.isRunning() {
		return fmt.Errorf("pause %s: its pod does not run", sv.Name())
	}
	f, err := podFreezer(pp.uid)
	if err != nil {
		return fmt.Errorf("pause %s: %w", sv.Name(), err)
	}
	if err := f.set(true); err != nil {
		return fmt.Errorf("pause %s: %w", sv.Name(), err)
	}
	sv.mu.Lock()
	sv.frozen = f
	sv.mu.Unlock()
	return nil
}

// Resume thaws the pod the lab froze.
func (sv *server) Resume() error {
	sv.mu.Lock()
	f := sv.frozen
	sv.frozen = nil
	sv.mu.Unlock()
	if f == nil {
		return nil
	}
	if err := f.set(false); err != nil {
		return fmt.Errorf("resume %s: %w", sv.Name(), err)
	}
	return nil
}

// Kill sends SIGKILL to the processes of the server's container (on this
// machine: the pod's cgroup) and waits for the kubelet to say it ended,
// then deletes the pod; its claim, and so its data, stays for Start.
// Where the pod's node is not this machine, the pod is deleted with the
// least grace (SIGTERM, SIGKILL a second later), and the exit says so.
func (sv *server) Kill() error {
	pp := sv.current()
	if pp == nil || !pp.isRunning() {
		return fmt.Errorf("kill %s: its pod does not run", sv.Name())
	}
	if !sv.keepsData() {
		return fmt.Errorf("kill %s: no StorageClass holds its data across pods (the cluster has no default one; %s names one)", sv.Name(), StorageClassEnv)
	}
	if err := sv.Resume(); err != nil {
		return fmt.Errorf("kill %s: %w", sv.Name(), err)
	}
	if err := pp.Signal(syscall.SIGKILL); err == nil {
		select {
		case <-pp.done:
		case <-time.After(opTimeout):
			return fmt.Errorf("kill %s: the kubelet did not say its container ended within %s", sv.Name(), opTimeout)
		}
	} else {
		sv.site.log.Warn("kill server: deleting its pod instead", "server", sv.Name(), "err", err)
	}
	sv.Stop(0)
	return nil
}

// keepsData: its folders are a claim's, which outlives its pod.
func (sv *server) keepsData() bool {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.claim != ""
}

// Start creates its pod again over the same claim (after Kill, Stop or a
// crash), once the earlier pod is gone.
func (sv *server) Start(ctx context.Context) error {
	if sv.Running() {
		return nil
	}
	if !sv.keepsData() {
		return fmt.Errorf("start %s again with its data: no StorageClass holds it (%s)", sv.Name(), StorageClassEnv)
	}
	sv.Stop(0) // a pod that ended by itself is deleted first
	return sv.start(ctx, false)
}

// makeClaim creates the server's claim once.
func (sv *server) makeClaim(ctx context.Context) error {
	sv.mu.Lock()
	name, done := sv.claim, sv.claimed
	sv.mu.Unlock()
	if name == "" || done {
		return nil
	}
	l := sv.Layout()
	labels := map[string]string{LabelManaged: "true", LabelRun: labelValue(sv.site.runID), LabelMember: l.Name, LabelRole: labelValue(l.Role)}
	if _, err := sv.site.k.run(ctx, mustJSON(claimObject(name, sv.site.p.storageClass(), labels)), "create", "-n", sv.site.ns, "-f", "-"); err != nil {
		return fmt.Errorf("claim a volume: %w", err)
	}
	sv.mu.Lock()
	sv.claimed = true
	sv.mu.Unlock()
	return nil
}

// dropClaim deletes its claim (its volume goes with it) and names a new
// one for its next pod.
func (sv *server) dropClaim(ctx context.Context) error {
	sv.mu.Lock()
	old, made := sv.claim, sv.claimed
	if old != "" {
		sv.claims++
		sv.claim, sv.claimed = claimName(sv.pod, sv.claims), false
	}
	sv.mu.Unlock()
	if old == "" || !made {
		return nil
	}
	if _, err := sv.site.k.run(ctx, nil, "delete", "pvc", old, "-n", sv.site.ns, "--wait=false"); err != nil && !isNotFound(err) {
		return fmt.Errorf("delete claim %s: %w", old, err)
	}
	return nil
}

// Stop deletes the pod (SIGTERM, SIGKILL after grace, at least a second)
// and waits until it is gone.
func (sv *server) Stop(grace time.Duration) lab.ProcExit {
	pp := sv.current()
	if pp == nil {
		return lab.ProcExit{}
	}
	select {
	case <-pp.done:
		if sv.podGone() {
			return pp.Exit()
		}
	default:
	}
	sv.unfollow()
	// A frozen process cannot act on its signals: thaw it first.
	if err := sv.Resume(); err != nil {
		sv.site.log.Warn("stop server", "server", sv.Name(), "err", err)
	}
	secs := max(1, int(grace.Round(time.Second)/time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout+grace)
	defer cancel()
	pp.markStopped()
	_, err := sv.site.k.runFor(ctx, opTimeout+grace, nil, "delete", "pod", sv.pod, "-n", sv.site.ns,
		"--grace-period="+strconv.Itoa(secs), "--wait=true")
	if err != nil && !isNotFound(err) {
		sv.site.log.Warn("stop server", "server", sv.Name(), "err", err)
	}
	// The watch tells of the deletion; a pod already gone ends here.
	select {
	case <-pp.done:
	case <-time.After(10 * time.Second):
		pp.end(lab.ProcExit{How: "its pod was deleted", Stopped: true})
	}
	return pp.Exit()
}

// unfollow stops forwarding the pod's ports and copying its output.
func (sv *server) unfollow() {
	sv.mu.Lock()
	stop := sv.stopLogs
	sv.stopLogs = nil
	sv.mu.Unlock()
	sv.relay.detach()
	if stop != nil {
		stop()
	}
}

// detach: the site closes; the namespace takes the pod with it, and its
// cut is removed from its node's rules.
func (sv *server) detach() {
	if err := sv.Resume(); err != nil {
		sv.site.log.Warn("close site", "server", sv.Name(), "err", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	if err := sv.Reconnect(ctx); err != nil {
		sv.site.log.Warn("close site", "server", sv.Name(), "err", err)
	}
	cancel()
	sv.mu.Lock()
	sv.detached = true
	sv.mu.Unlock()
	sv.unfollow()
	sv.relay.close()
}

// Replace deletes the pod and its claim (its volume goes with it) and
// creates both again: the same name, node, ports, files and limits, and
// empty folders; it returns once the fresh server answers.
func (sv *server) Replace(ctx context.Context) error {
	if e := sv.Stop(0); e.Err != nil {
		return fmt.Errorf("replace %s: %w", sv.Name(), e.Err)
	}
	if err := sv.dropClaim(ctx); err != nil {
		return fmt.Errorf("replace %s: %w", sv.Name(), err)
	}
	return sv.start(ctx, true)
}

// podGone says whether the API server no longer has the server's pod.
func (sv *server) podGone() bool {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var p pod
	return isNotFound(sv.site.k.getJSON(ctx, &p, "pod", sv.pod, "-n", sv.site.ns))
}

// State reads the pod back from the API server: running while its
// container runs, exited otherwise (also when it is gone).
func (sv *server) State(ctx context.Context) (string, error) {
	var p pod
	err := sv.site.k.getJSON(ctx, &p, "pod", sv.pod, "-n", sv.site.ns)
	if isNotFound(err) {
		return lab.StateExited, nil
	}
	if err != nil {
		return "", fmt.Errorf("read state of %s: %w", sv.Name(), err)
	}
	if c := p.container(serverContainer); c == nil || c.State.Running == nil || p.Metadata.DeletionTimestamp != nil {
		return lab.StateExited, nil
	}
	// Frozen or not, read back from the kernel where the pod's cgroup
	// is on this machine.
	if f, err := podFreezer(p.Metadata.UID); err == nil {
		if frozen, err := f.frozen(); err == nil && frozen {
			return lab.StatePaused, nil
		}
	}
	return lab.StateRunning, nil
}

// SetCPU and SetMemory change the limit of a running pod in place (the
// pod's resize subresource, InPlacePodVerticalScaling) and wait until the
// kubelet says it applied it; a stopped one gets it at its next creation.
// A running pod's limit cannot be removed in place: no CPU limit is then
// the node's whole capacity, which CPU reads back as none.
func (sv *server) SetCPU(cores float64) error {
	sv.SetCPUCores(cores)
	return sv.resize("cpu")
}

// resizeLimits are the limits a running pod is resized to: no CPU limit
// is its node's capacity.
func (sv *server) resizeLimits() lab.Limits {
	lim := sv.Limits()
	if lim.CPUCores == 0 && sv.node.cpus > 0 {
		lim.CPUCores = sv.node.cpus
	}
	return lim
}

func (sv *server) SetMemory(mb int) error {
	sv.SetMemoryMB(mb)
	return sv.resize("memory")
}

// resizeWithin bounds the wait for the kubelet to apply a resize.
const resizeWithin = 20 * time.Second

// resize asks for the server's limits as they are now on its running pod
// and waits until the container's status has the resource's new limit.
func (sv *server) resize(resource string) error {
	if !sv.Running() {
		return nil
	}
	res := resources(sv.resizeLimits())
	want := ""
	if lim, ok := res["limits"].(map[string]string); ok {
		want = lim[resource]
	}
	if want == "" {
		return fmt.Errorf("limit %s of %s: a limit cannot be removed from a running pod", resource, sv.Name())
	}
	patch := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": serverContainer, "resources": res}}}}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout+resizeWithin)
	defer cancel()
	if _, err := sv.site.k.run(ctx, mustJSON(patch), "patch", "pod", sv.pod, "-n", sv.site.ns, "--subresource", "resize", "--type", "strategic", "--patch-file", "/dev/stdin"); err != nil {
		return fmt.Errorf("limit %s of %s: %w", resource, sv.Name(), err)
	}
	wq, err := quantity(want)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(resizeWithin)
	for {
		got, err := sv.limit(resource)
		if err == nil && got == wq {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("limit %s of %s: the kubelet did not apply %s within %s (it has %v: %v)", resource, sv.Name(), want, resizeWithin, got, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// CPU reads the container's CPU limit back from the API server (0: none,
// or its node's whole capacity).
func (sv *server) CPU() (float64, error) {
	q, err := sv.limit("cpu")
	if err == nil && sv.node.cpus > 0 && q >= sv.node.cpus {
		q = 0
	}
	return q, err
}

// Memory reads the container's memory limit back (MiB, 0: none).
func (sv *server) Memory() (int, error) {
	q, err := sv.limit("memory")
	return int(int64(q) >> 20), err
}

func (sv *server) limit(resource string) (float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var p pod
	if err := sv.site.k.getJSON(ctx, &p, "pod", sv.pod, "-n", sv.site.ns); err != nil {
		return 0, fmt.Errorf("read %s limit of %s: %w", resource, sv.Name(), err)
	}
	// What the kubelet applied, where it says (a running container's
	// status), else what the pod asks for.
	if c := p.container(serverContainer); c != nil && c.Resources != nil {
		if q, ok := c.Resources.Limits[resource]; ok {
			return quantity(q)
		}
	}
	return quantity(p.limit(serverContainer, resource))
}

// Disconnect cuts the server off in its node's network (it runs on it):
// nftables rules there reset connections to its ports and drop what its
// container's sockets send (netcut, as on local processes), until
// Reconnect. Only where its node is this machine.
func (sv *server) Disconnect(ctx context.Context) error {
	began := time.Now()
	ns, groups, err := sv.netGroups()
	if err != nil {
		return fmt.Errorf("disconnect %s: %w", sv.Name(), err)
	}
	if err := ns.Cut(ctx, sv.site.runID, sv.Name(), sv.ports(), groups); err != nil {
		return err
	}
	sv.mu.Lock()
	sv.cutIn = ns
	sv.mu.Unlock()
	sv.relay.setCut(true)
	sv.site.log.Info("kubernetes: server cut off in its node's network", "server", sv.Name(), "ports", sv.ports(), "group", groups, "netns_of", int(ns), "took", time.Since(began).Round(time.Millisecond))
	return nil
}

// netGroups are the network namespace of the server's container (its
// node's) and its cgroup v2 group, which nftables tells its sockets by.
func (sv *server) netGroups() (netcut.Netns, []string, error) {
	if err := netcut.Available(); err != nil {
		return 0, nil, err
	}
	pp := sv.current()
	if pp == nil || !pp.isRunning() {
		return 0, nil, errors.New("its pod does not run")
	}
	pp.mu.Lock()
	uid, cid := pp.uid, pp.cid
	pp.mu.Unlock()
	pids := containerPids(uid, cid)
	if len(pids) == 0 {
		return 0, nil, errors.New("no process of its container on this machine (a cut is made in its node's network, so its node must be this machine)")
	}
	g, err := netcut.GroupOf(pids[0])
	if err != nil {
		return 0, nil, err
	}
	_, id, _ := strings.Cut(cid, "://")
	if !strings.Contains(g, id) && !strings.Contains(g, uid) && !strings.Contains(g, strings.ReplaceAll(uid, "-", "_")) {
		return 0, nil, fmt.Errorf("its container's cgroup v2 group %s is not its own: its sockets cannot be told apart", g)
	}
	return netcut.Netns(pids[0]), []string{g}, nil
}

func (sv *server) ports() []int {
	var ports []int
	for _, p := range sv.Layout().Ports {
		ports = append(ports, p)
	}
	sort.Ints(ports)
	return ports
}

// Reconnect removes the cut.
func (sv *server) Reconnect(ctx context.Context) error {
	sv.mu.Lock()
	ns := sv.cutIn
	sv.cutIn = 0
	sv.mu.Unlock()
	if ns == 0 {
		return nil
	}
	if err := sv.site.netns(ns).Restore(ctx, sv.site.runID, sv.Name()); err != nil {
		return err
	}
	sv.relay.setCut(false)
	return nil
}

// Disconnected reads the cut back from the node's rules.
func (sv *server) Disconnected() bool {
	sv.mu.Lock()
	ns := sv.cutIn
	sv.mu.Unlock()
	if ns == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	return sv.site.netns(ns).IsCut(ctx, sv.site.runID, sv.Name())
}

// podProc is one pod of a server as a lab.Proc, its state from the
// site's watch.
type podProc struct {
	ns, name, container, uid string

	started chan struct{} // closed once the container runs, or cannot
	done    chan struct{}

	mu       sync.Mutex
	running  bool
	ran      bool // its container ran (it may have ended since)
	failed   error
	exit     lab.ProcExit
	stopped  bool
	restarts int
	limitB   int64
	cid      string // the runtime's id of its container
	last     *lab.ProcStats
}

func newPodProc(ns, name, container, uid string) *podProc {
	return &podProc{ns: ns, name: name, container: container, uid: uid, started: make(chan struct{}), done: make(chan struct{})}
}

// update takes the pod as the API server has it now.
func (pp *podProc) update(typ string, p *pod) {
	if typ == "DELETED" {
		pp.end(lab.ProcExit{How: "its pod was deleted"})
		return
	}
	if q, err := quantity(p.limit(pp.container, "memory")); err == nil {
		pp.mu.Lock()
		pp.limitB = int64(q)
		pp.mu.Unlock()
	}
	c := p.container(pp.container)
	switch {
	case c != nil && c.State.Terminated != nil:
		if c.State.Terminated.StartedAt != "" {
			pp.mu.Lock()
			pp.ran = true // it ran, if too briefly for an event to say so
			pp.mu.Unlock()
		}
		pp.end(exitOf(c.State.Terminated))
	case c != nil && c.State.Running != nil:
		pp.mu.Lock()
		pp.running, pp.ran, pp.restarts, pp.cid = true, true, c.RestartCount, c.ContainerID
		pp.mu.Unlock()
		closeOnce(pp.started)
	case c != nil && c.State.Waiting != nil && stuck[c.State.Waiting.Reason]:
		pp.fail(fmt.Errorf("pod %s/%s: %s: %s", pp.ns, pp.name, c.State.Waiting.Reason, c.State.Waiting.Message))
	case p.Status.Phase == "Failed" || p.Status.Phase == "Succeeded":
		pp.fail(fmt.Errorf("pod %s/%s %s: %s %s", pp.ns, pp.name, p.Status.Phase, p.Status.Reason, p.Status.Message))
	}
}

// fail: the container will not run.
func (pp *podProc) fail(err error) {
	pp.mu.Lock()
	if pp.failed == nil {
		pp.failed = err
	}
	pp.mu.Unlock()
	pp.end(lab.ProcExit{How: err.Error(), Err: err})
}

// end records how the container ended (the first report wins).
func (pp *podProc) end(e lab.ProcExit) {
	pp.mu.Lock()
	select {
	case <-pp.done:
		pp.mu.Unlock()
		return
	default:
	}
	e.Stopped = e.Stopped || pp.stopped
	pp.exit, pp.running = e, false
	close(pp.done)
	pp.mu.Unlock()
	closeOnce(pp.started)
}

func (pp *podProc) markStopped() {
	pp.mu.Lock()
	pp.stopped = true
	pp.mu.Unlock()
}

func (pp *podProc) startErr() error {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if pp.failed != nil {
		return pp.failed
	}
	select {
	case <-pp.done:
		if !pp.ran {
			return fmt.Errorf("pod %s/%s: %s before it ran", pp.ns, pp.name, pp.exit.How)
		}
	default:
	}
	return nil
}

func (pp *podProc) isRunning() bool {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return pp.running
}

// Desc names the pod and its uid: a pod created again under the same
// name is another.
func (pp *podProc) Desc() string {
	uid := pp.uid
	if len(uid) > 8 {
		uid = uid[:8]
	}
	return "pod " + pp.ns + "/" + pp.name + " (uid " + uid + ")"
}
func (pp *podProc) Pid() int     { return 0 }
func (pp *podProc) Host() string { return "127.0.0.1" }

// Signal sends sig to the processes of the pod's container, found from
// its cgroup: only where the pod's node is this machine.
func (pp *podProc) Signal(sig syscall.Signal) error {
	pp.mu.Lock()
	uid, cid := pp.uid, pp.cid
	pp.mu.Unlock()
	pids := containerPids(uid, cid)
	if len(pids) == 0 {
		return fmt.Errorf("signal %s: no process of its container on this machine (a signal reaches a pod's processes only where its node is this machine)", pp.Desc())
	}
	var errs []error
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("signal %s pid %d: %w", pp.Desc(), pid, err))
		}
	}
	return errors.Join(errs...)
}
func (pp *podProc) Pause() error  { return fmt.Errorf("pause %s: %w", pp.Desc(), errNotYet) }
func (pp *podProc) Resume() error { return fmt.Errorf("resume %s: %w", pp.Desc(), errNotYet) }

// Stats are the container's figures from its cgroup and processes on
// this machine (readStats), the last read once it ended; elsewhere only
// the memory limit the API server has.
func (pp *podProc) Stats() lab.ProcStats {
	pp.mu.Lock()
	uid, cid, running, last := pp.uid, pp.cid, pp.running, pp.last
	limit := pp.limitB
	pp.mu.Unlock()
	if running {
		if st, ok := readStats(uid, cid); ok {
			pp.mu.Lock()
			pp.last = &st
			pp.mu.Unlock()
			return st
		}
	}
	if last != nil {
		return *last
	}
	return lab.ProcStats{MemoryLimitBytes: limit}
}

func (pp *podProc) Done() <-chan struct{} { return pp.done }

func (pp *podProc) Exit() lab.ProcExit {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return pp.exit
}

// Stop: a server's pod is stopped through its server.
func (pp *podProc) Stop(time.Duration) lab.ProcExit {
	<-pp.done
	return pp.Exit()
}

func (pp *podProc) Release() error { return nil }

func closeOnce(c chan struct{}) {
	select {
	case <-c:
	default:
		close(c)
	}
}

var (
	_ lab.ServerSite = (*Site)(nil)
	_ lab.Server     = (*server)(nil)
	_ lab.Proc       = (*podProc)(nil)
)
