package ringwal

import (
	"fmt"
	"math/bits"
	"slices"
	"sync/atomic"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/ring"
	"github.com/ringwal/ringwal/wal"
)

// The engine's Prometheus collector.
//
// Open registers it with Options.Registerer (nil: not registered) and Close
// unregisters it. Nothing from client_golang runs on the hot path: the
// engine keeps atomics and lock-free histograms of its own, and Collect
// turns them into const metrics at scrape time (one Stats call per scrape,
// which scans the engine's records). Two engines on one registry need
// their own labels: register each through
// prometheus.WrapRegistererWith(prometheus.Labels{"engine": name}, reg).
//
// Every metric is prefixed ringwal_; no label is unbounded (breaker keys
// are capped, see below). Durations are in seconds.
//
// Counters (since Open):
//
//	ringwal_enqueued_total                      messages enqueued (duplicates not included)
//	ringwal_dequeued_total                      deliveries handed out (leases granted)
//	ringwal_acked_total                         deliveries acknowledged
//	ringwal_nacked_total                        deliveries nacked by consumers (not lease expiries)
//	ringwal_retried_total                       failed deliveries scheduled for another attempt
//	ringwal_expired_total                       messages dead-lettered because their TTL passed
//	ringwal_dead_lettered_total{category}       messages moved to a dead-letter queue
//	ringwal_lease_expiries_total                leases that ended without an ack or nack
//	ringwal_duplicates_refused_total            enqueues refused as repeats of a DedupID
//	ringwal_backpressure_waits_total            enqueues that found no room (waited or got ErrFull)
//	ringwal_breaker_trips_total                 circuit breaker trips to open, all keys
//	ringwal_redriven_total                      dead letters redriven
//	ringwal_requeued_total                      messages requeued by an operator
//	ringwal_wal_written_bytes_total             framed bytes handed to write(2) (disk engines only)
//	ringwal_wal_failed_batches_total            WAL batches whose write or fsync failed (disk engines only)
//
// Gauges:
//
//	ringwal_messages{state,priority}            live messages; state is pending, delayed, leased or held
//	ringwal_dead_letters{category}              dead letters held
//	ringwal_tier_utilization_ratio{priority}    fill ratio of each priority ring
//	ringwal_breaker_state{key}                  0 closed, 1 half-open, 2 open (see below)
//	ringwal_breakers{state}                     breakers by state (closed, open, half-open)
//	ringwal_oldest_pending_age_seconds          age of the longest-waiting pending message
//	ringwal_recovery_duration_seconds           how long Open took to recover (disk engines only)
//	ringwal_recovery_records                    log records Open replayed (disk engines only)
//	ringwal_recovery_torn_bytes                 bytes of torn log tail Open cut (disk engines only)
//
// Histograms:
//
//	ringwal_wait_seconds                        enqueue (or becoming due) to dequeue, sampled
//	ringwal_handling_seconds                    dequeue to ack or nack, sampled
//	ringwal_wal_batch_records                   records per WAL batch (disk engines only)
//	ringwal_wal_write_seconds                   time in write(2) per WAL batch (disk engines only)
//	ringwal_wal_fsync_seconds                   time in fsync per WAL sync (disk engines only)
//
// ringwal_breaker_state exports at most maxBreakerKeys keys one by one,
// those not closed first, then by name; the remaining keys (and any key
// that is not valid UTF-8 or is literally "_other") are summed under
// key="_other", so sum(ringwal_breaker_state) does not depend on the cap
// and key="_other" is above 0 exactly when one of them is not closed.
//
// The wait and handling histograms measure one message in sampleMask+1
// (chosen by ID, so that the hot path reads the precise clock rarely):
// their _count is that fraction of the deliveries; their quantiles are
// unbiased. Their
// buckets are powers of two from 1µs; the last finite one is 2^26µs
// (67 s).
//
// Enqueued, dequeued and acked are derived from other counters at scrape
// time; a scrape racing with an enqueue or a settle may see them a little
// behind (never ahead), and they never go backwards.

