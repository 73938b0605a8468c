package prom

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringwal/ringwal"
)

// MaxQueueSeries caps the named queues exported one by one in the
// ringwal_queue_* metrics; the rest are summed under queue="_other". The
// default queue is always exported, and is not counted.
const MaxQueueSeries = 50

// DefaultQueueLabel is the queue label of the default queue (Message.Queue
// ""). Names starting with "_" are the engine's, so no named queue can
// take it.
const DefaultQueueLabel = "_default"

// OtherQueueLabel labels the sum of the queues not exported one by one.
const OtherQueueLabel = "_other"

// queueStates are the states ringwal_queue_messages exports (dead letters
// are in ringwal_queue_dead_letters, as ringwal_messages leaves them to
// ringwal_dead_letters).
var queueStates = [...]string{"pending", "delayed", "leased", "held"}

// queueTotals are a queue's lifetime counters.
type queueTotals struct{ enqueued, acked, deadLettered uint64 }

func totalsOf(q ringwal.QueueStats) queueTotals {
	return queueTotals{q.Enqueued, q.Acked, q.DeadLettered}
}

func (t queueTotals) plus(o queueTotals) queueTotals {
	return queueTotals{t.enqueued + o.enqueued, t.acked + o.acked, t.deadLettered + o.deadLettered}
}

// below reports whether any of t's counters is below o's: the queue was
// deleted and declared again between two scrapes.
func (t queueTotals) below(o queueTotals) bool {
	return t.enqueued < o.enqueued || t.acked < o.acked || t.deadLettered < o.deadLettered
}

// queueSeries chooses which named queues have series of their own
// (capped: MaxQueueSeries of them); the default queue always has one.
type queueSeries struct {
	mu   sync.Mutex
	c    capped[queueTotals]
	dflt queueTotals // the default queue's totals last exported
}

func newQueueSeries() *queueSeries {
	return &queueSeries{c: newCapped[queueTotals](MaxQueueSeries, OtherQueueLabel, DefaultQueueLabel)}
}

// queueRow is one exported queue label's figures.
type queueRow struct {
	label  string
	s      ringwal.QueueStats
	totals queueTotals
	paused int
}

// rows returns the rows to export for queues (Stats.Queues: the default
// queue first), updating the choice; paused says which queues are paused.
// qs.mu must be held from before the Stats call that returned queues, so
// that scrapes are taken in turn and each compares its totals with those
// of the one before.
func (qs *queueSeries) rows(queues []ringwal.QueueStats, paused map[string]bool) []queueRow {
	names := make([]string, 0, len(queues))
	for _, q := range queues {
		if q.Name != "" {
			names = append(names, q.Name)
		}
	}
	rows := make([]queueRow, 0, min(len(queues), qs.c.capacity+2))
	other := queueRow{label: OtherQueueLabel, totals: qs.c.begin(names)}
	folded := false
	for _, q := range queues {
		t := totalsOf(q)
		if q.Name == "" {
			// The engine derives the default queue's totals (its own less
			// the named queues', read a moment later), which a scrape
			// racing with named queues' traffic sees a little low: never
			// export one below the last.
			t = queueTotals{max(t.enqueued, qs.dflt.enqueued), max(t.acked, qs.dflt.acked), max(t.deadLettered, qs.dflt.deadLettered)}
			qs.dflt = t
			rows = append(rows, queueRow{label: DefaultQueueLabel, s: q, totals: t, paused: boolRank(paused[q.Name])})
			continue
		}
		own, tt := qs.c.place(q.Name, t)
		if !own {
			other.totals = other.totals.plus(tt)
			o := &other.s
			o.Pending += q.Pending
			o.Delayed += q.Delayed
			o.Leased += q.Leased
			o.Held += q.Held
			o.Dead += q.Dead
			o.OldestPending = max(o.OldestPending, q.OldestPending)
			other.paused += boolRank(paused[q.Name])
			folded = true
			continue
		}
		rows = append(rows, queueRow{label: q.Name, s: q, totals: tt, paused: boolRank(paused[q.Name])})
	}
	if folded || qs.c.anyRetired() {
		rows = append(rows, other)
	}
	return rows
}

// stats reads the engine's Stats and the rows of the per-queue metrics,
// one scrape at a time (see rows). Safe for concurrent use.
func (c *collector) stats() (ringwal.Stats, []queueRow) {
	c.queues.mu.Lock()
	defer c.queues.mu.Unlock()
	s := c.e.Stats()
	paused := make(map[string]bool)
	for _, q := range c.e.Queues() {
		if q.Paused {
			paused[q.Name] = true
		}
	}
	return s, c.queues.rows(s.Queues, paused)
}

// collectQueues exports the per-queue metrics, and the publish counters.
func collectQueues(ch chan<- prometheus.Metric, s ringwal.Stats, rows []queueRow) {
	d := descs
	ch <- prometheus.MustNewConstMetric(d.published, prometheus.CounterValue, float64(s.Published))
	ch <- prometheus.MustNewConstMetric(d.unrouted, prometheus.CounterValue, float64(s.UnroutedPublishes))
	ch <- prometheus.MustNewConstMetric(d.queues, prometheus.GaugeValue, float64(len(s.Queues)))
	for _, r := range rows {
		for i, n := range [...]int{r.s.Pending, r.s.Delayed, r.s.Leased, r.s.Held} {
			ch <- prometheus.MustNewConstMetric(d.queueMessages, prometheus.GaugeValue, float64(n), r.label, queueStates[i])
		}
		ch <- prometheus.MustNewConstMetric(d.queueDead, prometheus.GaugeValue, float64(r.s.Dead), r.label)
		ch <- prometheus.MustNewConstMetric(d.queueEnqueued, prometheus.CounterValue, float64(r.totals.enqueued), r.label)
		ch <- prometheus.MustNewConstMetric(d.queueAcked, prometheus.CounterValue, float64(r.totals.acked), r.label)
		ch <- prometheus.MustNewConstMetric(d.queueDeadLettered, prometheus.CounterValue, float64(r.totals.deadLettered), r.label)
		ch <- prometheus.MustNewConstMetric(d.queueOldest, prometheus.GaugeValue, r.s.OldestPending.Seconds(), r.label)
		ch <- prometheus.MustNewConstMetric(d.queuePaused, prometheus.GaugeValue, float64(r.paused), r.label)
	}
}
