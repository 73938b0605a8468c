package admin

// The console's charts: a time series from the engine's history, drawn as
// inline SVG on the server. There is no script and no build step, and a
// chart reads without JavaScript. Samples have mixed lengths: 10 s, 1 min
// and 10 min. The time axis is linear and each sample sits at its Start.
// So a coarser stretch has fewer points, not a squeezed one. A gap
// between samples breaks the line rather than bridging it; a gap is
// longer than twice the earlier sample's length. Colours are classes
// (c0, c1, ...) that console.css styles. The stroke attribute carries the
// same colour, so that the SVG stands alone.

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"
)

// The chart's geometry, in viewBox units (the SVG scales to its box).
const (
	chartW, chartH                 = 480, 140
	chartLeft, chartRight          = 52, 16
	chartTop, chartBottom          = 8, 20
	chartPlotW                     = chartW - chartLeft - chartRight
	chartPlotH                     = chartH - chartTop - chartBottom
	chartMaxXTicks, chartMaxPoints = 7, 2000
)

// chartColors are the series' colours, in order (console.css repeats them
// as .c0, .c1, ...).
var chartColors = [...]string{"#2563eb", "#16a34a", "#dc2626", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#4b5563"}

// chartPoint is one sample of a series: its interval and value.
type chartPoint struct {
	At     time.Time
	Length time.Duration
	V      float64
}

// chartSeries is one line of a chart.
type chartSeries struct {
	Name   string
	Points []chartPoint // oldest first
}

// chart is one chart: its element id, title, the window it shows, its
// lines, and how a value reads. The title's and description's ids derive
// from the element id. Format is told the axis' top, so that every label
// of a chart has one unit; a nil Format prints plain numbers.
type chart struct {
	ID, Title string
	From, To  time.Time
	Series    []chartSeries
	Format    func(v, top float64) string
}

// HTML returns the chart as a figure: a caption, the SVG (role img, with
// a <title> and a <desc> that says each line's latest value and peak),
// and a legend with the latest values.
func (c *chart) HTML() template.HTML {
	span := c.To.Sub(c.From)
	if span <= 0 {
		span = time.Second
	}
	top := 0.0
	for _, s := range c.Series {
		for _, p := range s.Points {
			if !p.At.Before(c.From) && !p.At.After(c.To) {
				top = max(top, p.V)
			}
		}
	}
	top = niceCeil(top)
	format := func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
	if c.Format != nil {
		format = func(v float64) string { return c.Format(v, top) }
	}
	x := func(t time.Time) float64 { return chartLeft + chartPlotW*float64(t.Sub(c.From))/float64(span) }
	y := func(v float64) float64 { return chartTop + chartPlotH*(1-v/top) }

	var b strings.Builder
	esc := template.HTMLEscapeString
	fmt.Fprintf(&b, `<figure class="chart" id="%s"><figcaption>%s</figcaption>`, esc(c.ID), esc(c.Title))
	fmt.Fprintf(&b, `<svg viewBox="0 0 %d %d" role="img" aria-labelledby="%s-title %s-desc" xmlns="http://www.w3.org/2000/svg">`,
		chartW, chartH, esc(c.ID), esc(c.ID))
	fmt.Fprintf(&b, `<title id="%s-title">%s</title>`, esc(c.ID), esc(c.Title))
	fmt.Fprintf(&b, `<desc id="%s-desc">%s</desc>`, esc(c.ID), esc(c.describe(format)))
	// The value axis: 0, half and the top, with grid lines.
	b.WriteString(`<g class="axis y">`)
	for _, v := range []float64{0, top / 2, top} {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%s" y2="%s" stroke="#e5e7eb"/>`, chartLeft, chartW-chartRight, coord(y(v)), coord(y(v)))
		fmt.Fprintf(&b, `<text x="%d" y="%s" text-anchor="end" font-size="10" fill="#6b7280">%s</text>`, chartLeft-4, coord(y(v)+3), esc(format(v)))
	}
	b.WriteString(`</g><g class="axis x">`)
	step := timeStep(span)
	for t := c.From.Truncate(step); !t.After(c.To); t = t.Add(step) {
		if t.Before(c.From) {
			continue
		}
		fmt.Fprintf(&b, `<line x1="%s" x2="%s" y1="%d" y2="%d" stroke="#9ca3af"/>`, coord(x(t)), coord(x(t)), chartH-chartBottom, chartH-chartBottom+3)
		fmt.Fprintf(&b, `<text x="%s" y="%d" text-anchor="middle" font-size="10" fill="#6b7280">%s</text>`, coord(x(t)), chartH-4, t.Format("15:04"))
	}
	b.WriteString(`</g>`)
	for i, s := range c.Series {
		color := chartColors[i%len(chartColors)]
		fmt.Fprintf(&b, `<g class="series c%d" data-name="%s">`, i%len(chartColors), esc(s.Name))
		for _, seg := range c.segments(s.Points) {
			if len(seg) == 1 { // a lone sample: a dot, as a line of one point shows nothing
				fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="2" fill="%s"/>`, coord(x(seg[0].At)), coord(y(seg[0].V)), color)
				continue
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="`, color)
			for j, p := range seg {
				if j > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(coord(x(p.At)))
				b.WriteByte(',')
				b.WriteString(coord(y(p.V)))
			}
			b.WriteString(`"/>`)
		}
		b.WriteString(`</g>`)
	}
	b.WriteString(`</svg><ul class="legend">`)
	for i, s := range c.Series {
		latest := "—"
		if n := len(s.Points); n > 0 {
			latest = format(s.Points[n-1].V)
		}
		fmt.Fprintf(&b, `<li><span class="swatch c%d"></span>%s <b>%s</b></li>`, i%len(chartColors), esc(s.Name), esc(latest))
	}
	b.WriteString(`</ul></figure>`)
	return template.HTML(b.String()) // #nosec G203 -- every text in it is escaped above
}

// segments splits points (those in the window, at most chartMaxPoints)
// where a gap is longer than twice the earlier sample's length.
func (c *chart) segments(points []chartPoint) [][]chartPoint {
	var segs [][]chartPoint
	var cur []chartPoint
	for _, p := range points {
		if p.At.Before(c.From) || p.At.After(c.To) {
			continue
		}
		if n := len(cur); n > 0 && p.At.Sub(cur[n-1].At) > 2*max(cur[n-1].Length, time.Second) {
			segs = append(segs, cur)
			cur = nil
		}
		cur = append(cur, p)
	}
	if len(cur) > 0 {
		segs = append(segs, cur)
	}
	// A day of samples is 354 points; a longer series is cut to its end.
	total := 0
	for i := len(segs) - 1; i >= 0; i-- {
		if total+len(segs[i]) > chartMaxPoints {
			segs[i] = segs[i][len(segs[i])-(chartMaxPoints-total):]
			return segs[i:]
		}
		total += len(segs[i])
	}
	return segs
}

// describe says each line's latest value and peak: the chart's text for
// screen readers.
func (c *chart) describe(format func(float64) string) string {
	parts := make([]string, 0, len(c.Series))
	for _, s := range c.Series {
		if len(s.Points) == 0 {
			parts = append(parts, s.Name+": no data")
			continue
		}
		peak := 0.0
		for _, p := range s.Points {
			peak = max(peak, p.V)
		}
		parts = append(parts, fmt.Sprintf("%s: latest %s, peak %s", s.Name, format(s.Points[len(s.Points)-1].V), format(peak)))
	}
	return fmt.Sprintf("%s to %s. %s.", c.From.Format("15:04"), c.To.Format("15:04"), strings.Join(parts, "; "))
}

// niceCeil rounds v up to 1, 2, 2.5 or 5 times a power of ten (1 for 0 or
// less), so that the axis reads in round numbers.
func niceCeil(v float64) float64 {
	if !(v > 0) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if v <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// timeSteps are the time axis' tick spacings, finest first.
var timeSteps = []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute,
	30 * time.Minute, time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour}

// timeStep returns the finest tick spacing that puts at most
// chartMaxXTicks ticks on span.
func timeStep(span time.Duration) time.Duration {
	for _, s := range timeSteps {
		if span/s < chartMaxXTicks {
			return s
		}
	}
	return 24 * time.Hour
}

// coord formats a coordinate to one decimal.
func coord(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }
