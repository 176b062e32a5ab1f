package gameday

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/runner"
	"github.com/chaoslab/chaoslab/scenarios"
)

//go:embed assets
var assets embed.FS

// Server is a run's dashboard, its exposition and its controls.
type Server struct {
	Hub      *Hub
	Controls *Controls
	// Token is the facilitator's: every request that reads the run's
	// events or acts on it must bear one of Tokens (?token= or the
	// X-Chaoslab-Token header), and what it may do is its role's.
	Token  string
	Tokens Tokens
	// CertPEM is the run's certificate when the dashboard serves TLS
	// (ListenAt); nil for plain HTTP on loopback.
	CertPEM []byte
	ln      net.Listener
	// also is the address colleagues reach the dashboard at (ServeAlso),
	// "" when there is none.
	also net.Listener
	srv  *http.Server
	mux  *http.ServeMux
}

// DefaultPort is the dashboard's port unless told (chaoslab gameday and
// train --port).
const DefaultPort = 8077

// Listen opens the dashboard on 127.0.0.1:port (0: a free port). An
// address other than loopback is refused.
func Listen(host string, port int, h *Hub, c *Controls) (*Server, error) {
	ln, err := listenLoopback("dashboard", host, fmt.Sprint(port))
	if err != nil {
		return nil, err
	}
	return serve(ln, nil, h, c)
}

// ListenAt opens the dashboard on addr (host:port) for colleagues on
// other machines: over TLS with a certificate made for the run (tlsOn
// forces it on a loopback address too; elsewhere it is always on), and
// every request still needs one of the run's tokens.
func ListenAt(addr string, tlsOn bool, h *Hub, c *Controls) (*Server, error) {
	host, p, err := net.SplitHostPort(addr)
	port, perr := strconv.Atoi(p)
	if err != nil || perr != nil || port < 0 || port > 65535 {
		return nil, fmt.Errorf("listen dashboard: --listen %q: want HOST:PORT", addr)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() && !tlsOn {
		return Listen(host, port, h, c)
	}
	ln, certPEM, err := listenTLS(addr)
	if err != nil {
		return nil, err
	}
	return serve(ln, certPEM, h, c)
}

// serve starts the dashboard on ln.
func serve(ln net.Listener, certPEM []byte, h *Hub, c *Controls) (*Server, error) {
	toks, err := newTokens()
	if err != nil {
		ln.Close()
		return nil, err
	}
	s := &Server{Hub: h, Controls: c, Token: toks[Facilitator], Tokens: toks, CertPEM: certPEM, ln: ln, mux: http.NewServeMux()}
	s.routes()
	s.srv = &http.Server{Handler: s.mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// ServeAlso serves the same dashboard, with the same tokens, on addr too
// (host:port, port 0 for a free one) over TLS with a certificate made for
// the run: the facilitator keeps the loopback address Listen opened, and
// colleagues on other machines (or a test's second loopback address) come
// in at addr.
func (s *Server) ServeAlso(addr string) error {
	if s.also != nil || s.CertPEM != nil {
		return errors.New("serve dashboard: already served at a second address")
	}
	ln, certPEM, err := listenTLS(addr)
	if err != nil {
		return err
	}
	s.also, s.CertPEM = ln, certPEM
	go func() { _ = s.srv.Serve(ln) }()
	return nil
}

// URL is the dashboard's address with the facilitator's token.
func (s *Server) URL() string { return s.URLFor(Facilitator) }

// URLFor is the dashboard's address with a role's token: for the
// facilitator the first address; for the others the colleagues' address
// when ServeAlso opened one.
func (s *Server) URLFor(r Role) string {
	if s.also != nil && r != Facilitator {
		return s.URLAt(s.also.Addr().String(), true, r)
	}
	return s.URLAt(s.ln.Addr().String(), s.also == nil && s.CertPEM != nil, r)
}

// URLAt is the dashboard at addr, over TLS or not, with a role's token.
func (s *Server) URLAt(addr string, tlsOn bool, r Role) string {
	scheme := "http"
	if tlsOn {
		scheme = "https"
	}
	return fmt.Sprintf("%s://%s/?token=%s", scheme, addr, s.Tokens[r])
}

// Addr is the host:port the dashboard listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the dashboard; the listening dashboards are told the end.
func (s *Server) Close(ctx context.Context) error { return s.srv.Shutdown(ctx) }

// Mount adds a route that only requests bearing an operator's or the
// facilitator's token reach (a training session's, for one); before the
// first request.
func (s *Server) Mount(pattern string, h http.HandlerFunc) {
	s.mux.HandleFunc(pattern, s.authed(Operator, h))
}

func (s *Server) routes() {
	mux := s.mux
	static, _ := fs.Sub(assets, "assets")
	mux.Handle("GET /", http.FileServerFS(static))
	mux.HandleFunc("GET "+MetricsPath, metricsHandler(s.Hub))
	mux.HandleFunc("GET /events", s.authed(Viewer, s.events))
	mux.HandleFunc("GET /state", s.authed(Viewer, s.state))
	mux.HandleFunc("GET /whoami", s.authed(Viewer, s.whoami))
	mux.HandleFunc("GET /faults", s.authed(Viewer, func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, faults.Names()) }))
	mux.HandleFunc("POST /control", s.authed(Facilitator, s.control))
	mux.HandleFunc("POST /act", s.authed(Operator, s.act))
	mux.HandleFunc("POST /note", s.authed(Operator, s.note))
}

// NoteRequest is the body of POST /note: a participant's note for the
// run's timeline ("restarted the proxies by hand", "paging the DBA").
type NoteRequest struct {
	Text   string `json:"text"`
	Author string `json:"author,omitempty"`
}

// MaxNote is the longest note, in bytes.
const MaxNote = 2000

func (s *Server) note(w http.ResponseWriter, r *http.Request) {
	var q NoteRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<14)).Decode(&q); err != nil {
		http.Error(w, "decode note: "+err.Error(), http.StatusBadRequest)
		return
	}
	q.Text = strings.TrimSpace(q.Text)
	if q.Text == "" || len(q.Text) > MaxNote {
		http.Error(w, fmt.Sprintf("note: want 1 to %d bytes of text", MaxNote), http.StatusBadRequest)
		return
	}
	author := authorOf(r, q.Author)
	if err := s.Controls.Act(runner.Action{Author: author, Note: q.Text}); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	s.Hub.Control("", "note by "+author+": "+q.Text)
	writeJSON(w, map[string]string{"noted": q.Text})
}

