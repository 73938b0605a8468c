package ringwal

import (
	"sort"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/ring"
	"github.com/ringwal/ringwal/wal"
)

// maxBreakerKeys caps the keys exported one by one in
// ringwal_breaker_state; the rest are summed under key="_other".
const maxBreakerKeys = 50

// metrics is the engine's Prometheus collector. Nothing from client_golang
// runs on the hot path: the engine keeps atomics and histograms of its own,
// and Collect turns them into const metrics at scrape time.
type metrics struct {
	e *Engine

	wait, handling       histogram
	walWrite, walFsync   histogram
	walBatchRecords      [20]counterBucket // power-of-two record counts
	walBatchRecordsSum   counterBucket
	walBatches, walBytes counterBucket

	descs map[string]*prometheus.Desc
}

type counterBucket struct{ paddedCounter }

func newMetrics(e *Engine) *metrics {
	m := &metrics{e: e, descs: map[string]*prometheus.Desc{}}
	d := func(name, help string, labels ...string) {
		m.descs[name] = prometheus.NewDesc("ringwal_"+name, help, labels, nil)
	}
	d("enqueued_total", "Messages enqueued since the engine opened.")
	d("dequeued_total", "Deliveries handed out (leases granted).")
	d("acked_total", "Deliveries acknowledged.")
	d("nacked_total", "Deliveries negatively acknowledged by consumers.")
	d("retried_total", "Failed deliveries scheduled for another attempt.")
	d("expired_total", "Messages dead-lettered because their TTL passed.")
	d("dead_lettered_total", "Messages moved to a dead-letter queue, by category.", "category")
	d("lease_expiries_total", "Leases that expired before an ack or nack.")
	d("duplicates_total", "Enqueues refused as duplicates of a DedupID.")
	d("backpressure_waits_total", "Enqueues that had to wait (or were refused) for space.")
	d("breaker_trips_total", "Circuit breaker trips to open, all keys.")
	d("redriven_total", "Dead letters redriven to pending.")
	d("requeued_total", "Messages requeued by an operator.")
	d("messages", "Live messages by state.", "state")
	d("pending_messages", "Pending messages by priority.", "priority")
	d("dead_letters", "Dead letters held, by category.", "category")
	d("tier_utilization_ratio", "Fill ratio of each priority ring.", "priority")
	d("breaker_state", "Breaker state per key: 0 closed, 1 half-open, 2 open; key=\"_other\" counts the not-closed breakers beyond the exported keys.", "key")
	d("oldest_pending_age_seconds", "Age of the longest-waiting pending message.")
	d("wait_seconds", "Time from ready to dequeue.")
	d("handling_seconds", "Time from dequeue to ack or nack.")
	d("wal_batch_records", "Records per write-ahead-log batch.")
	d("wal_write_seconds", "Time in write(2) per WAL batch.")
	d("wal_fsync_seconds", "Time in fsync per WAL batch.")
	d("wal_written_bytes_total", "Framed bytes written to the WAL.")
	d("recovery_seconds", "Time Open took to load the snapshot and replay the log.")
	return m
}

func (m *metrics) observeWait(ns int64)     { m.wait.observe(ns) }
func (m *metrics) observeHandling(ns int64) { m.handling.observe(ns) }

// onBatch is the WAL writer's per-batch hook.
func (e *Engine) onBatch(b wal.BatchInfo) {
	m := e.metrics
	if m == nil {
		return
	}
	if b.Records > 0 {
		i := 0
		if b.Records > 1 {
			i = min(len(m.walBatchRecords)-1, 64-leadingZeros(uint64(b.Records-1)))
		}
		m.walBatchRecords[i].Add(1)
		m.walBatchRecordsSum.Add(uint64(b.Records))
		m.walBatches.Add(1)
		m.walBytes.Add(uint64(b.Bytes))
		m.walWrite.observe(int64(b.Write))
	}
	if b.Sync > 0 {
		m.walFsync.observe(int64(b.Sync))
	}
}

