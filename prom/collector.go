package prom

import (
	"math"
	"slices"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/classify"
)

// MaxBreakerKeys caps the keys exported one by one in
// ringwal_breaker_state; the rest are summed under key="_other".
const MaxBreakerKeys = 50

// OtherBreakerKey labels the sum of the breakers not exported one by one.
const OtherBreakerKey = "_other"

// NewCollector returns a Prometheus collector of e's statistics (see the
// package doc for the metrics). The caller registers it, and unregisters
// it if the registry outlives the engine. Each scrape calls e.Stats once.
func NewCollector(e *ringwal.Engine) prometheus.Collector {
	return &collector{e: e, queues: newQueueSeries(), schedules: newScheduleSeries()}
}

type collector struct {
	e         *ringwal.Engine
	queues    *queueSeries    // which queues have series of their own
	schedules *scheduleSeries // which schedules have series of their own
}

// descs are the collector's descriptors, shared by every collector.
type descSet struct {
	enqueued, dequeued, acked, nacked, retried, expired, deadLettered *prometheus.Desc
	leaseExpiries, duplicates, backpressure, breakerTrips             *prometheus.Desc
	redriven, requeued, walBytes, walFailed                           *prometheus.Desc
	cancelled, deadEvicted, deadMax                                   *prometheus.Desc

	waiting, keys, keyWaiting, deliveryPaused *prometheus.Desc

	messages, deadLetters, tierUtilization, breakerState, breakers *prometheus.Desc
	oldestPending, recoveryDuration, recoveryRecords, recoveryTorn *prometheus.Desc

	wait, handling, enqueueLatency, walBatchRecords, walWrite, walFsync *prometheus.Desc

	published, unrouted, queues, queueMessages, queueDead                  *prometheus.Desc
	queueEnqueued, queueAcked, queueDeadLettered, queueOldest, queuePaused *prometheus.Desc

	scheduleRuns, scheduleSkipped *prometheus.Desc

	deadPurged, deadReviewed, deadUnreviewed *prometheus.Desc

	closed, walSinceCheckpoint, walDisk, walLastCheckpoint, walUnusable *prometheus.Desc

	all []*prometheus.Desc
}

var descs = newDescs()

