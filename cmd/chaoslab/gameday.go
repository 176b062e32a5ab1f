package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/chaoslab/chaoslab/harness/gameday"
	"github.com/chaoslab/chaoslab/harness/runner"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
)

type gamedayFlags struct {
	variant, out, placement string
	seed                    int64
	port                    int
	// listen, when set, is a second address of the dashboard, for
	// colleagues on other machines (TLS, a certificate made for the run);
	// tlsOn serves TLS on the loopback address instead.
	listen string
	tlsOn  bool
	// untilEnded keeps the run going after its timeline until the
	// facilitator ends it, for at most maxOpen.
	untilEnded bool
	maxOpen    time.Duration
	// command is the rerun's command ("chaoslab gameday"); ref the
	// scenario as the command was given it (an id or a file).
	command, ref string
}

func (f gamedayFlags) rerun(id, v string) string {
	c := f.command
	if c == "" {
		c = "chaoslab gameday"
	}
	return fmt.Sprintf("%s %s --variant %s --seed %d", c, id, v, f.seed)
}

func gamedayCmd() *cobra.Command {
	var f gamedayFlags
	cmd := &cobra.Command{
		Use:   "gameday ID|FILE",
		Short: "Run a scenario with a live dashboard, facilitator controls and operator actions",
		Long: `Run one variant of a scenario on real servers with a live dashboard on
127.0.0.1 (--port; 0 picks a free one): the report's charts drawn as the
samples come, fault windows and events as they happen, each hypothesis
once judged. A facilitator holds the timeline before its next step, takes
the next step now, extends or ends the observation; an operator takes
actions (any registered fault, e.g. kill-restart of the leader to force an
election, or of clients:50% to stop half the clients) from the dashboard
or with 'chaoslab gameday act'. Every control and action is on the
report's timeline with its author and role. The run prints three URLs,
each with a token of its own: the facilitator's (every control), an
operator's (acts on the system) and a viewer's (watches): give each
person the one for their role. Only requests bearing one of them can read
the events; a viewer's cannot act, an operator's cannot steer the
timeline. The latest samples are
exposed for Prometheus at /metrics.`,
		Example: `  chaoslab gameday il-0587-zk-treecache-reconnect-storm
  chaoslab gameday il-0587 --until-ended          # the aftermath lasts until: chaoslab gameday control end
  chaoslab gameday act kill-restart leader 3s --author alice
  chaoslab gameday control hold`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeScenarioIDs,
		RunE:              func(cmd *cobra.Command, args []string) error { return runGameday(cmd, args[0], f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.variant, "variant", "", "the variant to run (default: the scenario's first, usually vulnerable)")
	fl.Int64Var(&f.seed, "seed", 1, "random seed (recorded in the report)")
	fl.StringVar(&f.out, "out", "out/runs", "parent folder of the run's report folder")
	fl.StringVar(&f.placement, "placement", "auto", "local, docker or auto")
	fl.IntVar(&f.port, "port", gameday.DefaultPort, "the dashboard's port on 127.0.0.1 (0: any free port)")
	fl.StringVar(&f.listen, "listen", "", "serve the dashboard on HOST:PORT too, for colleagues on other machines: over TLS with a certificate made for the run (written to the run folder as "+gameday.CertFile+"), tokens still required; the facilitator's URL stays on 127.0.0.1:--port")
	fl.BoolVar(&f.tlsOn, "tls", false, "serve TLS on 127.0.0.1:--port (without --listen)")
	fl.BoolVar(&f.untilEnded, "until-ended", false, "after the timeline, keep the system running under its aftermath until the facilitator ends the run (chaoslab gameday control end)")
	fl.DurationVar(&f.maxOpen, "max-open", 2*time.Hour, "with --until-ended: the longest the run goes on after its timeline")
	cmd.AddCommand(gamedayActCmd(), gamedayControlCmd(), gamedayNoteCmd())
	return cmd
}

func runGameday(cmd *cobra.Command, ref string, f gamedayFlags) error {
	s, v, err := gamedayVariant(ref, f.variant)
	if err != nil {
		return err
	}
	f.ref = ref
	_, err = playLive(cmd, s, v, f, "game day", nil)
	return err
}

// gamedayVariant finds the scenario and the variant to play (default:
// the scenario's first, usually vulnerable).
func gamedayVariant(ref, v string) (*scenarios.Scenario, string, error) {
	s, err := findScenario(ref)
	if err != nil {
		return nil, "", err
	}
	if v == "" {
		v = s.VariantNames()[0]
	}
	if !slices.Contains(s.VariantNames(), v) {
		return nil, "", errInput(fmt.Errorf("variant %q: the scenario has %s", v, strings.Join(s.VariantNames(), ", ")))
	}
	return s, v, nil
}

// listenDashboard opens the dashboard: on 127.0.0.1:--port (over TLS
// with --tls), and with --listen also at that address over TLS, where the
// operators' and viewers' URLs point while the facilitator's stays on
// this machine.
func listenDashboard(f gamedayFlags, hub *gameday.Hub, ctl *gameday.Controls) (*gameday.Server, error) {
	var srv *gameday.Server
	var err error
	if f.tlsOn && f.listen == "" {
		srv, err = gameday.ListenAt(fmt.Sprintf("127.0.0.1:%d", f.port), true, hub, ctl)
	} else {
		srv, err = gameday.Listen("127.0.0.1", f.port, hub, ctl)
	}
	if err != nil || f.listen == "" {
		return srv, err
	}
	if err := srv.ServeAlso(f.listen); err != nil {
		_ = srv.Close(context.Background())
		return nil, fmt.Errorf("--listen %s: %w", f.listen, err)
	}
	return srv, nil
}

// playLive runs one variant of s with the live dashboard (what names it:
// "game day", "training"); steer, when set, mounts its routes on the
// dashboard and returns the run's Steer in place of the bare controls.
func playLive(cmd *cobra.Command, s *scenarios.Scenario, v string, f gamedayFlags, what string, steer func(*gameday.Server) runner.Steer) (*reports.Report, error) {
	hub := gameday.NewHub()
	ctl := gameday.NewControls(func(d string) { hub.Control("", d) })
	if f.untilEnded {
		if f.maxOpen <= 0 || f.maxOpen > 24*time.Hour {
			return nil, errInput(fmt.Errorf("--max-open %s: want more than 0 and at most 24h", f.maxOpen))
		}
		ctl.UntilEnded(f.maxOpen)
	}
	srv, err := listenDashboard(f, hub, ctl)
	if err != nil {
		return nil, errInput(err)
	}
	defer srv.Close(context.Background())
	ctx, stop := interruptible(cmd.Context(), "interrupted: stopping the "+what+", cleaning up and writing an aborted report")
	defer stop()
	con, err := newRunConsole(cmd, "text")
	if err != nil {
		return nil, err
	}
	defer con.close()
	o := runner.Options{OutDir: f.out, Placement: f.placement, Variants: []string{v}, Seed: f.seed, Rerun: f.rerun(rerunRef(f.ref, s.ID), v)}
	con.hook(&o)
	if srv.CertPEM != nil {
		prev := o.OnDir
		o.OnDir = func(d string) {
			_ = os.WriteFile(filepath.Join(d, gameday.CertFile), srv.CertPEM, 0o644)
			if prev != nil {
				prev(d)
			}
		}
	}
	settle := gameday.Wire(ctx, &o, srv, func(string) {
		if srv.CertPEM != nil {
			con.con.Println("the dashboard serves TLS with a certificate made for this run, SHA-256 " + gameday.Fingerprint(srv.CertPEM) + " (" + gameday.CertFile + " in the run folder; chaoslab gameday act --cert FILE)")
		}
		con.con.Println(what + " dashboard, the facilitator's (on this machine): " + srv.URLFor(gameday.Facilitator))
		con.con.Println("  an operator's (acts): " + srv.URLFor(gameday.Operator))
		con.con.Println("  a viewer's (watches): " + srv.URLFor(gameday.Viewer))
	})
	if steer != nil {
		o.Steer = steer(srv)
	}
	r, err := runner.Run(ctx, s, o)
	con.done()
	settle()
	if r != nil && r.Dir != "" {
		fmt.Fprint(cmd.OutOrStdout(), closingSummary(r))
	}
	return r, errors.Join(err, interrupted(ctx))
}

// liveGameday finds the dashboard of the newest game day running under out.
func liveGameday(out string) (gameday.Info, error) {
	files, _ := filepath.Glob(filepath.Join(out, "*", gameday.InfoFile))
	var newest gameday.Info
	var at time.Time
	for _, p := range files {
		st, err := os.Stat(p)
		b, rerr := os.ReadFile(p)
		var gi gameday.Info
		if err != nil || rerr != nil || json.Unmarshal(b, &gi) != nil || !st.ModTime().After(at) {
			continue
		}
		if processAlive(gi.Pid) {
			newest, at = gi, st.ModTime()
		}
	}
	if newest.Addr == "" {
		return newest, errInput(fmt.Errorf("find game day: none running under %s (start one with chaoslab gameday ID)", out))
	}
	return newest, nil
}

func processAlive(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return pid > 0 && err == nil
}

// gamedayAt is the game day a command reaches: the dashboard URL given
// (with its token, as the run printed it), else the newest one running
// under out on this machine (with the facilitator's token).
func gamedayAt(out, dashboard string) (addr, token string, err error) {
	if dashboard == "" {
		gi, err := liveGameday(out)
		return gi.Addr, gi.Token, err
	}
	u, err := url.Parse(dashboard)
	if err != nil || u.Host == "" || u.Query().Get("token") == "" {
		return "", "", errInput(fmt.Errorf("--url %q: want the dashboard's URL as the run printed it, http://HOST:PORT/?token=...", dashboard))
	}
	return u.Host, u.Query().Get("token"), nil
}

// reach is how a command finds the running game day: by the URL a
// colleague was given (with its token; --cert trusts the run's
// certificate when it serves TLS), else the newest under --out here.
type reach struct{ out, url, cert string }

func (r *reach) flags(cmd *cobra.Command, role string) {
	cmd.Flags().StringVar(&r.out, "out", "out/runs", "the game day's --out")
	cmd.Flags().StringVar(&r.url, "url", "", "the dashboard's URL with "+role+" token, as the run printed it (default: the newest game day under --out on this machine)")
	cmd.Flags().StringVar(&r.cert, "cert", "", "the run's certificate (dashboard-cert.pem in its folder) when the dashboard serves TLS")
}

// client trusts the run's certificate when given.
func (r *reach) client() (*http.Client, error) {
	if r.cert == "" {
		return http.DefaultClient, nil
	}
	b, err := os.ReadFile(r.cert)
	pool := x509.NewCertPool()
	if err != nil || !pool.AppendCertsFromPEM(b) {
		return nil, errInput(fmt.Errorf("--cert %s: want the run's certificate (PEM): %v", r.cert, err))
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}, nil
}

// post sends one request to the running game day.
func (r *reach) post(cmd *cobra.Command, path string, body any) error {
	addr, token, err := gamedayAt(r.out, r.url)
	if err != nil {
		return err
	}
	cl, err := r.client()
	if err != nil {
		return err
	}
	scheme := "http://"
	if strings.HasPrefix(r.url, "https://") {
		scheme = "https://"
	}
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(cmd.Context(), http.MethodPost, scheme+addr+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("X-Chaoslab-Token", token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := cl.Do(req)
	if err != nil {
		return fmt.Errorf("reach game day: %w", err)
	}
	defer resp.Body.Close()
	var msg bytes.Buffer
	_, _ = msg.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return errInput(fmt.Errorf("game day refused: %s", strings.TrimSpace(msg.String())))
	}
	fmt.Fprint(cmd.OutOrStdout(), msg.String())
	return nil
}

func gamedayActCmd() *cobra.Command {
	var r reach
	var author string
	var params map[string]string
	cmd := &cobra.Command{
		Use:   "act FAULT TARGET DURATION",
		Short: "Take an operator action on the running game day (any registered fault)",
		Example: `  chaoslab gameday act kill-restart leader 3s          # force a leader election
  chaoslab gameday act kill-restart clients:50% 60s    # stop half the clients for a minute
  chaoslab gameday act remove-capacity fleet 10s       # IL-0384: take the added servers out
  chaoslab gameday act switch-strategy clients 5s --param strategy=paced --param window=8
  chaoslab gameday act raise-init-limit observers 60s --param ticks=30
  chaoslab gameday act pause leader 10s --url 'http://127.0.0.1:8077/?token=...'   # an operator's URL`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := actRequest(args, author, params)
			if _, err := q.Action(); err != nil {
				return errInput(err)
			}
			return r.post(cmd, "/act", q)
		},
	}
	r.flags(cmd, "an operator's or the facilitator's")
	cmd.Flags().StringVar(&author, "author", os.Getenv("USER"), "who acts (on the report's timeline)")
	cmd.Flags().StringToStringVar(&params, "param", nil, "a fault parameter, KEY=VALUE")
	return cmd
}

// actRequest is the action the command line asks for; a parameter's
// value is read as a YAML scalar (8 a number, 0.1 a fraction, paced a
// word), as it would be written in a scenario.
func actRequest(args []string, author string, params map[string]string) gameday.ActRequest {
	q := gameday.ActRequest{Fault: args[0], Target: args[1], Duration: args[2], Author: author}
	if len(params) > 0 {
		q.Params = map[string]any{}
		for k, v := range params {
			var x any
			if yaml.Unmarshal([]byte(v), &x) != nil || x == nil {
				x = v
			}
			q.Params[k] = x
		}
	}
	return q
}

func gamedayControlCmd() *cobra.Command {
	var r reach
	var author string
	var seconds float64
	cmd := &cobra.Command{
		Use:       "control hold|release|next|extend|end|stop",
		Short:     "Steer the running game day's timeline (a facilitator's control; stop: the emergency stop, every fault ends and restores its target, the run ends)",
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"hold", "release", "next", "extend", "end", "stop"},
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.post(cmd, "/control", gameday.ControlRequest{Op: args[0], Seconds: seconds, Author: author})
		},
	}
	r.flags(cmd, "the facilitator's")
	cmd.Flags().StringVar(&author, "author", os.Getenv("USER"), "who steers (on the report's timeline)")
	cmd.Flags().Float64Var(&seconds, "seconds", 30, "with extend: by how much")
	return cmd
}

func gamedayNoteCmd() *cobra.Command {
	var r reach
	var author string
	cmd := &cobra.Command{
		Use:     "note TEXT",
		Short:   "Add a participant's note to the running game day's timeline (an operator's or the facilitator's)",
		Example: `  chaoslab gameday note "paged the database team" --author carol`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.post(cmd, "/note", gameday.NoteRequest{Text: args[0], Author: author})
		},
	}
	r.flags(cmd, "an operator's or the facilitator's")
	cmd.Flags().StringVar(&author, "author", os.Getenv("USER"), "who notes it (on the report's timeline)")
	return cmd
}
