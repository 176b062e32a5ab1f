// Package runner replays a scenario on real servers: for each variant it
// starts the cluster, seeds it, starts the client processes under their
// limits, injects the fault timeline with health checks around every fault,
// samples servers and clients on one clock, and judges the hypotheses.
package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/chaoslab/chaoslab/harness/images"
	"github.com/chaoslab/chaoslab/harness/limits"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/verdict"
)

// Options of one run.
type Options struct {
	// Variants to run, in order; empty means every variant of the scenario.
	Variants []string
	Seed     int64
	// OutDir is the parent of the run folder (default out/runs).
	OutDir string
	// Backend: local (processes on this machine), docker (containers) or
	// auto (docker when an engine answers and the images are here).
	Backend string
	// Images overrides the image of a system ("zookeeper", "client").
	Images map[string]string
	// ClientBinary is the program started as each client process; it must
	// understand `agent zk-tree-mirror` (default: this executable).
	ClientBinary string
	// ClientArgs come before "agent ..." (e.g. a test binary's flags).
	ClientArgs []string
	// Rerun is the command that replays the run, for the report.
	Rerun string
	// OnEvent, when set, is called for every timeline event as it happens
	// (faults, health checks, notes), e.g. to drive a game-day display.
	OnEvent func(variant string, e reports.Event)
	Logger  *slog.Logger
}

// Run replays s and writes its report. The returned report is always
// written when the run got as far as creating its folder, also when ctx is
// cancelled (verdict aborted); err is for failures of the lab itself.
func Run(ctx context.Context, s *scenarios.Scenario, o Options) (*reports.Report, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.OutDir == "" {
		o.OutDir = filepath.Join("out", "runs")
	}
	var be backend
	var why string
	var err error
	if isFleet(s) {
		be, why, err = chooseFleetBackend(ctx, o.Backend, s, o)
	} else {
		be, why, err = chooseBackend(ctx, o.Backend, s, o)
	}
	if err != nil {
		return nil, err
	}
	o.Backend = be.Name()
	if err := preflight(be, s); err != nil {
		return nil, err
	}
	if len(o.Variants) == 0 {
		o.Variants = s.VariantNames()
	}
	for _, v := range o.Variants {
		if _, ok := s.Variants[v]; !ok {
			return nil, fmt.Errorf("run scenario: %s has no variant %q (has %s)", s.ID, v, strings.Join(s.VariantNames(), ", "))
		}
	}
	if o.ClientBinary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find client binary: %w", err)
		}
		o.ClientBinary = exe
	}
	start := time.Now()
	runID := fmt.Sprintf("%s-%s", s.ID, start.UTC().Format("20060102T150405Z"))
	dir, err := filepath.Abs(filepath.Join(o.OutDir, runID))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create run dir: %w", err)
	}
	r := &reports.Report{
		Backend:   be.Name(),
		Schema:    reports.SchemaVersion,
		RunID:     runID,
		StartedAt: start,
		Scenario:  s,
		Seed:      o.Seed,
		Host:      hostInfo(),
		Versions:  versions(),
		Rerun:     o.Rerun,
	}
	if s.Source != "" {
		if b, err := readSource(s.Source); err == nil {
			r.ScenarioYAML = string(b)
		}
	}
	r.Case = caseRef(s.Case)
	log := o.Logger.With("run", runID)
	log.Info("run starting", "scenario", s.ID, "variants", o.Variants, "seed", o.Seed, "dir", dir,
		"per_variant", s.RunLength().String())

	if err := limits.Sweep(log); err != nil {
		log.Warn("sweep leftover cgroups", "err", err)
	}
	if why != "" {
		log.Info("backend", "backend", be.Name(), "why", why)
	}
	r.BackendWhy = why
	if db, ok := be.(dockerBackend); ok {
		delete(r.Versions, "java") // the servers' Java is the image's, not this machine's
		r.Versions["image zookeeper"] = db.zkImage
		r.Versions["image client"] = db.clientImage
	}
	if err := be.Prepare(ctx, log); err != nil {
		return nil, err
	}

	var runErr error
	for i, name := range o.Variants {
		vr := &reports.VariantResult{Name: name, Description: s.Variants[name].Description, Expect: verdict.Verdict(s.Expect[name])}
		vr.Workload, _ = s.EffectiveWorkload(name)
		r.Variants = append(r.Variants, vr)
		if ctx.Err() != nil {
			vr.Verdict, vr.Reason = verdict.Aborted, "not started: the run was interrupted"
			continue
		}
		seed := o.Seed + int64(i)*7919
		log.Info("variant starting", "variant", name, "strategy", vr.Workload.Strategy, "clients", vr.Workload.Clients)
		v := &variantRun{
			s: s, name: name, vr: vr, seed: seed, dir: filepath.Join(dir, name),
			runID: fmt.Sprintf("%s-%s-%d", s.ID, name, start.Unix()), opts: o, backend: be, log: log.With("variant", name),
		}
		err := v.run(ctx)
		switch {
		case ctx.Err() != nil:
			vr.Verdict, vr.Reason = verdict.Aborted, "interrupted: "+context.Cause(ctx).Error()
		case err != nil:
			vr.LabError = err.Error()
			vr.Verdict, vr.Reason = verdict.Inconclusive, "the lab failed: "+err.Error()
			runErr = errors.Join(runErr, fmt.Errorf("variant %s: %w", name, err))
		}
		if fb, ok := be.(fleetBackend); ok && r.Versions["etcd"] == "" {
			if fb.docker {
				r.Versions["image etcd"] = fb.etcdImage
				r.Versions["image front-end"] = fb.clientImage
			} else {
				r.Versions["etcd"] = images.EtcdVersion + " (" + *fb.etcdBin + ")"
			}
			delete(r.Versions, "java")
		}
		if r.Versions["zookeeper"] == "" && v.zkVersion != "" {
			r.Versions["zookeeper"] = v.zkVersion
		}
		vr.LogDir = name + "/logs"
		log.Info("variant done", "variant", name, "metrics", shortMetrics(vr.Metrics))
	}
	r.EndedAt = time.Now()
	if _, _, err := r.Recheck(nil); err != nil {
		runErr = errors.Join(runErr, err)
	}
	for _, vr := range r.Variants {
		if vr.Verdict == "" {
			vr.Verdict = verdict.Inconclusive
		}
	}
	if err := reports.Write(r, dir); err != nil {
		return r, errors.Join(runErr, err)
	}
	return r, runErr
}

