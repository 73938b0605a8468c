package ringwal

import (
	"time"

	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/ring"
)

// Stats is a snapshot of an engine's counts and totals.
type Stats struct {
	// Current counts by state.
	Pending, Delayed, Leased, Held, Dead int
	// Waiting counts the Pending messages kept aside by their key (see
	// WaitReason), WaitingByReason splits it.
	Waiting         int
	WaitingByReason map[WaitReason]int
	// Keys describes every key with per-key state worth a look: a policy
	// and live messages, a pause, messages waiting or held, a breaker
	// that is not closed or is failing (KeyStats.Breaker, set for every
	// key listed). Sorted by key.
	Keys []KeyStats
	// DeliveryPaused is true while a Pause of all delivery is in force.
	DeliveryPaused bool
	// PendingByPriority counts pending messages per priority; the other
	// ByPriority maps do the same for their state. Every priority is present.
	PendingByPriority map[Priority]int
	DelayedByPriority map[Priority]int
	LeasedByPriority  map[Priority]int
	HeldByPriority    map[Priority]int
	// DeadByCategory counts dead letters per category.
	DeadByCategory map[classify.Category]int
	// MaxDeadLetters is the dead-letter store's bound (Options.
	// MaxDeadLetters): Dead never stays above it.
	MaxDeadLetters int
	// DeadLettersEvicted counts the dead letters evicted since Open because
	// the store reached MaxDeadLetters (not counted as purged or acked).
	DeadLettersEvicted uint64
	// DeadLettersPurged counts the dead letters removed since Open by
	// PurgeDeadLetters, PurgeDeadLetter, DeadLetterRetention or
	// UnreviewedRetention;
	// DeadLettersReviewed the MarkReviewed calls that marked one (a
	// review of one already reviewed, which replaces its note, included).
	DeadLettersPurged, DeadLettersReviewed uint64
	// UnreviewedDeadLetters is how many of Dead no operator has reviewed:
	// what an alert on forgotten failures watches.
	UnreviewedDeadLetters int

	// Lifetime totals since Open (messages recovered by Open are not
	// counted as Enqueued). Nacked counts consumers' nacks, not lease
	// expiries (LeaseExpiries); BackpressureWaits counts enqueues that
	// found no room, whether they waited or got ErrFull; Requeued counts
	// Requeue calls that moved a message.
	Enqueued, Acked, Nacked, Retried, DeadLettered, Expired uint64
	Dequeued, LeaseExpiries, Duplicates, BackpressureWaits  uint64
	Redriven, Requeued, BreakerTrips                        uint64
	// Cancelled counts messages removed by Cancel (not counted as Acked).
	Cancelled uint64
	// Queues are each queue's counts, the default queue ("") first, then
	// by name.
	Queues []QueueStats
	// Published counts Publish calls that put copies into queues;
	// UnroutedPublishes those to a topic no queue binds (no copy made).
	Published, UnroutedPublishes uint64
	// DeadLetteredByCategory splits DeadLettered.
	DeadLetteredByCategory map[classify.Category]uint64

	// Wait is the time from ready to dequeue, Handling from dequeue to
	// ack or nack, since Open (histogram estimates). Both are sampled:
	// one message in 64, chosen by ID, is measured, so their Count is
	// about 1/64 of the deliveries.
	Wait, Handling Latency
	// EnqueueLatency is the time an Enqueue (or TryEnqueue) spends from
	// claiming its message's record to returning: in Write and Fsync
	// modes chiefly the wait for the log. Sampled as Wait is; the time
	// before the claim (validation, a key's admission, waiting for room:
	// see BackpressureWaits) is not in it.
	EnqueueLatency Latency
	// OldestPending is the age of the longest-waiting pending message.
	// It is read at the fronts of the queues (each priority's, a key's),
	// not by a scan. So it misses a message behind more than 64 entries
	// that no longer name a pending message, until those are popped. Such
	// entries were leased out of order by their deadline, cancelled or
	// requeued.
	OldestPending time.Duration
	// TierUtilization is each tier ring's fill ratio, Critical first
	// (the default queue's); TierUtilizationOf reads it by Priority.
	TierUtilization [NumPriorities]float64
	// Recovery describes what Open replayed.
	Recovery RecoveryStats
	// Breakers is every key's circuit breaker, sorted by key: the same
	// data as Keys' Breaker fields, kept for the callers that read it.
	Breakers []breaker.KeyState
	// WAL describes the write-ahead log's batches (zero when memory-only).
	WAL WALStats
	// Durable is true when the engine has a write-ahead log (Open with a
	// directory); WAL and Recovery only mean something then.
	Durable bool
	// Closed is true once Close has begun; Stats still answers then.
	Closed bool
}

