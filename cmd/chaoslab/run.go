package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/shlex"
	"github.com/spf13/cobra"

	"github.com/chaoslab/chaoslab/harness/gameday"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/runner"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/verdict"
)

// runFlags are run's flags.
type runFlags struct {
	variant, out, placement   string
	seed                      int64
	imgs                      map[string]string
	client, clientImage, name string
	clientEnv                 map[string]string
	withRefs, asJSON          bool
	output                    string
	repeat                    int
	minRate                   float64
	junit                     string
	keepData                  bool
	logFormat                 string
	metricsAddr               string
	size                      string
}

func runCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run ID|FILE",
		Short: "Replay a scenario on real servers and write its report",
		Long: `Replay a scenario: start the servers, run the client workload of each
variant, inject the incident's faults, measure, and write a report to
OUT/<scenario>-<time>/ (report.json, report.md, index.html).

--client 'CMD ARGS' runs your own client program in place of the
scenario's (a variant named after it, expected to hold), judged from the
outside: its process as the kernel counts it and its requests as the
servers count them; --with-references runs the scenario's own vulnerable
and mitigated variants beside it. --repeat N runs it N times (seeds from
--seed on) and reports each variant's rate of reaching its expected
verdict with a 95% interval; --junit FILE writes JUnit XML; -o json (or
--json) prints the verdicts as JSON. --metrics-addr 127.0.0.1:PORT serves
the series for Prometheus while the run lasts (GET /metrics, no token).

Exit status: 0 when the run (with --repeat: every run, or at least the
share --min-rate gives, e.g. --min-rate 0.9) met the scenario's
expectation (for both variants: REPRODUCED; for your client: HELD), 1 when
it completed without meeting it, 2 for an input error (a bad flag, an
unknown id or variant, a scenario file refused), 3 when the lab itself
failed (a server did not start; a run inconclusive because the lab
failed), 130 when it was interrupted. Ctrl-C stops the run, cleans up
every process, cgroup and container it started, and still writes a report
marked aborted; so does a panic anywhere in the run (exit status 3).

On the console: one status line per variant (phase, time elapsed of the
expected total, ETA, the leader, the figures the system and the workload
declare), redrawn in place on a terminal; elsewhere, or with CI set, a
plain line every 20 s and one per phase change; warnings; and a closing
summary. The detail is logged to chaoslab.log in the run folder (-v: on
the console too; --log-format json). The servers' data directories are
removed once they stop (--keep-data keeps them), and large logs no report
links to are compressed (.log.gz).`,
		Example: `  chaoslab run il-0587-zk-treecache-reconnect-storm
  chaoslab run IL-0587 --variant mitigated --seed 7
  chaoslab run IL-0587 --client '/usr/bin/python3 examples/zk-treecache-python/treecache.py' --with-references
  chaoslab run IL-0587 --client './my-client' --repeat 5 --junit out/junit.xml`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeScenarioIDs,
		RunE:              func(cmd *cobra.Command, args []string) error { return runScenario(cmd, args[0], f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.variant, "variant", "both", "a variant (vulnerable, mitigated, ...), a comma-separated list, or both (every variant)")
	fl.StringVar(&f.size, "size", "", "replay at one of the scenario's sizes (ci: the reduced size CI replays; chaoslab show lists them); default: the scenario as written")
	fl.Int64Var(&f.seed, "seed", 1, "random seed (recorded in the report; the same seed replays the same choices)")
	fl.StringVar(&f.out, "out", "out/runs", "parent folder of the run's report folder")
	fl.StringVar(&f.placement, "placement", "auto", "where servers and clients run: local (processes here), docker (containers), kubernetes (pods of the cluster kubectl reaches, docs/kubernetes.md), auto (docker when an engine answers and the images are here, else local, unless the workload was calibrated on one)")
	fl.StringVar(&f.placement, "backend", "auto", "the same as --placement")
	_ = fl.MarkHidden("backend")
	fl.StringToStringVar(&f.imgs, "image", nil, "image of a system on the docker placement, e.g. --image zookeeper=zookeeper:3.8 (also CHAOSLAB_ZOOKEEPER_IMAGE, CHAOSLAB_CLIENT_IMAGE, or topology.zookeeper.image)")
	fl.StringVar(&f.client, "client", "", "your client program and its arguments, run in place of the scenario's own (a shell command line, run with exec)")
	fl.StringVar(&f.clientImage, "client-image", "", "your client's image on the docker placement (with --client: the command run in it)")
	fl.StringVar(&f.name, "client-name", "", "the variant name of your client (default: the program's base name)")
	fl.StringToStringVar(&f.clientEnv, "client-env", nil, "more environment for your client, KEY=VALUE")
	fl.BoolVar(&f.withRefs, "with-references", false, "with --client: also run the scenario's own variants, so the report shows your client between them")
	fl.IntVar(&f.repeat, "repeat", 1, "run the scenario this many times (seeds --seed, --seed+1, ...) and report each variant's rate with a 95% interval")
	fl.Float64Var(&f.minRate, "min-rate", 1, "with --repeat: exit 0 when at least this share of the runs met the scenario's expectation (0 < rate <= 1; 1: every run)")
	fl.StringVar(&f.junit, "junit", "", "write JUnit XML of the run(s) to this file")
	fl.BoolVar(&f.asJSON, "json", false, "print the verdicts as JSON instead of the summary (the same as -o json)")
	fl.BoolVar(&f.keepData, "keep-data", false, "keep the servers' data directories in the run folder (removed once the servers stop, by default)")
	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "serve the run's series for Prometheus at http://ADDR"+gameday.MetricsPath+" while it lasts, e.g. 127.0.0.1:9477 (a loopback address only; default: off)")
	fl.StringVar(&f.logFormat, "log-format", "text", "format of the run's log file, chaoslab.log in the run folder: text or json")
	outputFlag(cmd, &f.output)
	runCompletions(cmd)
	return cmd
}