// maxBreakerKeys caps the keys exported one by one in
// ringwal_breaker_state; the rest are summed under key="_other".
const maxBreakerKeys = 50

// otherBreakerKey labels the sum of the breakers not exported one by one.
const otherBreakerKey = "_other"

// walBatchBuckets: bucket i counts batches of up to 2^i records (more
// than 2^(i-1)); the last takes everything above too.
const walBatchBuckets = 20

// metrics is the engine's Prometheus collector and the home of the
// statistics the engine keeps for it and for Stats.
type metrics struct {
	e *Engine

	wait, handling     histogram
	walWrite, walFsync histogram
	// Written by the WAL writer goroutine only (onBatch).
	walBatchRecords [walBatchBuckets]atomic.Uint64
	walBatches      atomic.Uint64
	walRecords      atomic.Uint64
	walBytes        atomic.Uint64
	walFailed       atomic.Uint64

	// High-water marks of the derived totals, so that Stats and the
	// collector never report one going backwards.
	enqueued, acked, dequeued monotonic
}

// monotonic is a high-water mark.
type monotonic struct{ v atomic.Uint64 }

// atLeast raises the mark to v and returns the mark.
func (m *monotonic) atLeast(v uint64) uint64 {
	for {
		old := m.v.Load()
		if v <= old {
			return old
		}
		if m.v.CompareAndSwap(old, v) {
			return v
		}
	}
}

// metricDescs are the collector's descriptors, shared by every engine.
type metricDescs struct {
	enqueued, dequeued, acked, nacked, retried, expired, deadLettered *prometheus.Desc
	leaseExpiries, duplicates, backpressure, breakerTrips             *prometheus.Desc
	redriven, requeued, walBytes, walFailed                           *prometheus.Desc

	messages, deadLetters, tierUtilization, breakerState, breakers *prometheus.Desc
	oldestPending, recoveryDuration, recoveryRecords, recoveryTorn *prometheus.Desc

	wait, handling, walBatchRecords, walWrite, walFsync *prometheus.Desc

	all []*prometheus.Desc
}

var descs = newMetricDescs()

func newMetricDescs() *metricDescs {
	d := &metricDescs{}
	nd := func(name, help string, labels ...string) *prometheus.Desc {
		desc := prometheus.NewDesc("ringwal_"+name, help, labels, nil)
		d.all = append(d.all, desc)
		return desc
	}
	d.enqueued = nd("enqueued_total", "Messages enqueued since the engine opened (duplicates not included).")
	d.dequeued = nd("dequeued_total", "Deliveries handed out (leases granted).")
	d.acked = nd("acked_total", "Deliveries acknowledged.")
	d.nacked = nd("nacked_total", "Deliveries negatively acknowledged by consumers (lease expiries not included).")
	d.retried = nd("retried_total", "Failed deliveries scheduled for another attempt.")
	d.expired = nd("expired_total", "Messages dead-lettered because their TTL passed.")
	d.deadLettered = nd("dead_lettered_total", "Messages moved to a dead-letter queue, by failure category.", "category")
	d.leaseExpiries = nd("lease_expiries_total", "Leases that expired before an ack or nack.")
	d.duplicates = nd("duplicates_refused_total", "Enqueues refused as repeats of a DedupID within the dedup window.")
	d.backpressure = nd("backpressure_waits_total", "Enqueues that found their tier or the engine full (waited, or got ErrFull).")
	d.breakerTrips = nd("breaker_trips_total", "Circuit breaker trips to open, all keys.")
	d.redriven = nd("redriven_total", "Dead letters redriven to pending.")
	d.requeued = nd("requeued_total", "Messages requeued by an operator.")
	d.walBytes = nd("wal_written_bytes_total", "Framed bytes handed to write(2) by the write-ahead log.")
	d.walFailed = nd("wal_failed_batches_total", "Write-ahead-log batches whose write or fsync failed.")

	d.messages = nd("messages", "Live messages by state (pending, delayed, leased, held) and priority; dead letters are in ringwal_dead_letters.", "state", "priority")
	d.deadLetters = nd("dead_letters", "Dead letters held, by category.", "category")
	d.tierUtilization = nd("tier_utilization_ratio", "Fill ratio (0-1) of each priority ring.", "priority")
	d.breakerState = nd("breaker_state", "Circuit breaker state per key: 0 closed, 1 half-open, 2 open. At most 50 keys are exported (those not closed first); key=\"_other\" is the sum over the rest.", "key")
	d.breakers = nd("breakers", "Circuit breakers by state.", "state")
	d.oldestPending = nd("oldest_pending_age_seconds", "Age of the longest-waiting pending message (0 when none is pending).")
	d.recoveryDuration = nd("recovery_duration_seconds", "How long Open took to load the snapshot, replay the log and rebuild the engine.")
	d.recoveryRecords = nd("recovery_records", "Log records Open replayed.")
	d.recoveryTorn = nd("recovery_torn_bytes", "Bytes of torn log tail Open cut off.")

	sample := fmt.Sprintf("; one message in %d is measured.", sampleMask+1)
	d.wait = nd("wait_seconds", "Time from enqueue (or from becoming due, for delayed and retried messages) to dequeue"+sample)
	d.handling = nd("handling_seconds", "Time from dequeue to ack or nack"+sample)
	d.walBatchRecords = nd("wal_batch_records", "Records per write-ahead-log batch (group commit).")
	d.walWrite = nd("wal_write_seconds", "Time in write(2) per write-ahead-log batch.")
	d.walFsync = nd("wal_fsync_seconds", "Time in fsync per write-ahead-log sync.")
	return d
}