func newDescs() *descSet {
	d := &descSet{}
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
	d.cancelled = nd("cancelled_total", "Messages removed by Cancel.")
	d.deadEvicted = nd("dead_letters_evicted_total", "Dead letters evicted because the store reached its bound (MaxDeadLetters), oldest first, reviewed ones before unreviewed.")
	d.deadPurged = nd("dead_letters_purged_total", "Dead letters removed by a purge (PurgeDeadLetters, PurgeDeadLetter) or by DeadLetterRetention.")
	d.deadReviewed = nd("dead_letters_reviewed_total", "Dead letters marked reviewed by an operator (a re-review included).")
	d.deadUnreviewed = nd("dead_letters_unreviewed", "Dead letters held that no operator has reviewed.")
	d.deadMax = nd("dead_letters_max", "The dead-letter store's bound (Options.MaxDeadLetters): past it the oldest are evicted.")
	d.waiting = nd("waiting_messages", "Pending messages kept aside by their key, by reason (ordered, in-flight, rate, paused); they are also counted as pending in ringwal_messages.", "reason")
	d.keys = nd("keys", "Keys by condition: paused (PauseKey or a Retry-After), throttled (out of tokens with messages waiting), at_cap (at MaxQueued, or at the isolation cap of held messages).", "condition")
	d.keyWaiting = nd("key_waiting_messages", "Messages kept aside per key. At most 50 keys are exported (the most waiting first); key=\"_other\" is the sum over the rest.", "key")
	d.deliveryPaused = nd("delivery_paused", "1 while a Pause of all delivery is in force.")

	d.messages = nd("messages", "Live messages by state (pending, delayed, leased, held) and priority; dead letters are in ringwal_dead_letters.", "state", "priority")
	d.deadLetters = nd("dead_letters", "Dead letters held, by category.", "category")
	d.tierUtilization = nd("tier_utilization_ratio", "Fill ratio (0-1) of each priority ring.", "priority")
	d.breakerState = nd("breaker_state", "Circuit breaker state per key: 0 closed, 1 half-open, 2 open. At most 50 keys are exported (those not closed first); key=\"_other\" is the sum over the rest.", "key")
	d.breakers = nd("breakers", "Circuit breakers by state.", "state")
	d.oldestPending = nd("oldest_pending_age_seconds", "Age of the longest-waiting pending message (0 when none is pending).")
	d.recoveryDuration = nd("recovery_duration_seconds", "How long Open took to load the snapshot, replay the log and rebuild the engine.")
	d.recoveryRecords = nd("recovery_records", "Log records Open replayed.")
	d.recoveryTorn = nd("recovery_torn_bytes", "Bytes of torn log tail Open cut off.")

	d.published = nd("published_total", "Publish calls that put copies of a message into the queues bound to its topic.")
	d.unrouted = nd("unrouted_publishes_total", "Publish calls to a topic no queue binds (no copy made).")
	d.queues = nd("queues", "Declared queues, the default queue included.")
	const perQueue = ` At most 50 named queues are exported; queue="_other" is the sum over the rest, queue="_default" is the default queue.`
	d.queueMessages = nd("queue_messages", "Live messages per queue by state (pending, delayed, leased, held); dead letters are in ringwal_queue_dead_letters."+perQueue, "queue", "state")
	d.queueDead = nd("queue_dead_letters", "Dead letters held per queue."+perQueue, "queue")
	d.queueEnqueued = nd("queue_enqueued_total", "Messages enqueued per queue (published copies included)."+perQueue, "queue")
	d.queueAcked = nd("queue_acked_total", "Deliveries acknowledged per queue."+perQueue, "queue")
	d.queueDeadLettered = nd("queue_dead_lettered_total", "Messages dead-lettered per queue."+perQueue, "queue")
	d.queueOldest = nd("queue_oldest_pending_age_seconds", "Age of the queue's longest-waiting pending message (0 when none); for _other the oldest of the rest."+perQueue, "queue")
	d.queuePaused = nd("queue_paused", "1 while the queue's delivery is paused (Queue.Pause); for _other how many of the rest are."+perQueue, "queue")
	const perSchedule = ` At most 50 schedules are exported; schedule="_other" is the sum over the rest.`
	d.scheduleRuns = nd("schedule_runs_total", "Runs of each schedule (ticks, catch-ups and triggers), kept across restarts."+perSchedule, "schedule")
	d.scheduleSkipped = nd("schedule_skipped_total", "Ticks of each schedule not run (overlap, catch-up, a full queue), kept across restarts."+perSchedule, "schedule")

	// The engine measures one message in 64 (Stats.Wait, Stats.Handling).
	const sample = "; one message in 64 is measured."
	d.wait = nd("wait_seconds", "Time from enqueue (or from becoming due, for delayed and retried messages) to dequeue"+sample)
	d.handling = nd("handling_seconds", "Time from dequeue to ack or nack"+sample)
	d.enqueueLatency = nd("enqueue_seconds", "Time an Enqueue call spends from claiming its message's record to returning, chiefly the wait for the log in Write and Fsync modes"+sample)
	d.walBatchRecords = nd("wal_batch_records", "Records per write-ahead-log batch (group commit).")
	d.walWrite = nd("wal_write_seconds", "Time in write(2) per write-ahead-log batch.")
	d.walFsync = nd("wal_fsync_seconds", "Time in fsync per write-ahead-log sync.")
	d.closed = nd("closed", "1 once the engine's Close has begun: it takes no more messages.")
	d.walSinceCheckpoint = nd("wal_since_checkpoint_bytes", "Log bytes after the newest snapshot: what a restart replays. An automatic checkpoint runs past Options.CheckpointBytes, so growth far beyond it means checkpoints fail.")
	d.walDisk = nd("wal_disk_bytes", "Bytes the log's segments and snapshots take on disk.")
	d.walLastCheckpoint = nd("wal_last_checkpoint_timestamp_seconds", "Unix time of the newest snapshot (0: none yet).")
	d.walUnusable = nd("wal_unusable", "1 once the log is unusable (a failed fsync or repair): every write fails until the engine is reopened.")
	return d
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range descs.all {
		ch <- d
	}
}

// tierPriorities: Stats.TierUtilization's order (Critical first).
var tierPriorities = [...]ringwal.Priority{ringwal.Critical, ringwal.High, ringwal.Normal, ringwal.Low, ringwal.Background}

// Collect implements prometheus.Collector: one Stats call per scrape.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	d := descs
	s, queueRows := c.stats()
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
	counter(d.cancelled, s.Cancelled)
	counter(d.deadEvicted, s.DeadLettersEvicted)
	counter(d.deadPurged, s.DeadLettersPurged)
	counter(d.deadReviewed, s.DeadLettersReviewed)
	gauge(d.deadUnreviewed, float64(s.UnreviewedDeadLetters))
	gauge(d.deadMax, float64(s.MaxDeadLetters))
	for _, why := range waitReasons {
		gauge(d.waiting, float64(s.WaitingByReason[why]), why.String())
	}
	collectKeys(ch, s.Keys)
	gauge(d.deliveryPaused, float64(boolRank(s.DeliveryPaused)))
	for _, cat := range classify.Categories() {
		counter(d.deadLettered, s.DeadLetteredByCategory[cat], cat.String())
		gauge(d.deadLetters, float64(s.DeadByCategory[cat]), cat.String())
	}
	states := [...]struct {
		name string
		byP  map[ringwal.Priority]int
	}{{"pending", s.PendingByPriority}, {"delayed", s.DelayedByPriority},
		{"leased", s.LeasedByPriority}, {"held", s.HeldByPriority}}
	for t, p := range tierPriorities {
		for _, st := range states {
			gauge(d.messages, float64(st.byP[p]), st.name, p.String())
		}
		if t < len(s.TierUtilization) {
			gauge(d.tierUtilization, s.TierUtilization[t], p.String())
		}
	}
	gauge(d.oldestPending, s.OldestPending.Seconds())
	collectBreakers(ch, s.Breakers)
	collectQueues(ch, s, queueRows)
	c.collectSchedules(ch)
	ch <- latencyHistogram(d.wait, s.Wait)
	ch <- latencyHistogram(d.handling, s.Handling)
	ch <- latencyHistogram(d.enqueueLatency, s.EnqueueLatency)
	gauge(d.closed, float64(boolRank(s.Closed)))

	if !s.Durable {
		return // memory only: no log, no recovery
	}
	counter(d.walBytes, s.WAL.Bytes)
	counter(d.walFailed, s.WAL.FailedBatches)
	ch <- batchHistogram(s.WAL)
	ch <- latencyHistogram(d.walWrite, s.WAL.Write)
	ch <- latencyHistogram(d.walFsync, s.WAL.Fsync)
	gauge(d.walSinceCheckpoint, float64(s.WAL.SinceCheckpoint))
	gauge(d.walDisk, float64(s.WAL.DiskBytes))
	last := 0.0
	if !s.WAL.LastCheckpoint.IsZero() {
		last = float64(s.WAL.LastCheckpoint.UnixNano()) / 1e9
	}
	gauge(d.walLastCheckpoint, last)
	gauge(d.walUnusable, float64(boolRank(s.WAL.Failed != "")))
	gauge(d.recoveryDuration, s.Recovery.Duration.Seconds())
	gauge(d.recoveryRecords, float64(s.Recovery.Records))
	gauge(d.recoveryTorn, float64(s.Recovery.TornBytes))
}

