package admin

// The console's history. The overview's charts show the engine's rates,
// counts by state, dead letters by category and wait p95. A queue's page
// charts its rates and counts. These charts and the rates over the last
// minute all come from the engine's history (Engine.History,
// Engine.QueueHistory). That history is there from the engine's first 10
// seconds on, whoever was looking.

import (
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/internal/adminfmt"
)

// historyWindows are the windows a page's charts can show (its window=
// query value); defaultWindow is the index of the one shown without.
var historyWindows = []struct {
	Name string
	D    time.Duration
}{{"15m", 15 * time.Minute}, {"1h", time.Hour}, {"6h", 6 * time.Hour}, {"24h", 24 * time.Hour}}

const defaultWindow = 1

// windowLink is a link to the page with another window.
type windowLink struct {
	Name    string
	Query   template.URL
	Current bool
}

// chartsView is a page's history: its charts and what they leave out.
type chartsView struct {
	Windows    []windowLink
	Charts     []template.HTML
	Empty      bool      // no sample yet: the engine opened less than 10 s ago
	CountsFrom time.Time // when the window also has samples without counts by state: the first with them
	NoCounts   bool      // no sample in the window has counts by state
	Rates      []rate    // over the last minute of samples
	RateSpan   time.Duration
}

// rate is one counter's rate per second.
type rate struct {
	Name      string
	PerSecond float64
}

// pickWindow returns the window r's query names (the default when none
// or an unknown one) and the links to the others, which keep r's other
// query values (the queue page's queue).
func pickWindow(r *http.Request) (time.Duration, []windowLink) {
	q := r.URL.Query()
	cur := historyWindows[defaultWindow]
	for _, w := range historyWindows {
		if q.Get("window") == w.Name {
			cur = w
		}
	}
	v := url.Values{}
	for k, vs := range q {
		if k != "window" && k != "done" {
			v[k] = vs
		}
	}
	links := make([]windowLink, len(historyWindows))
	for i, w := range historyWindows {
		v.Set("window", w.Name)
		links[i] = windowLink{Name: w.Name, Query: template.URL(v.Encode()), Current: w == cur}
	}
	return cur.D, links
}

// series picks one value of each sample (those kept says which).
func series(name string, samples []ringwal.HistorySample, v func(ringwal.HistorySample) float64, keep func(ringwal.HistorySample) bool) chartSeries {
	s := chartSeries{Name: name}
	for _, h := range samples {
		if keep == nil || keep(h) {
			s.Points = append(s.Points, chartPoint{At: h.Start, Length: h.Length, V: v(h)})
		}
	}
	return s
}

// perSecond is a count over a sample's length.
func perSecond(n uint64, h ringwal.HistorySample) float64 {
	if h.Length <= 0 {
		return 0
	}
	return float64(n) / h.Length.Seconds()
}

// formatRate reads a rate per second, or per minute on a chart whose top
// is under 1/s (0.1/s reads 6/min).
func formatRate(v, top float64) string {
	if top < 1 {
		return trimFloat(v*60, 1) + "/min"
	}
	if v < 10 {
		return trimFloat(v, 2) + "/s"
	}
	return adminfmt.Count(int(v+0.5)) + "/s"
}

func formatSeconds(v, _ float64) string {
	return adminfmt.Duration(time.Duration(v * float64(time.Second)))
}

func formatInt(v, _ float64) string { return adminfmt.Count(int(v + 0.5)) }

