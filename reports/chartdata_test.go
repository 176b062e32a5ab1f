package reports

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/lab"
)

func pts(ts []float64, v float64) []Point {
	out := make([]Point, len(ts))
	for i, t := range ts {
		out[i] = lab.Pt(t, v)
	}
	return out
}

func seq(from, to, step float64) []float64 {
	var out []float64
	for t := from; t <= to+1e-9; t += step {
		out = append(out, t)
	}
	return out
}

// A paused server answers no sample: its line breaks there rather than
// ramping across the pause.
func TestSegmentsBreakAtSilence(t *testing.T) {
	p := append(pts(seq(0, 10, 1), 5), pts(seq(26, 30, 1), 9)...)
	segs := segments(p, 0, 100)
	require.Len(t, segs, 2)
	require.Equal(t, 10.0, segs[0][len(segs[0])-1].X)
	require.Equal(t, 26.0, segs[1][0].X)
	// A lone sample after a silence is a dot.
	p = append(pts(seq(0, 10, 1), 5), lab.Pt(20, 7))
	require.Len(t, segments(p, 0, 100), 1)
	require.Len(t, singles(p, 0, 100), 1)
}

// Twelve 0/1 lines are drawn as one count.
func TestStateCount(t *testing.T) {
	var ss []*Series
	for i := range 12 {
		s := &Series{Name: "client.connected", Source: "client-" + string(rune('a'+i)), Unit: "0/1"}
		for _, tt := range seq(0, 20, 1) {
			v := 1.0
			if i < 4 && tt >= 10 && tt < 15 { // four lose their session for 5 s
				v = 0
			}
			s.Points = append(s.Points, lab.Pt(tt, v))
		}
		ss = append(ss, s)
	}
	out := stateCount(ss, "client.connected")
	require.Len(t, out, 1)
	at := func(x float64) float64 {
		for _, p := range out[0].Points {
			if math.Abs(p.T-x) < 1e-9 {
				return float64(p.V)
			}
		}
		return math.NaN()
	}
	require.Equal(t, 12.0, at(5))
	require.Equal(t, 8.0, at(12))
	require.Equal(t, 12.0, at(18))
}

// Many OOM kills at one moment are one mark with their number.
func TestCrossesClusters(t *testing.T) {
	m := &crosses{width: 2}
	for i := range 13 {
		m.xs = append(m.xs, 60+float64(i)*0.05)
		m.ys = append(m.ys, 70)
	}
	m.xs, m.ys = append(m.xs, 90), append(m.ys, 71)
	xs, _, ns := m.clusters()
	require.Equal(t, []int{13, 1}, ns)
	require.InDelta(t, 60.3, xs[0], 1e-9)
}

// The variants' charts line up on their first fault, and say so.
func TestChartsAlignOnFirstFault(t *testing.T) {
	r := testReport(t)
	r.Variants[0].Faults[0].Start, r.Variants[0].Faults[0].End = 43.4, 58.4
	r.Variants[1].Faults[0].Start, r.Variants[1].Faults[0].End = 41.8, 56.8
	al := alignOnFirstFault(r)
	require.True(t, al.onFault)
	require.Equal(t, 43.4, al.offset["vulnerable"])
	require.Equal(t, 41.8, al.offset["mitigated"])
	require.Contains(t, al.note(), "vulnerable pause zk2 at 43.4 s")
	rows, err := buildCharts(r)
	require.NoError(t, err)
	require.NotEmpty(t, rows)
	require.Contains(t, rows[0].Cells[0].SVG, "seconds from the first fault")
	v := shifted(r.Variants[1], seriesSpec{Name: rows[0].Name}, al.offset["mitigated"])
	require.InDelta(t, 0, v.Faults[0].Start, 1e-9)
	require.False(t, strings.Contains(rows[0].Cells[0].SVG, "seconds from variant start"))
}