func newMetrics(e *Engine) *metrics { return &metrics{e: e} }

func (m *metrics) observeWait(ns int64)     { m.wait.observe(ns) }
func (m *metrics) observeHandling(ns int64) { m.handling.observe(ns) }

// onBatch is the WAL writer's per-batch hook (called on its goroutine).
func (e *Engine) onBatch(b wal.BatchInfo) {
	m := e.metrics
	if m == nil {
		return
	}
	if b.Err != nil {
		m.walFailed.Add(1)
	}
	if b.Records > 0 {
		i := min(walBatchBuckets-1, bits.Len64(uint64(b.Records-1)))
		m.walBatchRecords[i].Add(1)
		m.walRecords.Add(uint64(b.Records))
		m.walBatches.Add(1)
		m.walBytes.Add(uint64(b.Bytes))
		m.walWrite.observe(int64(b.Write))
	}
	if b.Sync > 0 {
		m.walFsync.observe(int64(b.Sync))
	}
}

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range descs.all {
		ch <- d
	}
}

// liveStates in the order ringwal_messages exports them.
var metricStates = [...]struct {
	name  string
	state State
}{{"pending", Pending}, {"delayed", Delayed}, {"leased", Leased}, {"held", Held}}

// Collect implements prometheus.Collector: it reads the engine's counters
// at scrape time.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	d := descs
	s := m.e.Stats()
	counter := func(desc *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	}
	counter(d.enqueued, s.Enqueued)
	counter(d.dequeued, s.Dequeued)
	counter(d.acked, s.Acked)
	counter(d.nacked, s.Nacked)
	counter(d.retried, s.Retried)
	counter(d.expired, s.Expired)
	counter(d.leaseExpiries, s.LeaseExpiries)
	counter(d.duplicates, s.Duplicates)
	counter(d.backpressure, s.BackpressureWaits)
	counter(d.breakerTrips, s.BreakerTrips)
	counter(d.redriven, s.Redriven)
	counter(d.requeued, s.Requeued)
	for _, cat := range classify.Categories() {
		counter(d.deadLettered, s.DeadLetteredByCategory[cat], cat.String())
		gauge(d.deadLetters, float64(s.DeadByCategory[cat]), cat.String())
	}
	byState := [...]map[Priority]int{Pending: s.PendingByPriority, Delayed: s.DelayedByPriority,
		Leased: s.LeasedByPriority, Held: s.HeldByPriority}
	for t := 0; t < ring.NumTiers; t++ {
		p := priorityOfTier(t)
		for _, st := range metricStates {
			gauge(d.messages, float64(byState[st.state][p]), st.name, p.String())
		}
		gauge(d.tierUtilization, s.TierUtilization[t], p.String())
	}
	gauge(d.oldestPending, s.OldestPending.Seconds())
	collectBreakers(ch, s.Breakers)
	ch <- latencyHistogram(d.wait, &m.wait)
	ch <- latencyHistogram(d.handling, &m.handling)

	if m.e.log == nil {
		return // memory only: no log, no recovery
	}
	counter(d.walBytes, s.WAL.Bytes)
	counter(d.walFailed, s.WAL.FailedBatches)
	ch <- m.walBatchHistogram()
	ch <- latencyHistogram(d.walWrite, &m.walWrite)
	ch <- latencyHistogram(d.walFsync, &m.walFsync)
	gauge(d.recoveryDuration, s.Recovery.Duration.Seconds())
	gauge(d.recoveryRecords, float64(s.Recovery.Records))
	gauge(d.recoveryTorn, float64(s.Recovery.TornBytes))
}