// batchHistogram exports the batch sizes; the last bucket, which also
// holds the larger batches, is left to +Inf.
func batchHistogram(w ringwal.WALStats) prometheus.Metric {
	buckets := make(map[float64]uint64, len(w.BatchRecords))
	var count uint64
	for i, b := range w.BatchRecords {
		count = b.Count
		if i < len(w.BatchRecords)-1 {
			buckets[float64(b.UpperBound)] = b.Count
		}
	}
	// The count is the buckets' total, so that it is never below the last
	// finite bucket.
	return prometheus.MustNewConstHistogram(descs.walBatchRecords, count, float64(w.Records), buckets)
}

// latencyHistogram exports l; its last bucket, which also holds
// everything above, is left to +Inf.
func latencyHistogram(d *prometheus.Desc, l ringwal.Latency) prometheus.Metric {
	buckets := make(map[float64]uint64, len(l.Buckets))
	count := l.Count
	for i, b := range l.Buckets {
		if i < len(l.Buckets)-1 && b.UpperBound < math.MaxInt64 {
			buckets[b.UpperBound.Seconds()] = b.Count
		} else {
			count = b.Count
		}
	}
	return prometheus.MustNewConstHistogram(d, count, l.Sum.Seconds(), buckets)
}

// collectBreakers exports the breaker states, capped at MaxBreakerKeys
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
		if exported < MaxBreakerKeys && k.Key != OtherBreakerKey && utf8.ValidString(k.Key) {
			ch <- prometheus.MustNewConstMetric(descs.breakerState, prometheus.GaugeValue, v, k.Key)
			exported++
			continue
		}
		other += v
		folded = true
	}
	if folded {
		ch <- prometheus.MustNewConstMetric(descs.breakerState, prometheus.GaugeValue, other, OtherBreakerKey)
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

// waitReasons are the reasons ringwal_waiting_messages exports.
var waitReasons = [...]ringwal.WaitReason{ringwal.WaitOrdered, ringwal.WaitInFlight, ringwal.WaitRate, ringwal.WaitPaused}

// collectKeys exports the keys by condition, and the waiting messages of
// at most MaxBreakerKeys keys (the most waiting first); the rest are
// summed under key="_other". keys is Stats.Keys and is reordered.
func collectKeys(ch chan<- prometheus.Metric, keys []ringwal.KeyStats) {
	var paused, throttled, atCap int
	for _, k := range keys {
		paused += boolRank(k.Paused)
		throttled += boolRank(k.Throttled)
		atCap += boolRank(k.AtCap)
	}
	for _, c := range [...]struct {
		name string
		n    int
	}{{"paused", paused}, {"throttled", throttled}, {"at_cap", atCap}} {
		ch <- prometheus.MustNewConstMetric(descs.keys, prometheus.GaugeValue, float64(c.n), c.name)
	}
	slices.SortStableFunc(keys, func(a, b ringwal.KeyStats) int { return b.Waiting - a.Waiting })
	exported, other, folded := 0, 0, false
	for _, k := range keys {
		if k.Waiting == 0 {
			break
		}
		if exported < MaxBreakerKeys && k.Key != OtherBreakerKey && utf8.ValidString(k.Key) {
			ch <- prometheus.MustNewConstMetric(descs.keyWaiting, prometheus.GaugeValue, float64(k.Waiting), k.Key)
			exported++
			continue
		}
		other += k.Waiting
		folded = true
	}
	if folded {
		ch <- prometheus.MustNewConstMetric(descs.keyWaiting, prometheus.GaugeValue, float64(other), OtherBreakerKey)
	}
}
