package prom

import (
	"sync"

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

func (t scheduleTotals) plus(o scheduleTotals) scheduleTotals {
	return scheduleTotals{t.runs + o.runs, t.skipped + o.skipped}
}

// below reports whether any of t's counters is below o's: the schedule
// was removed and added again between two scrapes.
func (t scheduleTotals) below(o scheduleTotals) bool {
	return t.runs < o.runs || t.skipped < o.skipped
}

// scheduleSeries chooses which schedules have series of their own, as
// queueSeries does for queues (capped: MaxScheduleSeries of them).
type scheduleSeries struct {
	mu sync.Mutex
	c  capped[scheduleTotals]
}

func newScheduleSeries() *scheduleSeries {
	return &scheduleSeries{c: newCapped[scheduleTotals](MaxScheduleSeries, OtherScheduleLabel)}
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
	names := make([]string, len(infos))
	for i, in := range infos {
		names[i] = in.Name
	}
	rows := make([]scheduleRow, 0, min(len(infos), ss.c.capacity+1))
	other := scheduleRow{label: OtherScheduleLabel, totals: ss.c.begin(names)}
	folded := false
	for _, in := range infos {
		t := scheduleTotals{in.Runs, in.Skipped}
		own, tt := ss.c.place(in.Name, t)
		if !own {
			other.totals = other.totals.plus(tt)
			folded = true
			continue
		}
		rows = append(rows, scheduleRow{label: in.Name, totals: tt})
	}
	if folded || ss.c.anyRetired() {
		rows = append(rows, other)
	}
	return rows
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
