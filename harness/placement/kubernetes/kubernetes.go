// Package kubernetes is the Kubernetes placement (issue 27): every
// variant gets a namespace of its own, labelled with the run's id and
// its owner, and removed by the site's Close (and by the sweep of the
// next run when the controller died); servers run as pods, one per
// member, from the same images and settings as the container placement.
//
// It drives the cluster with kubectl ($KUBECTL, else the test cluster's
// out/kube/bin/kubectl) and reads its JSON with encoding/json: no
// Kubernetes client library is linked. The harness reaches servers
// through `kubectl port-forward` on 127.0.0.1, never by a pod's or
// node's address.
//
// Servers run on the node's network (hostNetwork), each on ports of its
// own, and reach each other at their node's InternalIP: the test cluster
// has no kube-proxy and no cluster DNS, and a pod's address is known only
// once it exists, after its configuration was written. docs/kubernetes.md
// says what works and what does not yet.
package kubernetes

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/harness/infra/imagepick"
	"github.com/chaoslab/chaoslab/harness/infra/owner"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// Name is the placement's registered name; --placement auto never
// chooses it.
const Name = "kubernetes"

func init() { lab.RegisterPlacement(Name, New) }

// Labels on every namespace (and every object in it) chaoslab creates.
const (
	LabelManaged = "org.chaoslab.managed"
	LabelRun     = "org.chaoslab.run"
	LabelOwner   = "org.chaoslab.owner"
	LabelMember  = "org.chaoslab.member"
	LabelRole    = "org.chaoslab.role"
	// AnnotationHost is the machine of the owner process: a sweep only
	// judges owners on its own machine.
	AnnotationHost = "org.chaoslab.host"
	// AnnotationRun is the run id as given (a label value is limited).
	AnnotationRun = "org.chaoslab.run"
)

// Placement runs programs as pods of a Kubernetes cluster.
type Placement struct {
	opts lab.PlacementOptions
	log  *slog.Logger
	k    kubectl

	images imagepick.Record
	mu     sync.Mutex
	server string // the cluster's version, for the report
	// split: the API server serves a container's standard output and
	// error apart (the PodLogsQuerySplitStreams feature).
	split bool
	// storage is the StorageClass of servers' folders ("": their pods'
	// own, gone with them).
	storage string
	nodes   string // the nodes, for the report
}

// New is the Kubernetes placement of a run.
func New(o lab.PlacementOptions) (lab.Placement, error) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return &Placement{opts: o, log: o.Log}, nil
}

func (p *Placement) Name() string { return Name }

// Available: kubectl is there and the API server says it is ready.
func (p *Placement) Available(ctx context.Context) error {
	k, err := findKubectl()
	if err != nil {
		return err
	}
	if _, err := k.run(ctx, nil, "get", "--raw", "/readyz"); err != nil {
		return fmt.Errorf("the cluster's API server does not answer: %w", err)
	}
	p.mu.Lock()
	p.k = k
	p.mu.Unlock()
	return nil
}

// Prepare sweeps the namespaces of runs whose controller is gone and
// checks that every image the run needs is on every node.
func (p *Placement) Prepare(ctx context.Context, needs []lab.ImageNeed) error {
	if err := p.Available(ctx); err != nil {
		return err
	}
	if swept, err := sweepStale(ctx, p.k); err != nil {
		p.log.Warn("sweep namespaces of earlier runs", "err", err)
	} else if len(swept) > 0 {
		p.log.Info("removed namespaces of earlier runs", "namespaces", strings.Join(swept, ", "))
	}
	var v struct {
		ServerVersion struct {
			GitVersion string `json:"gitVersion"`
		} `json:"serverVersion"`
	}
	if out, err := p.k.run(ctx, nil, "version", "-o", "json"); err == nil {
		if jsonUnmarshal(out, &v) == nil {
			p.mu.Lock()
			p.server = v.ServerVersion.GitVersion
			p.mu.Unlock()
		}
	}
	if on, err := featureEnabled(ctx, p.k, splitStreams); err != nil {
		p.log.Warn("read the API server's features", "err", err)
	} else {
		p.mu.Lock()
		p.split = on
		p.mu.Unlock()
	}
	if nodes, err := clusterNodes(ctx, p.k); err == nil {
		p.mu.Lock()
		p.nodes = nodes
		p.mu.Unlock()
	}
	if class, err := storageClass(ctx, p.k); err != nil {
		return fmt.Errorf("prepare kubernetes placement: %w", err)
	} else {
		p.mu.Lock()
		p.storage = class
		p.mu.Unlock()
	}
	// The kubelet lists a node's images from a cache it refreshes every
	// 30 s and reports every 10 s: images moved into a node just now
	// (kube-up.sh) are not listed yet; wait that long for them.
	deadline := time.Now().Add(imagesListedWithin)
	for {
		present, err := nodeImages(ctx, p.k)
		if err != nil {
			return fmt.Errorf("prepare kubernetes placement: %w", err)
		}
		var missing error
		for _, n := range needs {
			if _, err := p.resolve(n, present); err != nil {
				missing = err
				break
			}
		}
		if missing == nil || time.Now().After(deadline) {
			return missing
		}
		p.log.Info("waiting for the nodes to list the images", "err", missing)
		select {
		case <-ctx.Done():
			return missing
		case <-time.After(2 * time.Second):
		}
	}
}

