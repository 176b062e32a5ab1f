package reports

// What a simulated run adds to a report: the comparison with the numbers
// the write-up publishes, and metastability maps (outcome over a sweep of
// the trigger).

import (
	"fmt"
	"html"
	"math"
	"strings"

	"github.com/chaoslab/chaoslab/verdict"
)

// Outcome words of a Map, and their colours.
var mapColors = map[string]string{
	"recovered":        "#8fd19e",
	"recovered slowly": "#f5d76e",
	"stayed down":      "#e8737d",
}

var mapLetters = map[string]string{"recovered": "R", "recovered slowly": "s", "stayed down": "D"}

type incidentView struct {
	Against, Incident, Published, Metric, Variant, Simulated, Band, Result, Class, Note string
}

type mapView struct {
	Title, Variant, Note, Caption string
	SVG                           string
	Text                          string // the grid in letters, for report.md
}

func newIncidentView(r IncidentRow) incidentView {
	iv := incidentView{
		Against: r.Against, Incident: r.Incident, Published: r.Published, Metric: r.Metric, Variant: r.Variant, Note: r.Note,
		Simulated: strings.TrimSpace(verdict.FormatValue(float64(r.Simulated)) + " " + r.Unit),
		Band:      fmt.Sprintf("%s – %s", bound(float64(r.Low)), bound(float64(r.High))),
	}
	if r.Matches {
		iv.Result, iv.Class = "matches", "good"
	} else {
		iv.Result, iv.Class = "does not match", "bad"
	}
	return iv
}

func newMapView(m Map) mapView {
	mv := mapView{Title: m.Title, Variant: m.Variant, Note: m.Note,
		Caption: fmt.Sprintf("%d runs in %.1f s. Across: %s. Up: %s. The ring marks the incident's point.", m.Runs, m.Seconds, m.XName, m.YName)}
	mv.SVG = mapSVG(m)
	var b strings.Builder
	fmt.Fprintf(&b, "%s ↑ / %s →\n", m.YName, m.XName)
	for j := len(m.Y) - 1; j >= 0; j-- {
		fmt.Fprintf(&b, "%10s |", verdict.FormatValue(m.Y[j]))
		for i := range m.X {
			o := ""
			if j < len(m.Outcomes) && i < len(m.Outcomes[j]) {
				o = m.Outcomes[j][i]
			}
			l := mapLetters[o]
			if l == "" {
				l = "?"
			}
			fmt.Fprintf(&b, " %s", l)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%10s  ", "")
	for _, x := range m.X {
		fmt.Fprintf(&b, " %s", verdict.FormatValue(x))
	}
	b.WriteString("\n(R recovered by itself, s recovered slowly, D stayed down)\n")
	mv.Text = b.String()
	return mv
}

// mapSVG draws the grid as coloured cells with axis labels and a ring at
// the incident's point (placed by interpolation between grid values).
func mapSVG(m Map) string {
	const cw, ch, left, top, bottom, right = 46, 26, 70, 10, 46, 150
	nx, ny := len(m.X), len(m.Y)
	if nx == 0 || ny == 0 {
		return ""
	}
	w, h := left+nx*cw+right, top+ny*ch+bottom
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s" font-family="Liberation Sans, Arial, sans-serif" font-size="11">`,
		w, h, w, h, html.EscapeString(m.Title))
	for j := 0; j < ny; j++ {
		y := top + (ny-1-j)*ch
		for i := 0; i < nx; i++ {
			o := ""
			if j < len(m.Outcomes) && i < len(m.Outcomes[j]) {
				o = m.Outcomes[j][i]
			}
			c := mapColors[o]
			if c == "" {
				c = "#dddddd"
			}
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#ffffff"><title>%s=%s, %s=%s: %s</title></rect>`,
				left+i*cw, y, cw, ch, c, html.EscapeString(m.XName), verdict.FormatValue(m.X[i]), html.EscapeString(m.YName), verdict.FormatValue(m.Y[j]), html.EscapeString(o))
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" dominant-baseline="middle">%s</text>`, left-6, y+ch/2, verdict.FormatValue(m.Y[j]))
	}
	for i := 0; i < nx; i++ {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`, left+i*cw+cw/2, top+ny*ch+14, verdict.FormatValue(m.X[i]))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`, left+nx*cw/2, top+ny*ch+34, html.EscapeString(m.XName))
	fmt.Fprintf(&b, `<text x="12" y="%d" text-anchor="middle" transform="rotate(-90 12 %d)">%s</text>`, top+ny*ch/2, top+ny*ch/2, html.EscapeString(m.YName))
	px := left + int(gridPos(m.X, m.IncidentX)*cw) + cw/2
	py := top + (ny-1)*ch - int(gridPos(m.Y, m.IncidentY)*ch) + ch/2
	fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="9" fill="none" stroke="#1f2933" stroke-width="2.5"><title>the incident</title></circle>`, px, py)
	lx := left + nx*cw + 14
	for k, o := range []string{"recovered", "recovered slowly", "stayed down"} {
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="14" fill="%s"/><text x="%d" y="%d">%s</text>`, lx, top+k*20, mapColors[o], lx+20, top+k*20+11, o)
	}
	fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="6" fill="none" stroke="#1f2933" stroke-width="2"/><text x="%d" y="%d">the incident</text>`, lx+7, top+3*20+7, lx+20, top+3*20+11)
	b.WriteString(`</svg>`)
	return b.String()
}

// gridPos is v's position on the grid's index scale (0 = first value),
// interpolated between neighbours and clamped to the grid.
func gridPos(g []float64, v float64) float64 {
	if len(g) == 0 || v <= g[0] {
		return 0
	}
	for i := 1; i < len(g); i++ {
		if v <= g[i] {
			if g[i] == g[i-1] {
				return float64(i)
			}
			return float64(i-1) + (v-g[i-1])/(g[i]-g[i-1])
		}
	}
	return float64(len(g) - 1)
}

// bound prints a band's end: ∞ rather than "never" for an open band.
func bound(x float64) string {
	if math.IsInf(x, 1) {
		return "∞"
	}
	return verdict.FormatValue(x)
}