// newCharts makes a page's charts of samples over the window that ends
// with the newest sample (the engine's clock, whatever the handler's);
// id prefixes the charts' element ids. engine adds the engine's own
// charts (dead letters by category, wait p95).
func newCharts(samples []ringwal.HistorySample, window time.Duration, links []windowLink, id string, engine bool) chartsView {
	v := chartsView{Windows: links, Empty: len(samples) == 0}
	if v.Empty {
		return v
	}
	last := samples[len(samples)-1]
	to := last.Start.Add(last.Length)
	from := to.Add(-window)
	var in []ringwal.HistorySample
	for _, h := range samples {
		if !h.Start.Before(from) {
			in = append(in, h)
		}
	}
	v.Rates, v.RateSpan = lastMinute(in, to, engine)
	mk := func(suffix, title string, format func(v, top float64) string, ss ...chartSeries) {
		c := chart{ID: id + "-" + suffix, Title: title, From: from, To: to, Series: ss, Format: format}
		v.Charts = append(v.Charts, c.HTML())
	}
	mk("rates", "Messages per second", formatRate,
		series("enqueued", in, func(h ringwal.HistorySample) float64 { return perSecond(h.Enqueued, h) }, nil),
		series("acked", in, func(h ringwal.HistorySample) float64 { return perSecond(h.Acked, h) }, nil),
		series("dead-lettered", in, func(h ringwal.HistorySample) float64 { return perSecond(h.DeadLettered, h) }, nil))
	counted := func(h ringwal.HistorySample) bool { return h.Counted }
	uncounted := false
	for _, h := range in {
		if !h.Counted {
			uncounted = true
		} else if v.CountsFrom.IsZero() {
			v.CountsFrom = h.Start
		}
	}
	if !uncounted {
		v.CountsFrom = time.Time{} // every sample has them: nothing to say
	}
	v.NoCounts = uncounted && v.CountsFrom.IsZero()
	if !v.NoCounts {
		mk("states", "Pending and held", formatInt,
			series("pending", in, func(h ringwal.HistorySample) float64 { return float64(h.Pending) }, counted),
			series("held", in, func(h ringwal.HistorySample) float64 { return float64(h.Held) }, counted))
	}
	if !engine {
		return v
	}
	var byCat []chartSeries
	for _, c := range classify.Categories() {
		seen := false
		for _, h := range in {
			seen = seen || h.DeadLetteredByCategory[c] > 0
		}
		if seen {
			byCat = append(byCat, series(c.String(), in, func(h ringwal.HistorySample) float64 {
				return perSecond(h.DeadLetteredByCategory[c], h)
			}, nil))
		}
	}
	if len(byCat) == 0 {
		byCat = append(byCat, series("none", in, func(ringwal.HistorySample) float64 { return 0 }, nil))
	}
	mk("dead", "Dead-lettered by category", formatRate, byCat...)
	mk("wait", "Wait for a worker, p95", formatSeconds,
		series("wait p95", in, func(h ringwal.HistorySample) float64 { return h.WaitP95.Seconds() }, nil))
	return v
}

// lastMinute returns the rates over the samples of the minute before to
// (enqueued, acked, retried for the engine, dead-lettered) and the span
// they cover.
func lastMinute(samples []ringwal.HistorySample, to time.Time, engine bool) ([]rate, time.Duration) {
	var span time.Duration
	var enq, acked, retried, dead uint64
	for i := len(samples) - 1; i >= 0 && !samples[i].Start.Before(to.Add(-time.Minute)); i-- {
		h := samples[i]
		span += h.Length
		enq, acked, retried, dead = enq+h.Enqueued, acked+h.Acked, retried+h.Retried, dead+h.DeadLettered
	}
	if span <= 0 {
		return nil, 0
	}
	per := func(n uint64) float64 { return float64(n) / span.Seconds() }
	rs := []rate{{"enqueued", per(enq)}, {"acked", per(acked)}}
	if engine {
		rs = append(rs, rate{"retried", per(retried)})
	}
	return append(rs, rate{"dead-lettered", per(dead)}), span
}

// trimFloat formats v with at most prec decimals, trailing zeros cut.
func trimFloat(v float64, prec int) string {
	s := []byte(strconv.FormatFloat(v, 'f', prec, 64))
	for len(s) > 0 && s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	if len(s) > 0 && s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	return string(s)
}