// imagesListedWithin is how long an image moved into a node may take to
// be listed in its status.
const imagesListedWithin = 45 * time.Second

// resolve picks an image as the container placement does
// (imagepick.Choose), the defaults on every node; it must be on every
// node (pods never pull: imagePullPolicy Never).
func (p *Placement) resolve(n lab.ImageNeed, present func(string) bool) (string, error) {
	onNodes := func(ref string) (bool, error) { return present(ref), nil }
	ref, why, env, _ := imagepick.Choose(n, p.opts.Images, onNodes, "on every node")
	if ref == "" {
		return "", fmt.Errorf("no %s image on the cluster's nodes (tried %s; ./scripts/kube-up.sh moves the images `chaoslab images build` made into the test cluster; or name one with --image %s=REF or %s)",
			n.Name, strings.Join(n.Defaults, ", "), n.Name, env)
	}
	if !present(ref) {
		return "", fmt.Errorf("prepare kubernetes placement: image %s is not on every node of the cluster (pods do not pull)", ref)
	}
	p.images.Keep(n.Name, ref, why)
	return ref, nil
}

// splitLogs says whether the API server serves a container's standard
// output and error apart.
func (p *Placement) splitLogs() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.split
}

// Image is the image resolved for a name by Prepare ("" when none was).
func (p *Placement) Image(name string) string { return p.images.Image(name) }

func (p *Placement) Why() string { return p.images.Why() }

func (p *Placement) Versions() map[string]string {
	out := p.images.Versions()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.server != "" {
		out["kubernetes"] = p.server
	}
	if p.nodes != "" {
		out["kubernetes nodes"] = p.nodes
	}
	return out
}

// clusterNodes says what the cluster's nodes are: how many, their
// kubelets and runtimes ("1 (kubelet v1.34.4, containerd://1.6.20)").
func clusterNodes(ctx context.Context, k kubectl) (string, error) {
	var list struct {
		Items []struct {
			Status struct {
				NodeInfo struct {
					KubeletVersion          string `json:"kubeletVersion"`
					ContainerRuntimeVersion string `json:"containerRuntimeVersion"`
				} `json:"nodeInfo"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := k.getJSON(ctx, &list, "nodes"); err != nil {
		return "", err
	}
	seen := map[string]int{}
	var kinds []string
	for _, n := range list.Items {
		d := "kubelet " + n.Status.NodeInfo.KubeletVersion + ", " + n.Status.NodeInfo.ContainerRuntimeVersion
		if seen[d] == 0 {
			kinds = append(kinds, d)
		}
		seen[d]++
	}
	parts := make([]string, len(kinds))
	for i, d := range kinds {
		parts[i] = fmt.Sprintf("%d (%s)", seen[d], d)
	}
	return strings.Join(parts, "; "), nil
}

// Open creates the variant's namespace, labelled with the run's id and
// this process as its owner.
func (p *Placement) Open(ctx context.Context, runID, dir string, log *slog.Logger) (lab.Site, error) {
	if p.k.path == "" {
		if err := p.Available(ctx); err != nil {
			return nil, fmt.Errorf("open kubernetes site: %w", err)
		}
	}
	if log == nil {
		log = p.log
	}
	ns := NamespaceName(runID)
	host, _ := os.Hostname()
	obj := map[string]any{
		"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{
			"name":        ns,
			"labels":      map[string]string{LabelManaged: "true", LabelRun: labelValue(runID), LabelOwner: owner.Label()},
			"annotations": map[string]string{AnnotationHost: host, AnnotationRun: runID},
		},
	}
	if _, err := p.k.run(ctx, mustJSON(obj), "create", "-f", "-"); err != nil {
		return nil, fmt.Errorf("open kubernetes site: %w", err)
	}
	s := &Site{p: p, k: p.k, runID: runID, ns: ns, dir: dir, log: log, servers: map[string]*server{},
		programs: map[string]*program{}, early: map[string]*pod{}}
	if err := s.open(ctx); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("open kubernetes site: %w", err)
	}
	return s, nil
}

var notDNSLabel = regexp.MustCompile(`[^a-z0-9-]+`)

// NamespaceName is a run's namespace: "chaoslab-" and the run id as a
// DNS label (lower case, at most 63 characters; a hash keeps shortened
// ids apart).
func NamespaceName(runID string) string {
	s := strings.Trim(notDNSLabel.ReplaceAllString(strings.ToLower(runID), "-"), "-")
	name := "chaoslab-" + s
	if len(name) > 63 || s != strings.ToLower(runID) {
		h := shortHash(runID)
		if len(name) > 63-len(h)-1 {
			name = strings.TrimRight(name[:63-len(h)-1], "-")
		}
		name += "-" + h
	}
	return name
}

var notLabelValue = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// labelValue is s as a label value (at most 63 characters of
// [A-Za-z0-9_.-], alphanumeric at both ends); the annotation keeps it as
// it is.
func labelValue(s string) string {
	v := strings.Trim(notLabelValue.ReplaceAllString(s, "-"), "-_.")
	if v != s || len(v) > 63 {
		h := shortHash(s)
		if len(v) > 63-len(h)-1 {
			v = strings.TrimRight(v[:63-len(h)-1], "-_.")
		}
		v += "-" + h
	}
	return v
}

// storageClass is the class of servers' claims ("": none).
func (p *Placement) storageClass() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.storage
}
