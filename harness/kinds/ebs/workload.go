package ebs

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/chaoslab/chaoslab/harness/infra/instances"
	"github.com/chaoslab/chaoslab/harness/kinds/ebs/ebscontrol"
	"github.com/chaoslab/chaoslab/harness/kinds/ebs/ebsnode"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// node is one storage node as the harness knows it.
type node struct {
	id, zone string
	proxy    string
	vols     []ebsnode.VolumeConfig

	mu     sync.Mutex
	proc   lab.Proc
	status string // the port of its status API
	mirror string // the port of its mirror listener
}

// statusAddr is where the harness reaches the node's status API ("" until
// it listens): its port at the program's host.
func (n *node) statusAddr() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.status == "" || n.proc == nil {
		return ""
	}
	return net.JoinHostPort(n.proc.Host(), n.status)
}

// workload is one variant's cluster, control plane, links and load.
type workload struct {
	env     *lab.Env
	cluster lab.Cluster
	s       *Settings
	prefix  string

	cli   *clientv3.Client
	store ebscontrol.Store
	links *Links
	zones []*Zone
	nodes []*node

	control lab.Proc
	apiMu   sync.Mutex
	api     string
	http    *http.Client

	rec   *recorder
	group *instances.Group // a user's callers (Contract)
	stop  context.CancelFunc
	bg    sync.WaitGroup
}

func (kind) New(env *lab.Env, c lab.Cluster, s lab.Settings) (lab.Workload, error) {
	st := s.(*Settings)
	w := &workload{env: env, cluster: c, s: st, prefix: "/chaoslab/" + env.RunID + "/ebs",
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	w.rec = newRecorder(st.Zones)
	for zi := range st.Zones {
		zone := ZoneNames[zi]
		w.zones = append(w.zones, &Zone{name: zone, w: w})
		for i := range st.NodesPerZone {
			n := &node{id: fmt.Sprintf("%s%d", zone[len(zone)-1:], i+1), zone: zone}
			mirror := fmt.Sprintf("%s%d", zone[len(zone)-1:], (i+1)%st.NodesPerZone+1)
			for j := range st.VolumesPerNode {
				n.vols = append(n.vols, ebsnode.VolumeConfig{ID: fmt.Sprintf("vol-%s-%d", n.id, j+1), Mirror: mirror})
			}
			w.nodes = append(w.nodes, n)
		}
	}
	return w, nil
}

// Seed writes every node's free slots and every volume's record to etcd.
func (w *workload) Seed(ctx context.Context) error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: w.cluster.Endpoints(lab.FromHost), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return fmt.Errorf("connect etcd: %w", err)
	}
	w.cli, w.store = cli, ebscontrol.Store{Cli: cli, Prefix: w.prefix}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, n := range w.nodes {
		if err := w.store.SetFree(sctx, n.zone, n.id, w.s.SpareSlots); err != nil {
			return err
		}
		for _, v := range n.vols {
			if err := w.store.PutVolume(sctx, ebscontrol.Volume{ID: v.ID, Zone: n.zone, Primary: n.id, Mirror: v.Mirror, Epoch: 1}); err != nil {
				return err
			}
		}
	}
	w.env.Event("note", "harness", fmt.Sprintf("wrote %d volumes and %d nodes' free slots (%d each) to etcd under %s",
		len(w.nodes)*w.s.VolumesPerNode, len(w.nodes), w.s.SpareSlots, w.prefix))
	return nil
}

// Start starts the links, the control plane, the nodes, the sampler and
// the create-volume load.
func (w *workload) Start(ctx context.Context) error {
	ctx, w.stop = context.WithCancel(ctx)
	if err := w.startLinks(ctx); err != nil {
		return err
	}
	if err := w.startControl(ctx); err != nil {
		return err
	}
	for i, n := range w.nodes {
		if err := w.startNode(ctx, i, n); err != nil {
			return err
		}
	}
	w.env.Event("note", "harness", fmt.Sprintf("started the control plane and %d storage nodes in %d zones", len(w.nodes), w.s.Zones))
	w.bg.Go(func() { w.sample(ctx) })
	if w.s.Program != nil {
		w.startPrograms(ctx)
		return nil
	}
	for _, z := range w.zones {
		w.bg.Go(func() { w.createLoad(ctx, z.name) })
	}
	return nil
}

// Steady counts the volumes with a live mirror and, with a user's
// callers, the zones whose create-volume calls reached the control plane
// between the last two samples.
func (w *workload) Steady() lab.Steady {
	live, total := w.rec.liveCount()
	st := lab.Steady{Ready: live, Total: max(total, len(w.nodes)*w.s.VolumesPerNode), What: "volumes mirrored"}
	if w.s.Program != nil {
		st.Ready += w.rec.zonesCalling()
		st.Total += len(w.zones)
		st.What = "volumes mirrored and zones calling create-volume (counted at the control plane)"
	}
	return st
}

// Targets: each zone.
func (w *workload) Targets(group string) []lab.Target {
	for _, z := range w.zones {
		if z.name == group {
			return []lab.Target{z}
		}
	}
	return nil
}

// Progress: volumes stuck, free slots, pool use.
func (w *workload) Progress() []slog.Attr {
	return w.rec.progress()
}

// Stop ends the load, the nodes, the control plane and the links.
func (w *workload) Stop(context.Context) error {
	if w.stop != nil {
		w.stop()
	}
	w.bg.Wait()
	if w.group != nil {
		w.group.Stop()
	}
	var wg sync.WaitGroup
	for _, n := range w.nodes {
		n.mu.Lock()
		p := n.proc
		n.mu.Unlock()
		if p != nil {
			wg.Go(func() { p.Stop(3 * time.Second); _ = p.Release() })
		}
	}
	wg.Wait()
	if w.control != nil {
		w.control.Stop(3 * time.Second)
		_ = w.control.Release()
	}
	if w.links != nil {
		w.links.Close()
	}
	// The volumes' bytes are not evidence: keep the run folder small.
	if err := os.RemoveAll(filepath.Join(w.env.Dir, "ebs")); err != nil {
		w.env.Log.Warn("remove volumes", "err", err)
	}
	if w.cli != nil {
		w.cli.Close()
	}
	return nil
}
