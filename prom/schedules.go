package prom

import (
	"sync"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringwal/ringwal"
)

// MaxScheduleSeries caps the schedules exported one by one in the
// ringwal_schedule_* metrics; the rest are summed under
// schedule="_other" (OtherScheduleLabel).
const MaxScheduleSeries = 50

// OtherScheduleLabel labels the sum of the schedules not exported one by
// one. Schedule names starting with "_" are refused by the engine, so no
// schedule can take it.
const OtherScheduleLabel = "_other"

// scheduleTotals are a schedule's counters.
type scheduleTotals struct{ runs, skipped uint64 }

func (t *scheduleTotals) add(o scheduleTotals) {
	t.runs += o.runs
	t.skipped += o.skipped
}

// below reports whether any of t's counters is below o's: the schedule
// was removed and added again between two scrapes.
func (t scheduleTotals) below(o scheduleTotals) bool {
	return t.runs < o.runs || t.skipped < o.skipped
}

// scheduleSeries chooses which schedules have series of their own, as
// queueSeries does for queues: a schedule gets its own series when the
// collector first sees it and fewer than MaxScheduleSeries have one, and
// keeps it until it is removed; the others are summed under "_other",
// whose counters keep the last totals of those removed, so that they
// never go back.
type scheduleSeries struct {
	mu       sync.Mutex
	own      map[string]bool           // schedules with series of their own
	folded   map[string]scheduleTotals // schedules under _other, by their totals at the last scrape
	retired  scheduleTotals            // totals of the folded schedules gone
	present  map[string]bool           // scratch: the schedules of this scrape
	capacity int                       // MaxScheduleSeries (tests lower it)
}

func newScheduleSeries() *scheduleSeries {
	return &scheduleSeries{own: map[string]bool{}, folded: map[string]scheduleTotals{},
		present: map[string]bool{}, capacity: MaxScheduleSeries}
}

// scheduleRow is one exported schedule label's counters.
type scheduleRow struct {
	label  string
	totals scheduleTotals
}

// rows returns the rows to export for infos (Engine.Schedules: by name),
// updating the choice. ss.mu must be held from before the Schedules call
// that returned infos, so that scrapes are taken in turn.
func (ss *scheduleSeries) rows(infos []ringwal.ScheduleInfo) []scheduleRow {
	clear(ss.present)
	for _, in := range infos {
		ss.present[in.Name] = true
	}
	for name := range ss.own {
		if !ss.present[name] {
			delete(ss.own, name) // removed: its series ends, its place is free
		}
	}
	for name, last := range ss.folded {
		if !ss.present[name] {
			ss.retired.add(last)
			delete(ss.folded, name)
		}
	}
	rows := make([]scheduleRow, 0, min(len(infos), ss.capacity+1))
	other := scheduleRow{label: OtherScheduleLabel, totals: ss.retired}
	folded := false
	for _, in := range infos {
		t := scheduleTotals{in.Runs, in.Skipped}
		switch {
		case ss.own[in.Name]:
		case ss.adopt(in.Name):
			ss.own[in.Name] = true
		default:
			if last, ok := ss.folded[in.Name]; ok && t.below(last) {
				ss.retired.add(last) // removed and added again since the last scrape
				other.totals.add(last)
			}
			ss.folded[in.Name] = t
			other.totals.add(t)
			folded = true
			continue
		}
		rows = append(rows, scheduleRow{label: in.Name, totals: t})
	}
	if folded || ss.retired != (scheduleTotals{}) {
		rows = append(rows, other)
	}
	return rows
}

// adopt reports whether a schedule not seen before gets a series of its
// own: a place is free and its name makes a label that cannot be
// mistaken for another.
func (ss *scheduleSeries) adopt(name string) bool {
	if _, seen := ss.folded[name]; seen {
		return false
	}
	return len(ss.own) < ss.capacity && utf8.ValidString(name) && name != OtherScheduleLabel
}

// collectSchedules exports the per-schedule counters, one scrape at a
// time (see rows). Safe for concurrent use.
func (c *collector) collectSchedules(ch chan<- prometheus.Metric) {
	c.schedules.mu.Lock()
	rows := c.schedules.rows(c.e.Schedules())
	c.schedules.mu.Unlock()
	for _, r := range rows {
		ch <- prometheus.MustNewConstMetric(descs.scheduleRuns, prometheus.CounterValue, float64(r.totals.runs), r.label)
		ch <- prometheus.MustNewConstMetric(descs.scheduleSkipped, prometheus.CounterValue, float64(r.totals.skipped), r.label)
	}
}