// runScenario is chaoslab run.
func runScenario(cmd *cobra.Command, ref string, f runFlags) error {
	s, err := findScenario(ref)
	if err != nil {
		return err
	}
	if s, err = s.Sized(f.size); err != nil {
		return errInput(err)
	}
	if err := f.check(s); err != nil {
		return err
	}
	o := runner.Options{OutDir: f.out, Placement: f.placement, Images: f.imgs, WithReferences: f.withRefs}
	switch f.variant {
	case "", "both", "all":
	default:
		o.Variants = strings.Split(f.variant, ",")
	}
	if f.client != "" || f.clientImage != "" {
		if o.Client, err = clientProgram(f); err != nil {
			return errInput(err)
		}
	}
	ctx, stop := interruptible(cmd.Context(), "interrupted: stopping the run, cleaning up and writing an aborted report")
	defer stop()
	con, err := newRunConsole(cmd, f.logFormat)
	if err != nil {
		return err
	}
	defer con.close()
	con.hook(&o)
	o.KeepData = f.keepData
	settle := func() {}
	if f.metricsAddr != "" {
		var stopMetrics func()
		if settle, stopMetrics, err = serveRunMetrics(ctx, con, &o, f.metricsAddr); err != nil {
			return err
		}
		defer stopMetrics()
	}
	if f.repeat > 1 {
		o.OutDir = filepath.Join(f.out, fmt.Sprintf("%s-repeat-%s", s.ID, time.Now().UTC().Format("20060102T150405Z")))
	}
	var runs []*reports.Report
	for i := range max(f.repeat, 1) {
		o.Seed = f.seed + int64(i)
		o.Rerun = rerunCommand(rerunRef(ref, s.ID), o.Seed, f)
		r, err := runner.Run(ctx, s, o)
		con.done()
		settle()
		if r != nil && r.Dir != "" {
			runs = append(runs, r)
			if !f.asJSON {
				fmt.Fprint(cmd.OutOrStdout(), closingSummary(r))
			}
		}
		if err != nil || ctx.Err() != nil {
			return errors.Join(err, finish(cmd, s.ID, runs, f, o.OutDir), interrupted(ctx))
		}
	}
	if err := finish(cmd, s.ID, runs, f, o.OutDir); err != nil {
		return err
	}
	return outcome(runs, f.minRate)
}

// finish writes what the runs add up to: the repeat summary, JUnit, JSON.
func finish(cmd *cobra.Command, id string, runs []*reports.Report, f runFlags, dir string) error {
	if len(runs) == 0 {
		return nil
	}
	if f.repeat > 1 {
		rep := reports.NewRepeat(id, runs)
		if err := reports.WriteRepeat(rep, dir); err != nil {
			return err
		}
		if !f.asJSON {
			fmt.Fprintf(cmd.OutOrStdout(), "%ssummary: %s\n", rep.Text(), filepath.Join(dir, "index.html"))
		}
	}
	if f.junit != "" {
		if err := reports.WriteJUnit(f.junit, runs); err != nil {
			return err
		}
	}
	if f.asJSON {
		return printJSON(cmd, runs)
	}
	return nil
}

// clientProgram is --client and its companions as a program.
func clientProgram(f runFlags) (*lab.ClientProgram, error) {
	p := &lab.ClientProgram{Name: f.name, Image: f.clientImage, Env: f.clientEnv}
	if f.client != "" {
		// Here a shell runs the command line; in an image, which may have
		// no shell, its words are the command.
		p.Command = []string{"sh", "-c", "exec " + f.client}
		if f.clientImage != "" {
			words, err := shlex.Split(f.client)
			if err != nil {
				return nil, fmt.Errorf("read --client: %w", err)
			}
			p.Command = words
		}
		if p.Name == "" {
			p.Name = clientName(f.client)
		}
	}
	if p.Name == "" && p.Image != "" {
		p.Name = imageName(p.Image)
	}
	return p, nil
}

