package ebs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/chaoslab/chaoslab/harness/kinds/ebs/ebscontrol"
	"github.com/chaoslab/chaoslab/harness/kinds/ebs/ebsnode"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// startLinks puts a proxy in front of each node's mirror listener. The
// proxies listen where the nodes reach the controller (127.0.0.1, a
// container network's gateway); a proxy's upstream is its node's mirror
// listener once the node runs and reports it (until then a port nothing
// listens on: a primary's connect is refused and tried again).
func (w *workload) startLinks(ctx context.Context) error {
	host, err := lab.ControllerHost(ctx, w.env.Site)
	if err != nil {
		return fmt.Errorf("start links: %w", err)
	}
	w.links = NewLinks()
	for _, n := range w.nodes {
		addr, err := w.links.Add(n.zone, n.id, host, net.JoinHostPort("127.0.0.1", "0"))
		if err != nil {
			return err
		}
		n.proxy = addr
	}
	for _, z := range w.zones {
		z.links = w.links
	}
	return nil
}

// logFile opens a program's log in the variant's log folder.
func (w *workload) logFile(name string) (*os.File, error) {
	abs, _ := w.env.LogPath(name)
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return nil, fmt.Errorf("make log folder: %w", err)
	}
	f, err := os.OpenFile(abs, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	return f, nil
}

// startControl starts the control plane and waits until it listens.
func (w *workload) startControl(ctx context.Context) error {
	logf, err := w.logFile("ebs-control")
	if err != nil {
		return err
	}
	host, _ := w.env.Site.Listen()
	var zones []string
	for _, z := range w.zones {
		zones = append(zones, z.name)
	}
	cfg := ebscontrol.Config{Service: w.s.Service, Etcd: w.cluster.Endpoints(lab.FromSite), Prefix: w.prefix, Zones: zones, Listen: host, CreateSLO: w.s.CreateSLO.D()}
	p, err := w.env.Site.Start(ctx, lab.Program{Name: "ebs-control", Alias: "ebs-control", Role: "control-plane", Agent: ControlAgent, Config: cfg, Stderr: logf,
		Stdout: func(line []byte) {
			if port := listenedPort(line, "api"); port != "" {
				w.apiMu.Lock()
				w.api = port
				w.apiMu.Unlock()
			}
		}})
	if err != nil {
		logf.Close()
		return fmt.Errorf("start control plane: %w", err)
	}
	w.apiMu.Lock()
	w.control = p
	w.apiMu.Unlock()
	w.watch(ctx, p, "ebs-control", logf)
	for deadline := time.Now().Add(20 * time.Second); w.apiAddr() == ""; {
		if time.Now().After(deadline) {
			return errors.New("start control plane: it did not listen within 20s")
		}
		if !lab.Sleep(ctx, 50*time.Millisecond) {
			return ctx.Err()
		}
	}
	return nil
}

// apiAddr is where the harness and the nodes reach the control plane
// ("" until it listens).
func (w *workload) apiAddr() string {
	w.apiMu.Lock()
	defer w.apiMu.Unlock()
	if w.api == "" || w.control == nil {
		return ""
	}
	return net.JoinHostPort(w.control.Host(), w.api)
}

// startNode starts the i-th storage node and points its proxy at it.
func (w *workload) startNode(ctx context.Context, i int, n *node) error {
	logf, err := w.logFile("ebs-node-" + n.id)
	if err != nil {
		return err
	}
	host, _ := w.env.Site.Listen()
	peers := map[string]string{}
	for _, o := range w.nodes {
		if o.zone == n.zone {
			peers[o.id] = o.proxy
		}
	}
	cfg := ebsnode.Config{Settings: w.s.Settings, ID: n.id, Zone: n.zone, Dir: filepath.Join(w.env.Dir, "ebs", n.id), Listen: host,
		Control: "http://" + w.apiAddr(), ControlTimeout: w.s.RequestTimeout.D() + 2*time.Second,
		Peers: peers, Volumes: n.vols, Seed: w.env.Seed*1000 + uint64(i)*uint64(len(n.vols))}
	p, err := w.env.Site.Start(ctx, lab.Program{Name: "ebs-node-" + n.id, Alias: n.id, Role: "storage-node", Agent: NodeAgent, Config: cfg, Stderr: logf,
		Stdout: func(line []byte) {
			if port := listenedPort(line, "status"); port != "" {
				n.mu.Lock()
				n.status, n.mirror = port, listenedPort(line, "mirror")
				n.mu.Unlock()
			}
		}})
	if err != nil {
		logf.Close()
		return fmt.Errorf("start node %s: %w", n.id, err)
	}
	n.mu.Lock()
	n.proc = p
	n.mu.Unlock()
	w.watch(ctx, p, n.id, logf)
	mirror, err := n.mirrorAddr(ctx)
	if err != nil {
		return fmt.Errorf("start node %s: %w", n.id, err)
	}
	if err := w.links.SetUpstream(n.id, mirror); err != nil {
		return err
	}
	w.env.Record("node-start", n.id, fmt.Sprintf("started in %s (%s), %d volumes", n.zone, p.Desc(), len(n.vols)))
	return nil
}

// watch records an exit the harness did not ask for and closes the log.
func (w *workload) watch(ctx context.Context, p lab.Proc, name string, logf *os.File) {
	go func() {
		<-p.Done()
		logf.Close()
		if ctx.Err() == nil {
			w.env.Event("node-exit", name, p.Exit().How)
		}
	}()
}

// mirrorAddr waits until the node reports its listeners and says where
// its mirror listener is reached: its port at the program's host.
func (n *node) mirrorAddr(ctx context.Context) (string, error) {
	for deadline := time.Now().Add(20 * time.Second); ; {
		n.mu.Lock()
		port, p := n.mirror, n.proc
		n.mu.Unlock()
		if port != "" && p != nil {
			return net.JoinHostPort(p.Host(), port), nil
		}
		select {
		case <-p.Done():
			return "", fmt.Errorf("it exited before it listened: %s", p.Exit().How)
		default:
		}
		if time.Now().After(deadline) {
			return "", errors.New("it did not listen within 20s")
		}
		if !lab.Sleep(ctx, 20*time.Millisecond) {
			return "", ctx.Err()
		}
	}
}