// WALStats describes the write-ahead log's batches since Open.
type WALStats struct {
	Batches, Records, Bytes, FailedBatches uint64
	// Write is the time in write(2) per batch, Fsync per fsync.
	Write, Fsync Latency
	// BatchRecords is the histogram of records per batch, cumulative:
	// bucket i counts the batches of at most 2^i records; the last one's
	// UpperBound is math.MaxInt (no bound) and its Count is every batch.
	BatchRecords []BatchBucket
	// SinceCheckpoint is the log's bytes after the newest snapshot (an
	// automatic checkpoint runs past Options.CheckpointBytes); DiskBytes
	// is what the log and its snapshots take on disk (segments it can
	// stat), Segments their number.
	SinceCheckpoint, DiskBytes int64
	Segments                   int
	// LastCheckpoint is when the newest snapshot was taken (zero: none).
	LastCheckpoint time.Time
	// Failed is the error that made the log unusable (a failed fsync, a
	// failed repair), "" while it works.
	Failed string
}

// BatchBucket is one bucket of WALStats.BatchRecords.
type BatchBucket struct {
	UpperBound int    // records
	Count      uint64 // batches of at most UpperBound records (cumulative)
}

// Latency summarises a latency distribution. Count is the number of
// observations (sampled for Stats.Wait and Stats.Handling); the
// percentiles are estimates from power-of-two buckets.
type Latency struct {
	Count               uint64
	Mean, P50, P95, P99 time.Duration
	// Sum is the total of the observations.
	Sum time.Duration
	// Buckets is the histogram itself, cumulative: bucket i counts the
	// observations of at most 2^i µs (1µs, 2µs, ... 2^26µs ≈ 67s); the
	// last bucket's UpperBound is math.MaxInt64 (no bound) and its Count
	// equals Count. Always the same bounds, zero counts included.
	Buckets []LatencyBucket
}

// LatencyBucket is one bucket of a Latency histogram.
type LatencyBucket struct {
	UpperBound time.Duration // inclusive
	Count      uint64        // observations of at most UpperBound (cumulative)
}

// RecoveryStats describes the replay Open did.
type RecoveryStats struct {
	Records   uint64        // log records replayed after the snapshot
	Bytes     int64         // bytes of log read after the snapshot
	TornBytes int64         // bytes of log Open cut (a torn tail, or what Mode allowed)
	Crashed   int           // messages leased at a crash, requeued
	Poisoned  int           // of those, dead-lettered for crash-looping
	Duration  time.Duration // how long Open took to recover
	// Mode is the recovery mode Open ran with (Options.Recovery).
	Mode RecoveryMode
	// Damage describes what Open cut and where, in one line; it is "" if
	// nothing was cut. It names the kind, the segment file, offset and
	// batch, the reason, and how much was cut. The kind is "torn final
	// batch", "torn tail", "unsynced tail", or "damage" when Mode is
	// SkipToPointInTime.
	Damage string
	// CutBatches and CutRecords count the batches and records the cut
	// removed, as far as their headers could still be read.
	CutBatches, CutRecords int
	// BrokenFiles are the copies of the cut bytes Open kept in the log
	// directory (<segment>.<UTC time>.broken), in log order; nothing reads
	// them back: inspect, then delete them.
	BrokenFiles []string
}

