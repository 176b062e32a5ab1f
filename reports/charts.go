package reports

import (
	"bytes"
	"fmt"
	"html"
	"image/color"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/chaoslab/chaoslab/record"
)

// seriesSpec names a series and how its charts are titled: the plug-ins
// declare them (Report.Charts).
type seriesSpec = record.SeriesDef

const (
	// maxLegendLines: above this many lines a chart gets no legend but a
	// note ("one line per client").
	maxLegendLines = 8
	// maxPlotPoints per line segment; longer segments are thinned to the
	// minimum and maximum of each bucket so that peaks survive.
	maxPlotPoints = 600

	// Chart size in points; the page scales the SVG to its column.
	chartWidth  = vg.Length(460)
	chartHeight = vg.Length(240)
)

// palette gives each source (server or client) one colour, the same in every
// variant's chart.
var palette = []color.NRGBA{
	{0x1f, 0x77, 0xb4, 0xff}, // blue
	{0xff, 0x7f, 0x0e, 0xff}, // orange
	{0x2c, 0xa0, 0x2c, 0xff}, // green
	{0x94, 0x67, 0xbd, 0xff}, // purple
	{0x8c, 0x56, 0x4b, 0xff}, // brown
	{0xe3, 0x77, 0xc2, 0xff}, // pink
	{0x17, 0xbe, 0xcf, 0xff}, // cyan
	{0xbc, 0xbd, 0x22, 0xff}, // olive
	{0x7f, 0x7f, 0x7f, 0xff}, // grey
	{0x39, 0x3b, 0x79, 0xff}, // navy
	{0xd6, 0x27, 0x28, 0xff}, // red
	{0x63, 0x79, 0x39, 0xff}, // moss
	{0x84, 0x3c, 0x39, 0xff}, // maroon
	{0x6b, 0x6e, 0xcf, 0xff}, // periwinkle
	{0xe7, 0xba, 0x52, 0xff}, // sand
	{0x52, 0x54, 0x54, 0xff}, // charcoal
}

var (
	inkColor   = color.NRGBA{0x33, 0x3a, 0x44, 0xff}
	gridColor  = color.NRGBA{0xe3, 0xe6, 0xea, 0xff}
	faultFill  = color.NRGBA{0xd9, 0x5f, 0x0e, 0x26}
	faultInk   = color.NRGBA{0xa6, 0x3f, 0x00, 0xff}
	limitColor = color.NRGBA{0xc0, 0x1c, 0x28, 0xff}
	boundColor = color.NRGBA{0x6a, 0x3d, 0x9a, 0xff} // a hypothesis's threshold
	oomColor   = color.NRGBA{0xc0, 0x1c, 0x28, 0xff}
)

// chartRow is one series name: a chart per variant, side by side, sharing
// the y range.
type chartRow struct {
	Name       string
	Title      string
	Unit       string
	Cells      []chartCell
	Legend     []legendItem // empty when there are too many lines
	LegendNote string       // "one line per client (16 clients)"
	Marks      []string     // what else is drawn: "fault" windows, a "limit", "oom" kills (or other crossed events)
	LimitLabel string       // what the limit line is, for the legend
	// Deciding names the hypothesis whose series this row is (the first
	// row), and BoundLabel its threshold line.
	Deciding, BoundLabel string
	MarkLabel            string // what a cross is, for the legend
}

type chartCell struct {
	Variant string
	Verdict string
	Class   string
	SVG     string // inline <svg> markup; empty when the variant has no such series
}

type legendItem struct {
	Source string
	Color  string // #rrggbb
}