// imageName is an image reference's last path element without its tag.
func imageName(ref string) string {
	name := ref[strings.LastIndex(ref, "/")+1:]
	if i := strings.IndexAny(name, ":@"); i > 0 {
		name = name[:i]
	}
	return name
}

// clientName is the base name of a command line's program (the script's,
// for an interpreter running one).
func clientName(cmdline string) string {
	words := strings.Fields(cmdline)
	name := words[0]
	for _, w := range words[1:] {
		if !strings.HasPrefix(w, "-") && strings.ContainsAny(w, "./") {
			name = w
			break
		}
	}
	base := filepath.Base(name)
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// rerunRef is how a rerun names the scenario: the file it was read from
// (a scenario of the user's is not found by its id), else its id; with
// the --cases it was run with.
func rerunRef(ref, id string) string {
	if _, err := os.Stat(ref); err != nil {
		ref = id
	}
	if strings.ContainsAny(ref, " '\"$") {
		ref = strconv.Quote(ref)
	}
	if userCases != "" {
		return "--cases " + strconv.Quote(userCases) + " " + ref
	}
	return ref
}

func rerunCommand(id string, seed int64, f runFlags) string {
	c := fmt.Sprintf("chaoslab run %s --seed %d", id, seed)
	if f.size != "" {
		c += " --size " + f.size
	}
	if f.variant != "" && f.variant != "both" {
		c += " --variant " + f.variant
	}
	if f.client != "" {
		c += " --client " + strconv.Quote(f.client)
	}
	if f.clientImage != "" {
		c += " --client-image " + f.clientImage
	}
	if f.withRefs {
		c += " --with-references"
	}
	return c
}

// printJSON prints each run's verdicts, one JSON document.
func printJSON(cmd *cobra.Command, runs []*reports.Report) error {
	type variant struct {
		Name    string `json:"name"`
		Expect  string `json:"expect"`
		Verdict string `json:"verdict"`
		Reason  string `json:"reason"`
	}
	type run struct {
		Scenario       string    `json:"scenario"`
		Seed           int64     `json:"seed"`
		Verdict        string    `json:"verdict"`
		ExpectationMet bool      `json:"expectation_met"`
		Report         string    `json:"report"`
		Variants       []variant `json:"variants"`
	}
	var out []run
	for _, r := range runs {
		x := run{Scenario: reportScenario(r), Seed: r.Seed, Verdict: string(r.Verdict), ExpectationMet: r.ExpectationMet, Report: filepath.Join(r.Dir, "index.html")}
		for _, v := range r.Variants {
			x.Variants = append(x.Variants, variant{v.Name, string(v.Expect), string(v.Verdict), v.Reason})
		}
		out = append(out, x)
	}
	return writeJSON(cmd.OutOrStdout(), out)
}

// interrupted is errAborted once ctx is cancelled, else nil.
func interrupted(ctx context.Context) error {
	if ctx.Err() != nil {
		return errAborted
	}
	return nil
}

// interruptible returns a context cancelled, with the signal as its cause,
// on Ctrl-C or SIGTERM (after logging msg), and the function that stops
// listening.
func interruptible(parent context.Context, msg string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case sig := <-sigs:
			slog.Warn(msg, "signal", sig.String())
			cancel(fmt.Errorf("%s received", sig))
		case <-ctx.Done():
		}
	}()
	return ctx, func() { signal.Stop(sigs); cancel(nil) }
}

// outcome is finished runs' exit: errAborted when one was interrupted;
// nil when at least the share minRate of them met their expectation (1:
// every one); otherwise errExpectation when one did not meet it, or
// errLabFailed when the only ones that did not were inconclusive because
// the lab failed.
func outcome(runs []*reports.Report, minRate float64) error {
	met := 0
	for _, r := range runs {
		if r.Verdict == verdict.Aborted {
			return errAborted
		}
		if r.ExpectationMet {
			met++
		}
	}
	if len(runs) > 0 && float64(met) >= minRate*float64(len(runs))-1e-9 {
		return nil
	}
	var err error
	for _, r := range runs {
		switch {
		case r.ExpectationMet:
		case labFailed(r):
			err = errLabFailed
		default:
			return errExpectation
		}
	}
	return err
}

// labFailed says whether a run is inconclusive because the lab failed in
// one of its variants.
func labFailed(r *reports.Report) bool {
	if r.Verdict != verdict.Inconclusive {
		return false
	}
	for _, v := range r.Variants {
		if v.LabError != "" {
			return true
		}
	}
	return false
}
