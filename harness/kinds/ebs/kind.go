// Package ebs is the workload kind aws-ebs-cluster: AWS-EBS-2011's block
// storage cluster on this machine. Storage nodes (chaoslab agent ebs-node,
// harness/kinds/ebs/ebsnode) in zones hold replicas of small volumes and mirror every
// write to a peer in their zone through an in-process toxiproxy on
// loopback that the workload owns, so that degrade-links is a real network
// fault; a control plane (chaoslab agent ebs-control, harness/kinds/ebs/ebscontrol)
// keeps every volume's record and every node's free slots in the real etcd
// cluster, elects primaries and hands out slots with transactions, and
// serves create-volume calls from every zone with a bounded worker pool.
// The harness calls create-volume from each zone at a steady rate and
// samples the nodes, the control plane and etcd every second.
package ebs

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/chaoslab/chaoslab/harness/kinds/ebs/ebscontrol"
	"github.com/chaoslab/chaoslab/harness/kinds/ebs/ebsnode"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// KindName is the workload kind.
const KindName = "aws-ebs-cluster"

// The agents: a storage node and the control plane.
const (
	NodeAgent    = "ebs-node"
	ControlAgent = "ebs-control"
)

func init() {
	lab.RegisterKind(kind{})
	lab.RegisterAgent(lab.Agent{Name: NodeAgent, Doc: "a storage node of the AWS-EBS-2011 cluster: volumes on disk, mirrored writes, re-mirroring through the control plane", Run: runNode})
	lab.RegisterAgent(lab.Agent{Name: ControlAgent, Doc: "the AWS-EBS-2011 control plane: volume records and free slots in etcd, primary election, create-volume, a bounded worker pool", Run: runControl})
}

// Settings are an aws-ebs-cluster workload's, each declared once here or
// in the agents' packages, with its default in NewSettings.
type Settings struct {
	// Zones is the number of availability zones (zone-a, zone-b, ...).
	Zones int `yaml:"zones" json:"zones"`
	// NodesPerZone is the storage nodes of each zone's cluster.
	NodesPerZone int `yaml:"nodes_per_zone" json:"nodes_per_zone"`
	// VolumesPerNode is the volumes each node is primary for; each is
	// mirrored on the next node of its zone.
	VolumesPerNode int `yaml:"volumes_per_node" json:"volumes_per_node"`
	// SpareSlots is each node's free replica slots beyond the replicas it
	// holds: the room re-mirroring and create-volume claim.
	SpareSlots         int `yaml:"spare_slots" json:"spare_slots"`
	ebsnode.Settings   `yaml:",inline"`
	ebscontrol.Service `yaml:",inline"`
	// CreateRate is the create-volume calls a second from each zone (each
	// volume created is deleted again at once).
	CreateRate float64 `yaml:"create_rate" json:"create_rate"`
	// CreateTimeout is the caller's timeout of a create-volume call.
	CreateTimeout lab.Duration `yaml:"create_timeout" json:"create_timeout"`
	// CreateSLO: a create-volume call counts as a success when it answers
	// OK within this long (a caller that waits longer has failed its own
	// caller, even if it waits on).
	CreateSLO lab.Duration `yaml:"create_slo" json:"create_slo"`
	// Program, when set, is a user's create-volume caller run in every
	// zone in place of the harness's (create_timeout then describes only
	// the harness's): see Contract and docs/bring-your-own-client.md.
	Program *lab.ClientProgram `yaml:"program,omitempty" json:"program,omitempty"`
}

// NewSettings are the defaults: the 2011 cluster and control plane.
func NewSettings() *Settings {
	return &Settings{Zones: 3, NodesPerZone: 4, VolumesPerNode: 6, SpareSlots: 5,
		Settings: ebsnode.DefaultSettings(), Service: ebscontrol.DefaultService(),
		CreateRate: 2, CreateTimeout: lab.Duration(3 * time.Second), CreateSLO: lab.Duration(2 * time.Second)}
}

// Bounds of the settings.
const (
	// MaxZones is the zones the target groups name (zone-a to zone-f).
	MaxZones = 6
	// MaxCreateRate is the harness's create-volume calls a second per zone.
	MaxCreateRate = 200
)

// ZoneNames are the zones' names, which are also their target groups.
var ZoneNames = []string{"zone-a", "zone-b", "zone-c", "zone-d", "zone-e", "zone-f"}

// Check validates the settings.
func (s *Settings) Check() []lab.Problem {
	var c lab.Checks
	c.Need(s.Zones >= 2 && s.Zones <= MaxZones, "zones", "want 2 to %d (one zone degrades, the others call create-volume), got %d", MaxZones, s.Zones)
	c.Need(s.NodesPerZone >= 3, "nodes_per_zone", "want at least 3 (a node that lost its mirror needs a third node for a new one), got %d", s.NodesPerZone)
	c.Need(s.Zones*s.NodesPerZone <= lab.MaxInstances, "nodes_per_zone", "%d nodes in all is more than one machine runs here (%d)", s.Zones*s.NodesPerZone, lab.MaxInstances)
	c.Need(s.VolumesPerNode >= 1 && s.VolumesPerNode <= 100, "volumes_per_node", "want 1 to 100 (a goroutine and a connection each), got %d", s.VolumesPerNode)
	c.Need(s.SpareSlots >= 0, "spare_slots", "want >= 0, got %d", s.SpareSlots)
	c = append(c, s.Settings.Check()...)
	c = append(c, s.Service.Check(s.Zones)...)
	c.Need(s.CreateRate > 0 && s.CreateRate <= MaxCreateRate, "create_rate", "want more than 0 and at most %d calls/s per zone, got %g", MaxCreateRate, s.CreateRate)
	c.Msg("create_timeout", lab.CheckDuration(s.CreateTimeout, 10*time.Millisecond, "the least time a create-volume call takes here"))
	c.Msg("create_slo", lab.CheckDuration(s.CreateSLO, 10*time.Millisecond, "the least time a create-volume call takes here"))
	if s.Program != nil {
		c = append(c, lab.Under("program", s.Program.Check())...)
	}
	return c
}