func leadingZeros(x uint64) int {
	n := 0
	for i := 63; i >= 0 && x&(1<<i) == 0; i-- {
		n++
	}
	return n
}

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range m.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector: it reads the engine's counters
// at scrape time.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	e := m.e
	s := e.Stats()
	counter := func(name string, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(m.descs[name], prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(name string, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(m.descs[name], prometheus.GaugeValue, v, labels...)
	}
	counter("enqueued_total", s.Enqueued)
	counter("dequeued_total", s.Dequeued)
	counter("acked_total", s.Acked)
	counter("nacked_total", s.Nacked)
	counter("retried_total", s.Retried)
	counter("expired_total", s.Expired)
	counter("lease_expiries_total", s.LeaseExpiries)
	counter("duplicates_total", s.Duplicates)
	counter("backpressure_waits_total", s.BackpressureWaits)
	counter("breaker_trips_total", s.BreakerTrips)
	counter("redriven_total", s.Redriven)
	counter("requeued_total", s.Requeued)
	for _, cat := range classify.Categories() {
		counter("dead_lettered_total", s.DeadLetteredByCategory[cat], cat.String())
		gauge("dead_letters", float64(s.DeadByCategory[cat]), cat.String())
	}
	for _, st := range []struct {
		name string
		n    int
	}{{"pending", s.Pending}, {"delayed", s.Delayed}, {"leased", s.Leased}, {"held", s.Held}, {"dead", s.Dead}} {
		gauge("messages", float64(st.n), st.name)
	}
	for t := 0; t < ring.NumTiers; t++ {
		p := priorityOfTier(t).String()
		gauge("pending_messages", float64(s.PendingByPriority[priorityOfTier(t)]), p)
		gauge("tier_utilization_ratio", s.TierUtilization[t], p)
	}
	gauge("oldest_pending_age_seconds", s.OldestPending.Seconds())
	m.collectBreakers(ch)
	ch <- latencyHistogram(m.descs["wait_seconds"], &m.wait)
	ch <- latencyHistogram(m.descs["handling_seconds"], &m.handling)
	ch <- latencyHistogram(m.descs["wal_write_seconds"], &m.walWrite)
	ch <- latencyHistogram(m.descs["wal_fsync_seconds"], &m.walFsync)
	counter("wal_written_bytes_total", m.walBytes.Load())
	buckets := make(map[float64]uint64, len(m.walBatchRecords))
	var cum uint64
	for i := range m.walBatchRecords {
		cum += m.walBatchRecords[i].Load()
		buckets[float64(uint64(1)<<i)] = cum
	}
	ch <- prometheus.MustNewConstHistogram(m.descs["wal_batch_records"], m.walBatches.Load(),
		float64(m.walBatchRecordsSum.Load()), buckets)
	rec := s.Recovery.Duration.Seconds()
	ch <- prometheus.MustNewConstHistogram(m.descs["recovery_seconds"], 1, rec, recoveryBuckets(rec))
}

func recoveryBuckets(v float64) map[float64]uint64 {
	out := map[float64]uint64{}
	for _, b := range []float64{0.001, 0.01, 0.1, 0.5, 1, 5, 30, 120} {
		if v <= b {
			out[b] = 1
		} else {
			out[b] = 0
		}
	}
	return out
}

func latencyHistogram(d *prometheus.Desc, h *histogram) prometheus.Metric {
	counts, total, sum := h.snapshot()
	buckets := make(map[float64]uint64, latencyBuckets)
	var cum uint64
	for i, n := range counts {
		cum += n
		if i < latencyBuckets-1 {
			buckets[bucketUpperSeconds(i)] = cum
		}
	}
	return prometheus.MustNewConstHistogram(d, total, sum, buckets)
}

func (m *metrics) collectBreakers(ch chan<- prometheus.Metric) {
	keys := m.e.breakers.Keys()
	// Export the not-closed keys first, then by name, so that trouble is
	// never hidden behind the cap.
	sort.Slice(keys, func(i, j int) bool {
		ci, cj := keys[i].State == breaker.Closed, keys[j].State == breaker.Closed
		if ci != cj {
			return !ci
		}
		return keys[i].Key < keys[j].Key
	})
	other := 0
	for i, k := range keys {
		v := breakerValue(k.State)
		if i < maxBreakerKeys {
			ch <- prometheus.MustNewConstMetric(m.descs["breaker_state"], prometheus.GaugeValue, v, k.Key)
			continue
		}
		if k.State != breaker.Closed {
			other++
		}
	}
	if len(keys) > maxBreakerKeys {
		ch <- prometheus.MustNewConstMetric(m.descs["breaker_state"], prometheus.GaugeValue, float64(other), "_other")
	}
}

func breakerValue(s breaker.State) float64 {
	switch s {
	case breaker.HalfOpen:
		return 1
	case breaker.Open:
		return 2
	}
	return 0
}

var _ = strconv.Itoa