func shortMetrics(m map[string]verdict.Float) string {
	var parts []string
	for _, k := range []string{"servers.outstanding_requests.max", "clients.oom_kills", "clients.rss_mb.max", "clients.fresh_after_fault_s",
		"fleet.routing_success.min_server_after_trigger", "fleet.threads.max", "fleet.thread_limit_exits", "fleet.health_removals", "fleet.recovery_after_restart_s"} {
		if v, ok := m[k]; ok {
			parts = append(parts, fmt.Sprintf("%s=%s", k, verdict.FormatValue(float64(v))))
		}
	}
	return strings.Join(parts, " ")
}

func readSource(path string) ([]byte, error) {
	if b, err := os.ReadFile(path); err == nil {
		return b, nil
	}
	return scenarios.ReadBuiltin(filepath.Base(path))
}

func caseRef(id string) reports.CaseRef { return reports.CaseRefFor(id) }

func hostInfo() reports.Host {
	h := reports.Host{OS: runtime.GOOS + "/" + runtime.GOARCH, Cores: runtime.NumCPU()}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int
		fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "MemTotal: %d kB", &kb)
		h.MemoryMB = kb / 1024
	}
	mode, _ := limits.Detect()
	h.Cgroup = string(mode)
	return h
}

func versions() map[string]string {
	v := map[string]string{"go": runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		v["chaoslab"] = bi.Main.Version
		modified := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v["chaoslab"] = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if modified {
			v["chaoslab"] += " (with uncommitted changes)"
		}
		for _, d := range bi.Deps {
			switch d.Path {
			case "github.com/go-zookeeper/zk":
				v["go-zookeeper/zk"] = d.Version
			case "go.etcd.io/etcd/client/v3":
				v["etcd client"] = d.Version
			}
		}
	}
	if out, err := javaVersion(); err == nil {
		v["java"] = out
	}
	return v
}

// rng returns the variant's seeded random source.
func rng(seed int64) *rand.Rand { return rand.New(rand.NewPCG(uint64(seed), 0xC4A05)) }
