package admin

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
)

// svgNode is an element of a rendered chart, parsed back.
type svgNode struct {
	Name  string
	Attrs map[string]string
	Text  string
}

// parseChart parses a chart's HTML (well-formed XML by construction) into
// its elements, in document order; it fails the test if it is not
// well-formed.
func parseChart(t *testing.T, html string) []svgNode {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(html))
	var out []svgNode
	var open []int
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "well-formed: %s", html)
		switch tk := tok.(type) {
		case xml.StartElement:
			n := svgNode{Name: tk.Name.Local, Attrs: map[string]string{}}
			for _, a := range tk.Attr {
				n.Attrs[a.Name.Local] = a.Value
			}
			out = append(out, n)
			open = append(open, len(out)-1)
		case xml.EndElement:
			open = open[:len(open)-1]
		case xml.CharData:
			if len(open) > 0 {
				out[open[len(open)-1]].Text += string(tk)
			}
		}
	}
	return out
}

func nodes(ns []svgNode, name string) []svgNode {
	var out []svgNode
	for _, n := range ns {
		if n.Name == name {
			out = append(out, n)
		}
	}
	return out
}

// points parses a polyline's points.
func points(t *testing.T, n svgNode) [][2]float64 {
	t.Helper()
	var out [][2]float64
	for _, xy := range strings.Fields(n.Attrs["points"]) {
		x, y, ok := strings.Cut(xy, ",")
		require.True(t, ok, xy)
		fx, err := strconv.ParseFloat(x, 64)
		require.NoError(t, err)
		fy, err := strconv.ParseFloat(y, 64)
		require.NoError(t, err)
		out = append(out, [2]float64{fx, fy})
	}
	return out
}

var chartT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// evenPoints returns n samples of length every from start, valued f(i).
func evenPoints(start time.Time, every time.Duration, n int, f func(int) float64) []chartPoint {
	ps := make([]chartPoint, n)
	for i := range ps {
		ps[i] = chartPoint{At: start.Add(time.Duration(i) * every), Length: every, V: f(i)}
	}
	return ps
}

func TestChartDrawsAPolylinePerSeriesWithAPointPerSample(t *testing.T) {
	c := chart{ID: "rates", Title: "Rates <per second>", From: chartT0, To: chartT0.Add(15 * time.Minute),
		Format: func(v, _ float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + "/s" },
		Series: []chartSeries{
			{Name: "enqueued", Points: evenPoints(chartT0, 10*time.Second, 90, func(i int) float64 { return float64(i % 7) })},
			{Name: "acked & <done>", Points: evenPoints(chartT0, 10*time.Second, 90, func(int) float64 { return 1 })},
		}}
	ns := parseChart(t, string(c.HTML()))

	svg := nodes(ns, "svg")
	require.Len(t, svg, 1)
	assert.Equal(t, "img", svg[0].Attrs["role"])
	assert.Equal(t, "rates-title rates-desc", svg[0].Attrs["aria-labelledby"])
	titles := nodes(ns, "title")
	require.Len(t, titles, 1, "one <title> per chart")
	assert.Equal(t, "rates-title", titles[0].Attrs["id"])
	assert.Equal(t, "Rates <per second>", titles[0].Text, "escaped in, read back as text")
	desc := nodes(ns, "desc")
	require.Len(t, desc, 1)
	assert.Contains(t, desc[0].Text, "enqueued: latest 5.0/s, peak 6.0/s")

	lines := nodes(ns, "polyline")
	require.Len(t, lines, 2, "one line per series")
	for _, l := range lines {
		ps := points(t, l)
		require.Len(t, ps, 90, "a point per sample")
		assert.Equal(t, float64(chartLeft), ps[0][0], "the first sample starts at the window's start")
		for i := 1; i < len(ps); i++ {
			assert.Greater(t, ps[i][0], ps[i-1][0], "time runs left to right")
		}
	}
	// The axis: 0, half and the top (6 rounds up to 10), and the times.
	var texts []string
	for _, n := range nodes(ns, "text") {
		texts = append(texts, n.Text)
	}
	assert.Subset(t, texts, []string{"0.0/s", "5.0/s", "10.0/s", "12:00", "12:05", "12:10", "12:15"})
	// The legend: each series with its latest value, its name escaped.
	var legend []string
	for _, n := range nodes(ns, "li") {
		legend = append(legend, n.Text)
	}
	assert.Equal(t, []string{"enqueued ", "acked & <done> "}, legend)
	assert.Equal(t, "5.0/s", nodes(ns, "b")[0].Text)
}

func TestChartPlacesMixedResolutionsByTheirStart(t *testing.T) {
	// A day's shape: 10-minute samples, then 1-minute ones, then 10-second
	// ones, as Engine.History returns them.
	var ps []chartPoint
	ps = append(ps, evenPoints(chartT0, 10*time.Minute, 6, func(int) float64 { return 1 })...)
	ps = append(ps, evenPoints(chartT0.Add(time.Hour), time.Minute, 30, func(int) float64 { return 2 })...)
	ps = append(ps, evenPoints(chartT0.Add(90*time.Minute), 10*time.Second, 90, func(int) float64 { return 3 })...)
	end := chartT0.Add(105 * time.Minute)
	c := chart{ID: "c", Title: "t", From: chartT0, To: end, Series: []chartSeries{{Name: "n", Points: ps}}}
	lines := nodes(parseChart(t, string(c.HTML())), "polyline")
	require.Len(t, lines, 1, "the resolutions join into one line")
	got := points(t, lines[0])
	require.Len(t, got, len(ps))
	for i, p := range ps {
		want := chartLeft + chartPlotW*float64(p.At.Sub(chartT0))/float64(end.Sub(chartT0))
		assert.InDelta(t, want, got[i][0], 0.06, "sample %d at its start", i)
	}
}