// buildCharts renders every chart of the report.
func buildCharts(r *Report) ([]chartRow, error) {
	var rows []chartRow
	al := alignOnFirstFault(r)
	specs := chartSpecs(r)
	d, ok := decidingFigure(r)
	if ok {
		specs = firstDeciding(specs, d)
	}
	for i, spec := range specs {
		var bound *decider
		if ok && i == 0 && spec.Name == d.series {
			bound = &d
		}
		row, err := buildChartRow(r, spec, al, bound)
		if err != nil {
			return nil, fmt.Errorf("chart %s: %w", spec.Name, err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// chartSpecs lists the series names to chart: the key ones present in some
// variant, in their order, then the others in order of first appearance.
func chartSpecs(r *Report) []seriesSpec {
	present := map[string]bool{}
	var order []string
	for _, v := range r.Variants {
		if v == nil {
			continue
		}
		for _, s := range v.Series {
			if s == nil || s.Name == "" {
				continue
			}
			if !present[s.Name] {
				present[s.Name] = true
				order = append(order, s.Name)
			}
		}
	}
	var specs []seriesSpec
	known := map[string]bool{}
	for _, k := range r.Charts {
		if present[k.Name] && !known[k.Name] {
			specs = append(specs, k)
		}
		known[k.Name] = true
	}
	for _, name := range order {
		if !known[name] {
			specs = append(specs, seriesSpec{Name: name, Title: genericTitle(name)})
		}
	}
	return specs
}

// genericTitle makes "server.znode_count" read "server znode count".
func genericTitle(name string) string {
	t := strings.NewReplacer(".", " · ", "_", " ").Replace(name)
	if t == "" {
		return name
	}
	return strings.ToUpper(t[:1]) + t[1:]
}

// buildChartRow draws one series' row; bound, when set, is the deciding
// figure whose threshold is drawn across it.
func buildChartRow(r *Report, spec seriesSpec, al alignment, bound *decider) (chartRow, error) {
	row := chartRow{Name: spec.Name, Title: spec.Title, Unit: spec.Unit}
	cv := alignVariants(r, spec, al)
	sources, colors := cv.colors(&row)
	cv.legend(&row, spec, sources, colors)
	ax, marks := cv.yAxis(spec)
	if bound != nil {
		row.Deciding = bound.check.ID
	}
	if bound != nil && bound.line {
		ax.bound, ax.boundLabel = &bound.check.Threshold, bound.label()
		ax.ymax = math.Max(ax.ymax, bound.check.Threshold*1.14)
		row.Marks, row.BoundLabel = append(row.Marks, "threshold"), bound.label()
	}
	if marks.faults {
		row.Marks = append(row.Marks, "fault")
	}
	if marks.limit {
		row.Marks = append(row.Marks, "limit")
		row.LimitLabel = limitLabel(r, spec.Name)
	}
	if marks.oom {
		row.Marks = append(row.Marks, "oom")
		row.MarkLabel = markLabel(spec)
	}
	ax.xLabel = al.xLabel(ax.xmax-ax.xmin > 1800)
	for _, v := range cv.vs {
		cell := chartCell{Variant: v.Name, Verdict: verdictWord(v.Verdict), Class: verdictClass(v.Verdict)}
		if len(v.Series) > 0 {
			svg, err := renderChart(v, spec, row.Unit, colors, len(sources), ax)
			if err != nil {
				return row, fmt.Errorf("variant %s: %w", v.Name, err)
			}
			cell.SVG = svg
		}
		row.Cells = append(row.Cells, cell)
	}
	return row, nil
}

// chartVariants are the variants as one chart draws them: aligned, each
// with only the chart's series, and how a state chart counts sources.
type chartVariants struct {
	vs           []*VariantResult
	xmin, xmax   float64
	state        bool
	stateN       int
	stateSources []string
}

func alignVariants(r *Report, spec seriesSpec, al alignment) chartVariants {
	var cv chartVariants
	for _, v := range r.Variants {
		if v == nil {
			continue
		}
		off := al.offset[v.Name]
		if isState(spec, v) {
			cv.state = true
			n := 0
			for _, s := range v.Series {
				if s != nil && s.Name == spec.Name {
					n++
					cv.stateSources = append(cv.stateSources, s.Source)
				}
			}
			cv.stateN = max(cv.stateN, n)
		}
		cv.vs = append(cv.vs, shifted(v, spec, off))
		cv.xmin, cv.xmax = math.Min(cv.xmin, -off), math.Max(cv.xmax, span(v)-off)
	}
	if cv.xmax <= cv.xmin {
		cv.xmax = cv.xmin + 1
	}
	return cv
}

// colors are the sources across variants, in natural order, one colour
// each; the row takes the series' own unit.
func (cv chartVariants) colors(row *chartRow) ([]string, map[string]color.NRGBA) {
	srcSet := map[string]bool{}
	var sources []string
	unit := ""
	for _, v := range cv.vs {
		for _, s := range v.Series {
			if unit == "" {
				unit = s.Unit
			}
			if !srcSet[s.Source] {
				srcSet[s.Source] = true
				sources = append(sources, s.Source)
			}
		}
	}
	if unit != "" {
		row.Unit = unit
	}
	sort.Slice(sources, func(i, j int) bool { return naturalLess(sources[i], sources[j]) })
	colors := map[string]color.NRGBA{}
	for i, s := range sources {
		colors[s] = palette[i%len(palette)]
	}
	return sources, colors
}

// legend is the row's legend: a line per source, or a note.
func (cv chartVariants) legend(row *chartRow, spec seriesSpec, sources []string, colors map[string]color.NRGBA) {
	switch {
	case cv.state:
		kind := sourceKind(cv.stateSources)
		row.Unit = fmt.Sprintf("%ss (of %d)", kind, cv.stateN)
		row.LegendNote = fmt.Sprintf("one line: how many of the %d %ss were in this state at each moment (%s); a break is a moment none of them reported", cv.stateN, kind, lowerFirst(spec.Title))
	case len(sources) <= maxLegendLines:
		for _, s := range sources {
			row.Legend = append(row.Legend, legendItem{Source: s, Color: hexColor(colors[s])})
		}
	default:
		row.LegendNote = fmt.Sprintf("one line per %s (%d %ss)", sourceKind(sources), len(sources), sourceKind(sources))
	}
}

// rowMarks say what the row's charts mark: fault windows, a limit, events.
type rowMarks struct{ faults, limit, oom bool }

// yAxis is the shared axes: x over every variant's span, y over every
// finite sample (and the limit, where one is drawn), with head room for
// the fault labels at the top of the plot.
func (cv chartVariants) yAxis(spec seriesSpec) (axes, rowMarks) {
	var mk rowMarks
	ymin, ymax := math.Inf(1), math.Inf(-1)
	integral := true // every sample a whole number: integer ticks
	for _, v := range cv.vs {
		for _, s := range v.Series {
			for _, p := range s.Points {
				if y := float64(p.V); finite(y) && finite(p.T) {
					ymin, ymax = math.Min(ymin, y), math.Max(ymax, y)
					integral = integral && y == math.Trunc(y)
				}
			}
		}
		if len(v.Series) == 0 {
			continue
		}
		mk.faults = mk.faults || len(v.Faults) > 0
		if lim, _, ok := chartLimit(v, spec.Name); ok {
			mk.limit = true
			ymax = math.Max(ymax, lim)
		}
		mk.oom = mk.oom || len(markEvents(v, spec)) > 0
	}
	if math.IsInf(ymin, 1) { // no finite sample at all
		ymin, ymax = 0, 1
	}
	if cv.state {
		ymax = math.Max(ymax, float64(cv.stateN))
	}
	ymin = math.Min(ymin, 0)
	if ymax <= ymin {
		ymax = ymin + 1
	}
	ymax += (ymax - ymin) * 0.14
	return axes{xmin: cv.xmin, xmax: cv.xmax, ymin: ymin, ymax: ymax, integer: integral}, mk
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

func hasSeries(v *VariantResult, name string) bool {
	for _, s := range v.Series {
		if s != nil && s.Name == name {
			return true
		}
	}
	return false
}

// chartLimit is the limit drawn across a chart, as the plug-in recorded
// it in this variant (a memory limit, a thread limit).
func chartLimit(v *VariantResult, series string) (float64, string, bool) {
	l, ok := v.Limits[series]
	return l.Value, l.Label, ok && l.Value > 0
}

// limitLabel names a row's limit line for the legend.
func limitLabel(r *Report, series string) string {
	for _, v := range r.Variants {
		if _, label, ok := chartLimit(v, series); ok {
			if i := strings.Index(label, " ("); i > 0 {
				return label[:i]
			}
			return label
		}
	}
	return "limit"
}

// markEvents are the events crossed on a chart: the kinds its series
// declares (OOM kills on the RSS chart, thread-limit aborts on threads).
func markEvents(v *VariantResult, spec seriesSpec) []Event {
	var out []Event
	for _, e := range v.Events {
		if slices.Contains(spec.Marks, e.Kind) && finite(e.T) {
			out = append(out, e)
		}
	}
	return out
}

// markLabel names what a cross is, for the legend.
func markLabel(spec seriesSpec) string {
	var labels []string
	for _, k := range spec.Marks {
		if l, ok := notableKinds[k]; ok {
			labels = append(labels, l)
		} else {
			labels = append(labels, k)
		}
	}
	return strings.Join(labels, ", ")
}

// sourceKind says what the lines are: "client", "server" or "source".
func sourceKind(sources []string) string {
	kind := ""
	for _, s := range sources {
		k := "source"
		switch {
		case strings.HasPrefix(s, "client"):
			k = "client"
		case strings.HasPrefix(s, "zk"), strings.HasPrefix(s, "server"), strings.HasPrefix(s, "etcd"), strings.HasPrefix(s, "consul"):
			k = "server"
		}
		if kind != "" && kind != k {
			return "source"
		}
		kind = k
	}
	if kind == "" {
		return "source"
	}
	return kind
}

// renderChart draws one variant's chart of one series name as inline SVG.
// axes are the ranges a row of charts shares.
type axes struct {
	xmin, xmax, ymin, ymax float64
	integer                bool   // y ticks on whole numbers only
	xLabel                 string // what the time axis counts from
	// bound is the deciding hypothesis's threshold, drawn across.
	bound      *float64
	boundLabel string
}

func renderChart(v *VariantResult, spec seriesSpec, unit string, colors map[string]color.NRGBA, nLines int,
	ax axes) (svg string, err error) {
	ymin, ymax := ax.ymin, ax.ymax
	defer func() {
		if p := recover(); p != nil { // gonum/plot panics on impossible geometry
			err = fmt.Errorf("plot: %v", p)
		}
	}()

	p := newPlot(ax, unit)
	grid := plotter.NewGrid()
	grid.Vertical.Color, grid.Horizontal.Color = gridColor, gridColor
	grid.Vertical.Width, grid.Horizontal.Width = vg.Points(0.5), vg.Points(0.5)
	p.Add(grid)

	if len(v.Faults) > 0 {
		p.Add(&faultShading{faults: v.Faults, label: p.X.Tick.Label})
	}

	if err := addLines(p, v, spec, colors, nLines, ymin, ymax); err != nil {
		return "", err
	}

	lim, limLabel, hasLimit := chartLimit(v, spec.Name)
	if hasLimit {
		p.Add(&hLine{y: lim, label: limLabel, style: p.X.Tick.Label, color: limitColor})
	}
	if ax.bound != nil {
		p.Add(&hLine{y: *ax.bound, label: ax.boundLabel, style: p.X.Tick.Label, color: boundColor})
	}
	if marks := markEvents(v, spec); len(marks) > 0 {
		var xs, ys []float64
		for _, e := range marks {
			y, ok := valueAt(v, spec.Name, e.Source, e.T)
			if !ok {
				if hasLimit {
					y = lim
				} else {
					y = ymin + (ymax-ymin)*0.8
				}
			}
			xs, ys = append(xs, e.T), append(ys, clamp(y, ymin, ymax))
		}
		if len(xs) > 0 {
			p.Add(&crosses{xs: xs, ys: ys, width: (ax.xmax - ax.xmin) / 30, label: p.X.Tick.Label})
		}
	}

	p.X.Min, p.X.Max = ax.xmin, ax.xmax
	p.Y.Min, p.Y.Max = ymin, ymax

	c := vgsvg.New(chartWidth, chartHeight)
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", err
	}
	return inlineSVG(buf.String(), fmt.Sprintf("%s, variant %s", spec.Title, v.Name)), nil
}

var svgSize = regexp.MustCompile(`\s(width|height)="[0-9.]+pt"`)

// inlineSVG turns a standalone SVG document into markup to embed in HTML:
// no XML prelude, no namespace URLs (HTML does not need them), scalable.
func inlineSVG(doc, label string) string {
	if i := strings.Index(doc, "<svg"); i >= 0 {
		doc = doc[i:]
	}
	end := strings.Index(doc, ">")
	if end < 0 {
		return doc
	}
	head, rest := doc[:end], doc[end:]
	head = svgSize.ReplaceAllString(head, "")
	head = strings.Replace(head, `xmlns="http://www.w3.org/2000/svg"`, "", 1)
	head = strings.Replace(head, `xmlns:xlink="http://www.w3.org/1999/xlink"`, "", 1)
	head = strings.Join(strings.Fields(head), " ")
	head += ` class="chart" role="img" aria-label="` + html.EscapeString(label) + `"`
	// Liberation Sans shares its metrics with Arial and Helvetica, so the
	// labels keep the width the plot measured when the font is absent.
	rest = strings.ReplaceAll(rest, "font-family:Liberation Sans;", "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;")
	return head + rest
}

// segments splits a series into drawable lines: NaN samples and silences
// (no sample for longer than gapAfter) break the line, infinities are
// clamped to the axis, long lines are thinned.
func segments(pts []Point, ymin, ymax float64) []plotter.XYs {
	gap := gapAfter(pts)
	var out []plotter.XYs
	var cur plotter.XYs
	flush := func() {
		if len(cur) >= 2 {
			out = append(out, thin(cur))
		}
		cur = nil
	}
	for _, p := range pts {
		y := float64(p.V)
		if math.IsNaN(y) || !finite(p.T) {
			flush()
			continue
		}
		if n := len(cur); n > 0 && p.T-cur[n-1].X > gap {
			flush()
		}
		cur = append(cur, plotter.XY{X: p.T, Y: clamp(y, ymin, ymax)})
	}
	flush()
	return out
}

// singles returns the samples that stand alone between gaps.
func singles(pts []Point, ymin, ymax float64) []plotter.XYs {
	gap := gapAfter(pts)
	drawn := func(i int) bool { return !math.IsNaN(float64(pts[i].V)) && finite(pts[i].T) }
	var out plotter.XYs
	for i, p := range pts {
		if !drawn(i) {
			continue
		}
		prevOK := i > 0 && drawn(i-1) && p.T-pts[i-1].T <= gap
		nextOK := i+1 < len(pts) && drawn(i+1) && pts[i+1].T-p.T <= gap
		if !prevOK && !nextOK {
			out = append(out, plotter.XY{X: p.T, Y: clamp(float64(p.V), ymin, ymax)})
		}
	}
	if len(out) == 0 {
		return nil
	}
	return []plotter.XYs{out}
}

// thin keeps the first, the minimum, the maximum and the last sample of each
// bucket so that a long line keeps its shape and its peaks.
func thin(xy plotter.XYs) plotter.XYs {
	if len(xy) <= maxPlotPoints {
		return xy
	}
	buckets := maxPlotPoints / 4
	size := float64(len(xy)) / float64(buckets)
	out := make(plotter.XYs, 0, maxPlotPoints)
	for b := 0; b < buckets; b++ {
		lo, hi := int(float64(b)*size), int(float64(b+1)*size)
		if hi > len(xy) {
			hi = len(xy)
		}
		if lo >= hi {
			continue
		}
		iMin, iMax := lo, lo
		for i := lo; i < hi; i++ {
			if xy[i].Y < xy[iMin].Y {
				iMin = i
			}
			if xy[i].Y > xy[iMax].Y {
				iMax = i
			}
		}
		idx := []int{lo, iMin, iMax, hi - 1}
		sort.Ints(idx)
		last := -1
		for _, i := range idx {
			if i != last {
				out = append(out, xy[i])
				last = i
			}
		}
	}
	return out
}

// valueAt is the last finite sample of a source at or before t.
func valueAt(v *VariantResult, name, source string, t float64) (float64, bool) {
	for _, s := range v.Series {
		if s == nil || s.Name != name || s.Source != source {
			continue
		}
		y, ok := 0.0, false
		for _, p := range s.Points {
			if p.T > t+1e-9 {
				break
			}
			if fv := float64(p.V); !math.IsNaN(fv) {
				y, ok = fv, true
			}
		}
		return y, ok
	}
	return 0, false
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func clamp(y, lo, hi float64) float64 {
	switch {
	case y < lo:
		return lo
	case y > hi:
		return hi
	}
	return y
}

func hexColor(c color.NRGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

// faultShading draws each fault window as a translucent band over the whole
// y range, labelled with the fault and the member it hit.
type faultShading struct {
	faults []FaultWindow
	label  text.Style
}

func (f *faultShading) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, _ := plt.Transforms(&c)
	sty := f.label
	sty.Font.Size = 7.5
	sty.Color = faultInk
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YTop
	lineH := vg.Points(9)
	row := 0
	for i, w := range f.faults {
		if !finite(w.Start) {
			continue
		}
		end := w.End
		if !finite(end) || end < w.Start {
			end = plt.X.Max
		}
		x0 := clampLen(trX(w.Start), c.Min.X, c.Max.X)
		x1 := clampLen(trX(end), c.Min.X, c.Max.X)
		if x1-x0 < vg.Points(1.5) { // keep an instant fault visible
			x1 = x0 + vg.Points(1.5)
		}
		c.FillPolygon(faultFill, []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
		label := faultLabel(w)
		if i > 0 && faultLabel(f.faults[i-1]) == label {
			continue // a repeat of the fault before: labelled once, with its count
		}
		if n := repeats(f.faults[i:], label); n > 1 {
			label += fmt.Sprintf(" ×%d", n)
		}
		y := c.Max.Y - vg.Points(2) - lineH*vg.Length(row%3)
		row++
		c.FillText(sty, vg.Point{X: x0 + vg.Points(2), Y: y}, label)
	}
}

// faultLabel names a fault window on a chart.
func faultLabel(w FaultWindow) string {
	switch {
	case w.Member != "":
		return w.Fault + " " + w.Member
	case w.Target != "":
		return w.Fault + " " + w.Target
	}
	return w.Fault
}

// repeats counts the windows at the head of ws labelled label.
func repeats(ws []FaultWindow, label string) int {
	n := 0
	for n < len(ws) && faultLabel(ws[n]) == label {
		n++
	}
	return n
}

func clampLen(x, lo, hi vg.Length) vg.Length {
	if x < lo {
		return lo
	}
	if x > hi {
		return hi
	}
	return x
}

// hLine is a dashed horizontal line with a label at its left end (events
// are marked late in a run, the warm-up is at the left).
type hLine struct {
	y     float64
	label string
	style text.Style
	color color.NRGBA
}

func (h *hLine) Plot(c draw.Canvas, plt *plot.Plot) {
	_, trY := plt.Transforms(&c)
	y := trY(h.y)
	if y < c.Min.Y || y > c.Max.Y {
		return
	}
	c.StrokeLine2(draw.LineStyle{Color: h.color, Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(5), vg.Points(3)}}, c.Min.X, y, c.Max.X, y)
	sty := h.style
	sty.Font.Size = 7.5
	sty.Color = h.color
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YBottom
	c.FillText(sty, vg.Point{X: c.Min.X + vg.Points(3), Y: y + vg.Points(2)}, h.label)
}

// crosses marks events (OOM kills) readably however many there are: a
// short tick on the time axis for each (a rug), and over the lines one bold
// × per cluster of events less than width apart, with their number beside
// it when there is more than one.
type crosses struct {
	xs, ys []float64
	width  float64 // in x units
	label  text.Style
}

// clusters groups the marks by time: each cluster's mean time, its
// highest value and its size.
func (m *crosses) clusters() (xs, ys []float64, ns []int) {
	idx := make([]int, len(m.xs))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return m.xs[idx[a]] < m.xs[idx[b]] })
	for k := 0; k < len(idx); {
		j, sum, top := k, 0.0, math.Inf(-1)
		for j < len(idx) && m.xs[idx[j]]-m.xs[idx[k]] <= m.width {
			sum += m.xs[idx[j]]
			top = math.Max(top, m.ys[idx[j]])
			j++
		}
		xs, ys, ns = append(xs, sum/float64(j-k)), append(ys, top), append(ns, j-k)
		k = j
	}
	return xs, ys, ns
}

func (m *crosses) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	sty := draw.LineStyle{Color: oomColor, Width: vg.Points(2)}
	rug := draw.LineStyle{Color: oomColor, Width: vg.Points(1)}
	for _, x := range m.xs {
		c.StrokeLine2(rug, trX(x), c.Min.Y, trX(x), c.Min.Y+vg.Points(6))
	}
	lsty := m.label
	lsty.Font.Size = 8
	lsty.Color = oomColor
	lsty.XAlign, lsty.YAlign = draw.XLeft, draw.YCenter
	r := vg.Points(4)
	xs, ys, ns := m.clusters()
	for i := range xs {
		x, y := trX(xs[i]), trY(ys[i])
		c.StrokeLine2(sty, x-r, y-r, x+r, y+r)
		c.StrokeLine2(sty, x-r, y+r, x+r, y-r)
		if ns[i] > 1 {
			c.FillText(lsty, vg.Point{X: x + r + vg.Points(2), Y: y + r}, "×"+strconv.Itoa(ns[i]))
		}
	}
}

// niceTicks labels about n round values (1, 2, 2.5 or 5 times a power of
// ten) with unlabelled minor ticks between them; labels read 12k, 1.5M.
type niceTicks struct {
	n       int
	integer bool // no step below 1 (counts)
}

func (t niceTicks) Ticks(min, max float64) []plot.Tick {
	if !(max > min) || !finite(min) || !finite(max) {
		return plot.DefaultTicks{}.Ticks(min, max)
	}
	step := niceStep((max - min) / float64(t.n))
	if t.integer && step < 1 {
		step = 1
	}
	if t.integer && step == 2.5 {
		step = 2
	}
	minor := step / 5
	if m := step / math.Pow(10, math.Floor(math.Log10(step))); m == 2.5 || m == 2 {
		minor = step / 4
		if m == 2 {
			minor = step / 2
		}
	}
	if t.integer && minor < 1 {
		minor = step
	}
	var ticks []plot.Tick
	first := math.Ceil(min/minor-1e-9) * minor
	for i := 0; ; i++ {
		x := first + float64(i)*minor
		if x > max+minor*1e-6 || i > 1000 {
			break
		}
		label := ""
		if r := math.Abs(x/step - math.Round(x/step)); r < 1e-6 {
			label = compactNumber(x)
		}
		ticks = append(ticks, plot.Tick{Value: x, Label: label})
	}
	return ticks
}

// clockTicks labels a long time axis (seconds) in minutes or hours: 30m,
// 2h, 1d12h.
type clockTicks struct{ n int }

func (t clockTicks) Ticks(min, max float64) []plot.Tick {
	if !(max > min) || !finite(min) || !finite(max) {
		return plot.DefaultTicks{}.Ticks(min, max)
	}
	span := (max - min) / float64(t.n)
	step := 86400.0
	for _, s := range []float64{60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400} {
		if s >= span {
			step = s
			break
		}
	}
	var ticks []plot.Tick
	first := math.Ceil(min/step-1e-9) * step
	for i := 0; i < 1000; i++ {
		x := first + float64(i)*step
		if x > max+step*1e-6 {
			break
		}
		ticks = append(ticks, plot.Tick{Value: x, Label: clockLabel(x)})
	}
	return ticks
}

func clockLabel(s float64) string {
	m := int(math.Round(s / 60))
	switch {
	case m == 0:
		return "0"
	case m%1440 == 0:
		return fmt.Sprintf("%dd", m/1440)
	case m >= 1440 && m%60 == 0:
		return fmt.Sprintf("%dd%dh", m/1440, m%1440/60)
	case m%60 == 0:
		return fmt.Sprintf("%dh", m/60)
	case m > 60:
		return fmt.Sprintf("%dh%02d", m/60, m%60)
	}
	return fmt.Sprintf("%dm", m)
}

// niceStep rounds x up to 1, 2, 2.5 or 5 times a power of ten.
func niceStep(x float64) float64 {
	if x <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= x*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

func compactNumber(x float64) string {
	ax := math.Abs(x)
	switch {
	case ax >= 1e9:
		return trimFloat(x/1e9) + "G"
	case ax >= 1e6:
		return trimFloat(x/1e6) + "M"
	case ax >= 1e4:
		return trimFloat(x/1e3) + "k"
	}
	return trimFloat(x)
}

func trimFloat(x float64) string {
	s := strconv.FormatFloat(x, 'f', 2, 64)
	s = strings.TrimRight(s, "0")
	s = strings.TrimSuffix(s, ".")
	if s == "-0" {
		s = "0"
	}
	return s
}

// naturalLess orders client-2 before client-10.
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digitPrefix(a), digitPrefix(b)
		if da != "" && db != "" {
			na, _ := strconv.ParseUint(strings.TrimLeft(da, "0"), 10, 64)
			nb, _ := strconv.ParseUint(strings.TrimLeft(db, "0"), 10, 64)
			if na != nb {
				return na < nb
			}
			if len(da) != len(db) {
				return len(da) < len(db)
			}
			a, b = a[len(da):], b[len(db):]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func digitPrefix(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}

// newPlot is a styled plot with the row's axes.
func newPlot(ax axes, unit string) *plot.Plot {
	p := plot.New()
	styleText := func(s *text.Style, size vg.Length) {
		s.Font.Typeface = "Liberation"
		s.Font.Variant = "Sans"
		s.Font.Size = size
		s.Color = inkColor
	}
	styleText(&p.Title.TextStyle, 11)
	styleText(&p.X.Label.TextStyle, 9)
	styleText(&p.Y.Label.TextStyle, 9)
	styleText(&p.X.Tick.Label, 8.5)
	styleText(&p.Y.Tick.Label, 8.5)
	styleText(&p.Legend.TextStyle, 8)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.LineStyle.Color = inkColor
		a.Tick.LineStyle.Color = inkColor
		a.Tick.Length = vg.Points(4)
		a.Padding = vg.Points(2)
	}
	p.BackgroundColor = color.White
	p.X.Label.Text = ax.xLabel
	p.Y.Label.Text = unit
	p.X.Tick.Marker = niceTicks{n: 8}
	if ax.xmax-ax.xmin > 1800 { // a simulated incident's hours
		p.X.Tick.Marker = clockTicks{n: 8}
	}
	p.Y.Tick.Marker = niceTicks{n: 5, integer: ax.integer}

	return p
}

// addLines draws each source's series as lines, a lone sample as a dot.
func addLines(p *plot.Plot, v *VariantResult, spec seriesSpec, colors map[string]color.NRGBA, nLines int, ymin, ymax float64) error {
	width := vg.Points(1.3)
	if nLines > maxLegendLines {
		width = vg.Points(0.9)
	}
	for _, s := range v.Series {
		if s == nil || s.Name != spec.Name {
			continue
		}
		for _, seg := range segments(s.Points, ymin, ymax) {
			l, err := plotter.NewLine(seg)
			if err != nil {
				return err
			}
			l.LineStyle.Color = colors[s.Source]
			l.LineStyle.Width = width
			p.Add(l)
		}
		// A lone sample between gaps draws no line: show it as a dot.
		for _, seg := range singles(s.Points, ymin, ymax) {
			sc, err := plotter.NewScatter(seg)
			if err != nil {
				return err
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: colors[s.Source], Radius: vg.Points(1.5), Shape: draw.CircleGlyph{}}
			p.Add(sc)
		}
	}
	return nil
}