// Facts describe the cluster in a report.
func (s *Settings) Facts() []lab.Fact {
	backoff := fmt.Sprintf("%s, doubling to %s", s.SearchBackoff, s.SearchBackoffMax)
	if s.SearchBackoff == s.SearchBackoffMax {
		backoff = fmt.Sprintf("%s, fixed", s.SearchBackoff)
	}
	if s.SearchJitter {
		backoff += ", each wait drawn between half and all of it (jitter)"
	}
	pool := fmt.Sprintf("one regional pool of %d workers for every zone", s.PoolWorkers)
	if s.Pool == ebscontrol.PerZone {
		pool = fmt.Sprintf("a pool per zone, %d workers each", max(s.PoolWorkers/s.Zones, 1))
	}
	return []lab.Fact{
		{Name: "Kind", Value: KindName},
		{Name: "Cluster", Value: fmt.Sprintf("%d zones of %d storage nodes (processes), %d volumes of %d KiB per node, each mirrored on the next node of its zone", s.Zones, s.NodesPerZone, s.VolumesPerNode, s.VolumeKiB)},
		{Name: "Spare capacity", Value: fmt.Sprintf("%d free replica slots per node (%d per zone) for %d volumes per zone", s.SpareSlots, s.SpareSlots*s.NodesPerZone, s.VolumesPerNode*s.NodesPerZone)},
		{Name: "Writes", Value: fmt.Sprintf("%d bytes per volume every %s, acknowledged by the mirror within %s", s.WriteBytes, s.WriteEvery, s.MirrorTimeout)},
		{Name: "Search back-off", Value: backoff},
		{Name: "Control plane", Value: fmt.Sprintf("%s; request timeout %s; a call for space looks again every %s", pool, s.RequestTimeout, s.SpacePoll)},
		{Name: "Create-volume load", Value: fmt.Sprintf("%g calls/s from each zone; a success answers OK within %s; callers: %s", s.CreateRate, s.CreateSLO, s.program())},
		{Name: "Links", Value: "node to node through an in-process toxiproxy (github.com/Shopify/toxiproxy/v2 v2.12.0) on 127.0.0.1, one proxy per node"},
	}
}

// kind is aws-ebs-cluster.
type kind struct{}

func (kind) Name() string              { return KindName }
func (kind) Systems() []string         { return []string{"etcd"} }
func (kind) NewSettings() lab.Settings { return NewSettings() }
func (kind) Groups() []string          { return ZoneNames }
func (kind) Probe(g string) lab.Target { return &Zone{name: g} }
func (kind) Noun() (string, string)    { return "storage node", "storage nodes" }

// PreferPlacement: local processes, where the replay was calibrated.
func (kind) PreferPlacement() (string, string) {
	return "local", "the storage nodes and the control plane were calibrated as local processes; their links go through the harness's in-process proxy"
}

// runNode is `chaoslab agent ebs-node --config JSON`.
func runNode(ctx context.Context, config json.RawMessage, out io.Writer, log *slog.Logger) error {
	var cfg ebsnode.Config
	if err := json.Unmarshal(config, &cfg); err != nil {
		return fmt.Errorf("decode config: %w", err)
	}
	cfg.Logger = log.With("node", cfg.ID)
	cfg.OnListen = func(status, mirror string) { fmt.Fprintf(out, "{\"status\":%q,\"mirror\":%q}\n", status, mirror) }
	return ebsnode.Run(ctx, cfg)
}

// runControl is `chaoslab agent ebs-control --config JSON`.
func runControl(ctx context.Context, config json.RawMessage, out io.Writer, log *slog.Logger) error {
	var cfg ebscontrol.Config
	if err := json.Unmarshal(config, &cfg); err != nil {
		return fmt.Errorf("decode config: %w", err)
	}
	cfg.Logger = log
	cfg.OnListen = func(addr string) { fmt.Fprintf(out, "{\"api\":%q}\n", addr) }
	return ebscontrol.Run(ctx, cfg)
}

// listenedPort is the port of the address a program printed under key:
// a program in a container prints its wildcard address, which the
// harness reaches at the container's own.
func listenedPort(line []byte, key string) string {
	_, port, err := net.SplitHostPort(listenedAt(line, key))
	if err != nil {
		return ""
	}
	return port
}

// listenedAt reads the address a program prints once it listens.
func listenedAt(line []byte, key string) string {
	var m map[string]string
	if json.Unmarshal(line, &m) != nil {
		return ""
	}
	return strings.TrimSpace(m[key])
}