func TestChartBreaksTheLineAtAGapAndDotsALoneSample(t *testing.T) {
	ps := evenPoints(chartT0, 10*time.Second, 5, func(int) float64 { return 4 })
	ps = append(ps, chartPoint{At: chartT0.Add(5 * time.Minute), Length: 10 * time.Second, V: 2}) // alone after a gap
	ps = append(ps, evenPoints(chartT0.Add(10*time.Minute), 10*time.Second, 3, func(int) float64 { return 1 })...)
	ps = append(ps, chartPoint{At: chartT0.Add(-time.Hour), Length: 10 * time.Second, V: 99}) // before the window
	c := chart{ID: "c", Title: "t", From: chartT0, To: chartT0.Add(15 * time.Minute), Series: []chartSeries{{Name: "n", Points: ps}}}
	ns := parseChart(t, string(c.HTML()))
	lines := nodes(ns, "polyline")
	require.Len(t, lines, 2)
	assert.Len(t, points(t, lines[0]), 5)
	assert.Len(t, points(t, lines[1]), 3)
	assert.Len(t, nodes(ns, "circle"), 1, "the lone sample")
	for _, n := range nodes(ns, "text") {
		assert.NotEqual(t, "100", n.Text, "a sample outside the window does not set the scale")
	}
}

func TestChartWithoutSamplesDrawsItsAxes(t *testing.T) {
	c := chart{ID: "c", Title: "empty", From: chartT0, To: chartT0.Add(time.Hour), Series: []chartSeries{{Name: "n"}}}
	ns := parseChart(t, string(c.HTML()))
	assert.Empty(t, nodes(ns, "polyline"))
	assert.Len(t, nodes(ns, "title"), 1)
	assert.Contains(t, nodes(ns, "desc")[0].Text, "n: no data")
	assert.Equal(t, "—", nodes(ns, "b")[0].Text)
}

func TestNiceCeil(t *testing.T) {
	for _, tc := range []struct{ in, want float64 }{
		{0, 1}, {-3, 1}, {0.3, 0.5}, {1, 1}, {1.01, 2}, {2.2, 2.5}, {6, 10}, {99, 100}, {120, 200}, {0.012, 0.02},
	} {
		assert.InDelta(t, tc.want, niceCeil(tc.in), tc.want*1e-9, "niceCeil(%v)", tc.in)
	}
}

func TestTimeStepKeepsTheAxisReadable(t *testing.T) {
	for _, tc := range []struct {
		span, want time.Duration
	}{
		{5 * time.Minute, time.Minute}, {15 * time.Minute, 5 * time.Minute}, {time.Hour, 10 * time.Minute},
		{6 * time.Hour, time.Hour}, {24 * time.Hour, 6 * time.Hour}, {30 * 24 * time.Hour, 24 * time.Hour},
	} {
		assert.Equal(t, tc.want, timeStep(tc.span), fmt.Sprint(tc.span))
	}
}

// BenchmarkChartDay renders a chart of a day of samples (354 of them, the
// engine's whole history) with three lines: the overview draws four such.
func BenchmarkChartDay(b *testing.B) {
	var ps []chartPoint
	ps = append(ps, evenPoints(chartT0, 10*time.Minute, 144, func(i int) float64 { return float64(i % 13) })...)
	ps = append(ps, evenPoints(chartT0.Add(24*time.Hour), time.Minute, 120, func(i int) float64 { return float64(i % 11) })...)
	ps = append(ps, evenPoints(chartT0.Add(26*time.Hour), 10*time.Second, 90, func(i int) float64 { return float64(i % 7) })...)
	c := chart{ID: "c", Title: "t", From: chartT0, To: chartT0.Add(26*time.Hour + 15*time.Minute),
		Series: []chartSeries{{Name: "a", Points: ps}, {Name: "b", Points: ps}, {Name: "c", Points: ps}}}
	b.ReportAllocs()
	var size int
	for b.Loop() {
		size = len(c.HTML())
	}
	b.ReportMetric(float64(size), "bytes/chart")
}

// BenchmarkOverviewChartsDay makes the overview's four charts from a full
// day of the engine's samples (354 of them) in the 24h window: what a
// page load pays for its history.
func BenchmarkOverviewChartsDay(b *testing.B) {
	var hs []ringwal.HistorySample
	add := func(from time.Time, every time.Duration, n int) {
		for i := range n {
			hs = append(hs, ringwal.HistorySample{Start: from.Add(time.Duration(i) * every), Length: every,
				Enqueued: uint64(50 + i%13), Acked: uint64(45 + i%11), DeadLettered: uint64(i % 3),
				DeadLetteredByCategory: map[classify.Category]uint64{classify.Permanent: uint64(i % 3)},
				Counted:                true, Pending: 100 + i%50, Held: i % 5, WaitP95: time.Duration(i%40) * time.Millisecond})
		}
	}
	add(chartT0, 10*time.Minute, 144)
	add(chartT0.Add(24*time.Hour), time.Minute, 120)
	add(chartT0.Add(26*time.Hour), 10*time.Second, 90)
	b.ReportAllocs()
	var size int
	for b.Loop() {
		v := newCharts(hs, 24*time.Hour, nil, "overview", true)
		size = 0
		for _, c := range v.Charts {
			size += len(c)
		}
	}
	b.ReportMetric(float64(size), "bytes/page")
}