// events streams the hub's messages as server-sent events.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	c, done := s.Hub.Subscribe()
	defer done()
	for {
		select {
		case <-r.Context().Done():
			return
		case b := <-c:
			if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
				return
			}
			if len(c) == 0 {
				fl.Flush()
			}
		}
	}
}

func (s *Server) state(w http.ResponseWriter, _ *http.Request) { writeJSON(w, s.Controls.State()) }

// ControlRequest is the body of POST /control.
type ControlRequest struct {
	Op      string  `json:"op"`
	Seconds float64 `json:"seconds,omitempty"`
	Author  string  `json:"author,omitempty"`
}

func (s *Server) control(w http.ResponseWriter, r *http.Request) {
	var q ControlRequest
	if err := json.NewDecoder(r.Body).Decode(&q); err != nil {
		http.Error(w, "decode control: "+err.Error(), http.StatusBadRequest)
		return
	}
	if err := s.Controls.Do(q.Op, time.Duration(q.Seconds*float64(time.Second)), authorOf(r, q.Author)); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	writeJSON(w, s.Controls.State())
}

// ActRequest is the body of POST /act: a registered fault taken now.
type ActRequest struct {
	Fault    string         `json:"fault"`
	Target   string         `json:"target"`
	Duration string         `json:"duration"`
	Params   map[string]any `json:"params,omitempty"`
	Author   string         `json:"author,omitempty"`
}

// Action builds the runner's action from the request, refusing what
// could not be injected.
func (q ActRequest) Action() (runner.Action, error) {
	d, err := time.ParseDuration(q.Duration)
	if err != nil || d < 0 || d > time.Hour {
		return runner.Action{}, fmt.Errorf("duration %q: want a duration between 0s and 1h", q.Duration)
	}
	if strings.TrimSpace(q.Target) == "" {
		return runner.Action{}, errors.New("target: required (a role, a group, member:NAME; :N or :N% picks how many)")
	}
	step := scenarios.FaultStep{Fault: q.Fault, Target: q.Target, Duration: scenarios.Duration(d)}
	if len(q.Params) > 0 {
		if err := step.Params.Encode(q.Params); err != nil {
			return runner.Action{}, fmt.Errorf("params: %w", err)
		}
	} else {
		step.Params = yaml.Node{}
	}
	f, err := step.NewFault()
	if err != nil {
		return runner.Action{}, err
	}
	if err := knownParams(f, q.Params); err != nil {
		return runner.Action{}, fmt.Errorf("fault %s: params: %w", q.Fault, err)
	}
	return runner.Action{Step: step, Author: author(q.Author)}, nil
}

// knownParams refuses a parameter the fault does not have (a typo would
// otherwise act with the default), as a scenario's loader does.
func knownParams(f any, params map[string]any) error {
	if len(params) == 0 {
		return nil
	}
	b, err := yaml.Marshal(params)
	if err != nil {
		return err
	}
	d := yaml.NewDecoder(strings.NewReader(string(b)))
	d.KnownFields(true)
	return d.Decode(f)
}

func (s *Server) act(w http.ResponseWriter, r *http.Request) {
	var q ActRequest
	if err := json.NewDecoder(r.Body).Decode(&q); err != nil {
		http.Error(w, "decode action: "+err.Error(), http.StatusBadRequest)
		return
	}
	a, err := q.Action()
	a.Author = authorOf(r, q.Author)
	if err == nil {
		err = s.Controls.Act(a)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.Hub.Control("", fmt.Sprintf("action queued: %s %s for %s, by %s", q.Fault, q.Target, q.Duration, a.Author))
	writeJSON(w, map[string]string{"queued": q.Fault + " " + q.Target})
}

func author(a string) string {
	if a = strings.TrimSpace(a); a == "" {
		return "operator"
	}
	return a
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