// peekLimit bounds how many entries at the front of a tier's ring the
// oldest-pending look passes over that no longer name a pending message
// (one leased by its deadline, cancelled, requeued), so that Stats stays
// O(1) in the backlog.
const peekLimit = 64

// oldestReady is when the longest-waiting pending message became ready
// (0: none pending). It is found at the fronts of the queues rather than
// by a scan. A tier's ring and its spill queue are in the order their
// messages became ready, and a key's queue in the order its messages go
// back. A
// message that overtook others (its deadline) is never the oldest; one
// behind peekLimit stale entries is missed until those are popped.
func (e *Engine) oldestReady() int64 { return e.oldestReadyIn(nil) }

// oldestReadyIn is oldestReady of queue q (nil: every queue).
func (e *Engine) oldestReadyIn(q *queue) int64 {
	oldest := int64(0)
	consider := func(rf ref, st uint32) bool {
		r := e.slab.lookup(rf.slot)
		if r == nil || !r.own(rf.gen, st) {
			return false
		}
		at := r.at // Pending: when it became ready; Waiting: when due
		mine := q == nil || r.queue == q.num
		r.keep(e.counts, st)
		if mine && at != 0 && (oldest == 0 || at < oldest) {
			oldest = at
		}
		return true
	}
	runs := e.eachRun
	if q != nil {
		runs = func(fn func(*queueDelivery)) {
			if rt := q.rt.Load(); rt != nil {
				fn(rt)
			}
		}
	}
	runs(func(rt *queueDelivery) {
		for t := 0; t < ring.NumTiers; t++ {
			rt.tiers.Peek(t, peekLimit, func(rf ref) bool { return !consider(rf, stPending) })
			q := &rt.spill[t]
			q.mu.Lock()
			var rf ref
			spilled := q.head < len(q.refs)
			if spilled {
				rf = q.refs[q.head]
			}
			q.mu.Unlock()
			if spilled {
				consider(rf, stPending)
			}
		}
	})
	e.keys.m.Range(func(_, v any) bool {
		ks := v.(*keyState)
		ks.mu.Lock()
		var rf ref
		queued := len(ks.queue) > 0
		if queued {
			rf = ks.queue[0].rf
		}
		ks.mu.Unlock()
		if queued { // the record after the key's mutex: the lock order
			consider(rf, stWaiting)
		}
		return true
	})
	return oldest
}

// countWithDead reads the kept counts and the dead-letter counts into s
// while no message is moving between the slab and the dead-letter store
// (counters.go, moveWindow), so that each is counted once. It waits for
// the moves in flight, each a few instructions, and no longer. Both reads
// are lock-free (the store's counts are atomics), so that a Stats call
// never parks inside the read on the store's lock, to be woken by a
// dead-lettering's unlock onto the dead-lettering's processor; Dead is
// the sum of DeadByCategory, so the two always agree.
func (e *Engine) countWithDead(s *Stats, qs []*queue, qc []queueCounts) (c stateCounts) {
	var reviewed int
	e.ctr.moves.read(func() {
		c = e.counts.stateCounts()
		s.DeadByCategory = e.dead.Counts()
		reviewed = e.dead.Reviewed()
		for i, q := range qs {
			qc[i] = queueCounts{e.counts.queueStateCounts(q), e.dead.QueueLen(q.name)}
		}
	})
	s.Dead = 0
	for _, n := range s.DeadByCategory {
		s.Dead += n
	}
	s.UnreviewedDeadLetters = max(0, s.Dead-reviewed)
	return c
}

