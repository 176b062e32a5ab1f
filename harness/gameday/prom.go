package gameday

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
)

// MetricsPath is where the exposition is served, on the dashboard and on
// a run's metrics address alike.
const MetricsPath = "/metrics"

// MetricPrefix begins every metric name of the exposition.
const MetricPrefix = "chaoslab_"

// metricsHandler writes the newest sample of every series of h in
// Prometheus's text exposition format. It needs no token: it serves the
// figures alone, on loopback, never the events nor any control.
func metricsHandler(h *Hub) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		fmt.Fprint(w, Exposition(h.Latest()))
	}
}

var badName = regexp.MustCompile(`[^a-zA-Z0-9_]`)

// MetricName is the exposition's name of a series (server.connections:
// chaoslab_server_connections).
func MetricName(series string) string {
	return MetricPrefix + badName.ReplaceAllString(series, "_")
}

// Exposition formats samples in Prometheus's text format: one gauge per
// series name, labelled with its variant and source.
func Exposition(samples []Sample) string {
	slices.SortFunc(samples, func(a, b Sample) int {
		return strings.Compare(a.Name+"\x00"+a.Variant+"\x00"+a.Source, b.Name+"\x00"+b.Variant+"\x00"+b.Source)
	})
	var b strings.Builder
	last := ""
	for _, s := range samples {
		name := MetricName(s.Name)
		if name != last {
			fmt.Fprintf(&b, "# HELP %s %s (%s), the newest sample of a live chaoslab run\n# TYPE %s gauge\n", name, s.Name, unitOr(s.Unit), name)
			last = name
		}
		fmt.Fprintf(&b, "%s{variant=%q,source=%q} %g\n", name, s.Variant, s.Source, s.V)
	}
	return b.String()
}

func unitOr(u string) string {
	if u == "" {
		return "count"
	}
	return u
}

// Exporter serves a hub's exposition alone (chaoslab run --metrics-addr).
type Exporter struct {
	ln  net.Listener
	srv *http.Server
}

// ServeMetrics serves h's exposition at MetricsPath on addr (host:port;
// the host a loopback address, port 0 any free one).
func ServeMetrics(addr string, h *Hub) (*Exporter, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("read metrics address: %w", err)
	}
	ln, err := listenLoopback("metrics", host, port)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+MetricsPath, metricsHandler(h))
	e := &Exporter{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}}
	go func() { _ = e.srv.Serve(ln) }()
	return e, nil
}

// URL is where the exposition is.
func (e *Exporter) URL() string { return "http://" + e.ln.Addr().String() + MetricsPath }

// Close stops serving.
func (e *Exporter) Close(ctx context.Context) error { return e.srv.Shutdown(ctx) }

// listenLoopback listens on host:port, refusing a host that is not a
// loopback address (what names the listener in errors).
func listenLoopback(what, host, port string) (net.Listener, error) {
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("listen %s: %q is not a loopback address", what, host)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", what, err)
	}
	return ln, nil
}
