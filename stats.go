package ringwal

import (
	"time"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/ring"
)

// Stats is a snapshot of an engine's counts and totals.
type Stats struct {
	// Current counts by state.
	Pending, Delayed, Leased, Held, Dead int
	// PendingByPriority counts pending messages per priority.
	PendingByPriority map[Priority]int
	// DeadByCategory counts dead letters per category.
	DeadByCategory map[classify.Category]int

	// Lifetime totals since Open.
	Enqueued, Acked, Nacked, Retried, DeadLettered, Expired uint64
	Dequeued, LeaseExpiries, Duplicates, BackpressureWaits  uint64
	Redriven, Requeued, BreakerTrips                        uint64
	// DeadLetteredByCategory splits DeadLettered.
	DeadLetteredByCategory map[classify.Category]uint64

	// Wait is the time from ready to dequeue, Handling from dequeue to
	// ack or nack, over the engine's life (histogram estimates).
	Wait, Handling Latency
	// OldestPending is the age of the longest-waiting pending message.
	OldestPending time.Duration
	// TierUtilization is each tier ring's fill ratio, Critical first.
	TierUtilization [ring.NumTiers]float64
	// Recovery describes what Open replayed.
	Recovery RecoveryStats
}

// Latency summarises a latency distribution.
type Latency struct {
	Count               uint64
	Mean, P50, P95, P99 time.Duration
}

// RecoveryStats describes the replay Open did.
type RecoveryStats struct {
	Records   uint64
	Bytes     int64
	TornBytes int64
	Crashed   int // messages leased at a crash, requeued
	Poisoned  int // of those, dead-lettered for crash-looping
	Duration  time.Duration
}

// stateCounts is one scan of the slab: counts by state and tier, and the
// oldest pending message. It reads only atomics, so it is safe alongside
// every other operation; counts are a moment's snapshot.
type stateCounts struct {
	byState       [stHeld + 1]int
	pendingByTier [ring.NumTiers]int
	oldestReady   int64
}

func (e *Engine) scan() stateCounts {
	var c stateCounts
	for i := range e.slab.slots {
		r := &e.slab.slots[i]
		st := wordState(r.word.Load())
		switch st {
		case stFree, stBusy:
			continue
		case stCommitting:
			st = stPending
		}
		c.byState[st]++
		if st == stPending {
			if t := r.tier.Load(); t < ring.NumTiers {
				c.pendingByTier[t]++
			}
			if w, ok := r.acquireAny(1 << stPending); ok {
				if at := r.readyAt; at != 0 && (c.oldestReady == 0 || at < c.oldestReady) {
					c.oldestReady = at
				}
				r.word.Store(w)
			}
		}
	}
	return c
}

// Stats returns the engine's current counts and lifetime totals. It scans
// the engine's records (O(MaxMessages)), so call it for monitoring, not
// per message. Safe for concurrent use.
func (e *Engine) Stats() Stats {
	c := e.scan()
	s := Stats{
		Pending:                c.byState[stPending],
		Delayed:                c.byState[stDelayed],
		Leased:                 c.byState[stLeased],
		Held:                   c.byState[stHeld],
		Dead:                   e.dead.Len(),
		PendingByPriority:      make(map[Priority]int, ring.NumTiers),
		DeadByCategory:         e.dead.Counts(),
		Enqueued:               e.nextID.Load() - e.ctr.enqueuedBase - e.ctr.unused.Load(),
		Acked:                  0, // below: freed less dead-lettered
		Nacked:                 e.ctr.nacked.Load(),
		Retried:                e.ctr.retried.Load(),
		Expired:                e.ctr.expired.Load(),
		Dequeued:               0, // below: the sum of what became of each lease
		LeaseExpiries:          e.ctr.leaseExpiries.Load(),
		Duplicates:             e.ctr.duplicates.Load(),
		BackpressureWaits:      e.ctr.backpressure.Load(),
		Redriven:               e.ctr.redriven.Load(),
		Requeued:               e.ctr.requeued.Load(),
		BreakerTrips:           e.breakers.Trips(),
		DeadLetteredByCategory: make(map[classify.Category]uint64),
		Wait:                   e.metrics.wait.latency(),
		Handling:               e.metrics.handling.latency(),
		Recovery: RecoveryStats{
			Records: e.recovered.records, Bytes: e.recovered.bytes, TornBytes: e.recovered.tornBytes,
			Crashed: e.recovered.crashed, Poisoned: e.recovered.poisoned, Duration: e.recovered.duration,
		},
	}
	for t, n := range c.pendingByTier {
		s.PendingByPriority[priorityOfTier(t)] = n
	}
	for _, cat := range classify.Categories() {
		if n := e.ctr.deadLettered[categoryIndex(cat)].Load(); n > 0 {
			s.DeadLetteredByCategory[cat] = n
			s.DeadLettered += n
		}
	}
	if freed := e.ctr.freed.Load(); freed > s.DeadLettered {
		s.Acked = freed - s.DeadLettered
	}
	s.Dequeued = s.Acked + s.Nacked + s.LeaseExpiries + e.ctr.requeuedLeased.Load() + uint64(s.Leased)
	if c.oldestReady != 0 {
		if age := time.Duration(e.now() - c.oldestReady); age > 0 {
			s.OldestPending = age
		}
	}
	for t := 0; t < ring.NumTiers; t++ {
		rg := e.tiers.Tier(t)
		s.TierUtilization[t] = float64(rg.Len()) / float64(rg.Cap())
	}
	return s
}