// walBatchHistogram exports the batch sizes; the last bucket, which also
// holds the larger batches, is left to +Inf.
func (m *metrics) walBatchHistogram() prometheus.Metric {
	buckets := make(map[float64]uint64, walBatchBuckets-1)
	var cum uint64
	for i := range m.walBatchRecords {
		cum += m.walBatchRecords[i].Load()
		if i < walBatchBuckets-1 {
			buckets[float64(uint64(1)<<i)] = cum
		}
	}
	// The count is the buckets' total, so that it is never below the last
	// finite bucket whatever the writer did meanwhile.
	return prometheus.MustNewConstHistogram(descs.walBatchRecords, cum, float64(m.walRecords.Load()), buckets)
}

// latencyHistogram exports h; its last bucket, which also holds
// everything above, is left to +Inf.
func latencyHistogram(d *prometheus.Desc, h *histogram) prometheus.Metric {
	counts, total, sum := h.snapshot()
	buckets := make(map[float64]uint64, latencyBuckets-1)
	var cum uint64
	for i, n := range counts {
		cum += n
		if i < latencyBuckets-1 {
			buckets[bucketUpperSeconds(i)] = cum
		}
	}
	return prometheus.MustNewConstHistogram(d, total, sum, buckets)
}

// collectBreakers exports the breaker states, capped at maxBreakerKeys
// keys; keys is Stats.Breakers (sorted by key) and is reordered.
func collectBreakers(ch chan<- prometheus.Metric, keys []breaker.KeyState) {
	// Not-closed keys first, so that trouble is never hidden behind the
	// cap; by name within each group (the sort is stable).
	slices.SortStableFunc(keys, func(a, b breaker.KeyState) int {
		return boolRank(a.State == breaker.Closed) - boolRank(b.State == breaker.Closed)
	})
	var byState [3]int
	exported, other, folded := 0, 0.0, false
	for _, k := range keys {
		if int(k.State) < len(byState) {
			byState[k.State]++
		}
		v := breakerValue(k.State)
		if exported < maxBreakerKeys && k.Key != otherBreakerKey && utf8.ValidString(k.Key) {
			ch <- prometheus.MustNewConstMetric(descs.breakerState, prometheus.GaugeValue, v, k.Key)
			exported++
			continue
		}
		other += v
		folded = true
	}
	if folded {
		ch <- prometheus.MustNewConstMetric(descs.breakerState, prometheus.GaugeValue, other, otherBreakerKey)
	}
	for st, n := range byState {
		ch <- prometheus.MustNewConstMetric(descs.breakers, prometheus.GaugeValue, float64(n), breaker.State(st).String())
	}
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
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