// Stats returns the engine's current counts and lifetime totals. The
// first call counts the engine's records once (O(MaxMessages)). From then
// on the counts by state are kept as messages move. The oldest pending
// message is found at the fronts of the queues. So a call's cost does not
// grow with the backlog: it grows with the keys and breakers it lists.
// Call it for monitoring, not per message. Safe for concurrent use, and
// usable after Close.
func (e *Engine) Stats() Stats {
	// The totals are read before the scan, freed before deadLettered. A
	// message that moves on meanwhile is then missed, not counted twice.
	// So the derived totals (Enqueued, Acked, Dequeued) may lag but never
	// lead, and the high-water marks in e.metrics keep them monotonic.
	freed := e.ctr.freed.Load()
	s := Stats{
		PendingByPriority:      make(map[Priority]int, ring.NumTiers),
		DelayedByPriority:      make(map[Priority]int, ring.NumTiers),
		LeasedByPriority:       make(map[Priority]int, ring.NumTiers),
		HeldByPriority:         make(map[Priority]int, ring.NumTiers),
		Enqueued:               e.enqueuedTotal(),
		Acked:                  0, // below: freed less dead-lettered
		Nacked:                 e.ctr.nacked.Load(),
		Retried:                e.ctr.retried.Load(),
		Expired:                e.ctr.expired.Load(),
		Dequeued:               0, // below: the sum of what became of each lease
		LeaseExpiries:          e.ctr.leaseExpiries.Load(),
		Duplicates:             e.ctr.duplicates.Load(),
		BackpressureWaits:      e.ctr.backpressure.Load(),
		Redriven:               e.ctr.redriven.Load(),
		MaxDeadLetters:         e.opts.MaxDeadLetters,
		DeadLettersEvicted:     e.ctr.deadEvicted.Load(),
		DeadLettersPurged:      e.ctr.deadPurged.Load(),
		DeadLettersReviewed:    e.ctr.deadReviewed.Load(),
		Requeued:               e.ctr.requeued.Load(),
		BreakerTrips:           e.breakers.Trips(),
		DeadLetteredByCategory: make(map[classify.Category]uint64),
		Wait:                   e.metrics.wait.latency(),
		Handling:               e.metrics.handling.latency(),
		EnqueueLatency:         e.metrics.enqueue.latency(),
		Recovery: RecoveryStats{
			Records: e.recovered.records, Bytes: e.recovered.bytes, TornBytes: e.recovered.tornBytes,
			Crashed: e.recovered.crashed, Poisoned: e.recovered.poisoned, Duration: e.recovered.duration,
			Mode: e.opts.Recovery,
		},
		Breakers: e.breakers.Keys(),
		Durable:  e.log != nil,
		Closed:   e.closed.Load(),
	}
	if s.Durable {
		s.WAL = e.metrics.walStats()
		ls := e.log.Stats()
		s.WAL.SinceCheckpoint, s.WAL.DiskBytes, s.WAL.Segments = ls.SinceCheckpoint, ls.DiskBytes, ls.Segments
		s.WAL.LastCheckpoint = ls.CheckpointTime
		if ls.Failed != nil {
			s.WAL.Failed = ls.Failed.Error()
		}
		// What Open cut: fixed once Open returned, read from the log.
		rep := e.log.Repair()
		s.Recovery.Damage = rep.String()
		s.Recovery.CutBatches, s.Recovery.CutRecords = rep.Batches, rep.Records
		s.Recovery.BrokenFiles = append([]string(nil), rep.BrokenFiles...)
	}
	requeuedLeased := e.ctr.requeuedLeased.Load()
	for _, cat := range classify.Categories() {
		if n := e.ctr.deadLettered[categoryIndex(cat)].Load(); n > 0 {
			s.DeadLetteredByCategory[cat] = n
			s.DeadLettered += n
		}
	}
	s.Cancelled = e.ctr.cancelled.Load()
	s.Published, s.UnroutedPublishes = e.ctr.published.Load(), e.ctr.unrouted.Load()
	s.Acked = ackedOf(freed, s.DeadLettered, s.Cancelled)
	e.counts.start(e.slab) // the first Stats counts once; the verbs keep it
	qs := e.queueList()
	qc := make([]queueCounts, len(qs))
	c := e.countWithDead(&s, qs, qc)
	s.Pending, s.Delayed, s.Leased, s.Held = c.byState[Pending], c.byState[Delayed], c.byState[Leased], c.byState[Held]
	for t := 0; t < ring.NumTiers; t++ {
		p := priorityOfTier(t)
		s.PendingByPriority[p] = c.byTier[Pending][t]
		s.DelayedByPriority[p] = c.byTier[Delayed][t]
		s.LeasedByPriority[p] = c.byTier[Leased][t]
		s.HeldByPriority[p] = c.byTier[Held][t]
	}
	s.WaitingByReason = make(map[WaitReason]int)
	for why, n := range c.waiting {
		if n > 0 {
			s.WaitingByReason[WaitReason(why)] = n
			s.Waiting += n
		}
	}
	s.Keys = withBreakers(e.keyStats(), s.Breakers)
	s.DeliveryPaused = e.deliveryPaused(e.preciseNow())
	s.Dequeued = s.Acked + s.Nacked + s.LeaseExpiries + requeuedLeased + e.ctr.cancelledLeased.Load() + uint64(s.Leased)
	// The ID counter (nextID) counts an ID from its claim. But a claim
	// that turns out a repeat (or collides, or fails to log) is counted
	// unused only after. Read meanwhile, Enqueued would lead by it, and the
	// high-water mark would keep the lead for good. Every enqueued message is live or
	// has left the slab (freed, read before the scan). Less those that came
	// in without an ID of their own (recovered, redriven: added, read after
	// the scan), that bound never leads, and at rest it is exact.
	live := int64(s.Pending + s.Delayed + s.Leased + s.Held)
	if bound := int64(freed) + live - e.ctr.added.Load(); bound >= 0 && uint64(bound) < s.Enqueued {
		s.Enqueued = uint64(bound)
	}
	s.Enqueued = e.metrics.enqueued.atLeast(s.Enqueued)
	s.Acked = e.metrics.acked.atLeast(s.Acked)
	s.Dequeued = e.metrics.dequeued.atLeast(s.Dequeued)
	if oldest := e.oldestReady(); oldest != 0 {
		// The clock itself: a scrape must not wake an idle engine's cache.
		if age := time.Duration(e.preciseNow() - oldest); age > 0 {
			s.OldestPending = age
		}
	}
	for t := 0; t < ring.NumTiers; t++ {
		s.TierUtilization[t] = float64(e.defaultDelivery.tiers.LenOf(t)) / float64(e.defaultDelivery.tiers.Cap(t))
	}
	e.queuesStats(&s, qs, qc)
	return s
}

