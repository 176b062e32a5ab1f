// Package lineproto is the line protocol a client program may use to say
// more than the harness measures from the outside. It is one JSON object
// per line on standard output:
//
//		{"t": 1547802540123, "id": "client-01", "pending": 12, "max_seq": 4210, "state": "has-session"}
//
//	  - "t" is the sample's time in Unix milliseconds (absent: the time the
//	    line was read);
//	  - "id" names the client (optional: the harness knows which instance
//	    printed the line);
//	  - every other number is a figure: the exec kind records each per
//	    instance as the series client.<name>, which hypotheses can reduce
//	    (max(client.pending)); a kind with a client of its own reads the
//	    figures it documents (zk-tree-mirror: pending, nodes, max_seq...);
//	  - every string is a label (a state), kept for the workload that knows it;
//	  - {"prometheus": "http://127.0.0.1:9464/metrics"} asks the exec kind to
//	    scrape that endpoint (loopback only) every second: each unlabelled
//	    gauge or counter becomes a figure.
//
// Lines that are not JSON objects are passed over: a program may print
// anything else. chaoslab's own agents print their samples this way, and
// the harness reads every program's lines with Parse.
package lineproto

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Line is one parsed line.
type Line struct {
	// UnixMS is the sample's time (0: not given).
	UnixMS int64
	ID     string
	// Figures are the numbers, by name; Labels the strings.
	Figures map[string]float64
	Labels  map[string]string
	// Prometheus is an endpoint to scrape, when the line names one.
	Prometheus string
}

// Time is the sample's time, or at when the line gave none.
func (l Line) Time(at time.Time) time.Time {
	if l.UnixMS <= 0 {
		return at
	}
	return time.UnixMilli(l.UnixMS)
}

// Parse reads one line; ok is false when it is not a JSON object.
func Parse(b []byte) (Line, bool) {
	var raw map[string]any
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &raw) != nil {
		return Line{}, false
	}
	l := Line{Figures: map[string]float64{}, Labels: map[string]string{}}
	for k, v := range raw {
		switch x := v.(type) {
		case float64:
			if k == "t" {
				l.UnixMS = int64(x)
				continue
			}
			l.Figures[k] = x
		case bool:
			if x {
				l.Figures[k] = 1
			} else {
				l.Figures[k] = 0
			}
		case string:
			switch k {
			case "id":
				l.ID = x
			case "prometheus":
				l.Prometheus = x
			default:
				l.Labels[k] = x
			}
		}
	}
	return l, true
}

// Scrape reads a Prometheus text endpoint's unlabelled samples as
// figures (a metric with labels is passed over: there is no one figure).
func Scrape(ctx context.Context, c *http.Client, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return parseText(resp.Body), nil
}

func parseText(r io.Reader) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || strings.ContainsRune(line, '{') {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		if x, err := strconv.ParseFloat(f[1], 64); err == nil {
			out[f[0]] = x
		}
	}
	return out
}
