package gameday

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
)

// metrics writes the newest sample of every series in Prometheus's text
// exposition format: one gauge per series name (chaoslab_ and the name,
// dots as underscores), labelled with its variant and source.
func (s *Server) metrics(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	fmt.Fprint(w, Exposition(s.Hub.Latest()))
}

var badName = regexp.MustCompile(`[^a-zA-Z0-9_]`)

// Exposition formats samples in Prometheus's text format.
func Exposition(samples []Sample) string {
	slices.SortFunc(samples, func(a, b Sample) int {
		return strings.Compare(a.Name+"\x00"+a.Variant+"\x00"+a.Source, b.Name+"\x00"+b.Variant+"\x00"+b.Source)
	})
	var b strings.Builder
	last := ""
	for _, s := range samples {
		name := "chaoslab_" + badName.ReplaceAllString(s.Name, "_")
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