// enqueuedTotal is the messages enqueued since Open: the IDs given out,
// less those a claim took and gave back unused (a repeat, a failed log).
func (e *Engine) enqueuedTotal() uint64 {
	return e.nextID.Load() - e.ctr.enqueuedBase - e.ctr.unused.Load()
}

// ackedOf derives the acked total: every freed record was acked unless it
// was dead-lettered or cancelled. Read freed first: what moves on
// meanwhile is then missed, never counted twice.
func ackedOf(freed, deadLettered, cancelled uint64) uint64 {
	if gone := deadLettered + cancelled; freed > gone {
		return freed - gone
	}
	return 0
}

// TierUtilizationOf is the fill ratio of priority p's tier ring
// (TierUtilization, which is indexed Critical first).
func (s *Stats) TierUtilizationOf(p Priority) float64 {
	if p < Background || p > Critical {
		return 0
	}
	return s.TierUtilization[p.tier()]
}

// withBreakers sets each key's Breaker from brs and adds the keys whose
// only state worth a look is their breaker (not closed, or failing);
// both lists are sorted by key. A closed breaker without failures adds
// no key: every key that was ever sent to has one.
func withBreakers(keys []KeyStats, brs []breaker.KeyState) []KeyStats {
	if len(brs) == 0 {
		return keys
	}
	out := make([]KeyStats, 0, max(len(keys), len(brs)))
	i := 0
	for _, b := range brs {
		for i < len(keys) && keys[i].Key < b.Key {
			out = append(out, keys[i])
			i++
		}
		if i < len(keys) && keys[i].Key == b.Key {
			k := keys[i]
			k.Breaker = b
			out = append(out, k)
			i++
			continue
		}
		if b.State != breaker.Closed || b.ConsecutiveFailures > 0 {
			out = append(out, KeyStats{Key: b.Key, Breaker: b})
		}
	}
	return append(out, keys[i:]...)
}
