package ringwal

import (
	"time"
)

// QueueStats are one queue's counts (Queue.Stats, Stats.Queues): its
// messages by state, its dead letters, its lifetime totals and the age of
// its longest-waiting pending message.
type QueueStats struct {
	Name                                 string
	Pending, Delayed, Leased, Held, Dead int
	// Enqueued, Acked and DeadLettered count since Open, as Stats' totals
	// do; the default queue's are the engine's less the named queues'.
	Enqueued, Acked, DeadLettered uint64
	OldestPending                 time.Duration
}

// Stats returns the queue's counts. Its cost grows with the queue's
// backlog's front, not the backlog; the default queue's is the engine's
// Stats (its totals are derived from the engine's). It does not declare
// the queue (an undeclared one reads as empty). Safe for concurrent use.
func (q *Queue) Stats() QueueStats {
	r, err := q.e.queueNamed(q.name, false)
	if err != nil {
		return QueueStats{Name: q.name}
	}
	e := q.e
	if r.num == 0 {
		// The default queue's totals are the engine's less the named ones':
		// the engine's Stats reads them all.
		return e.Stats().Queues[0]
	}
	e.counts.start(e.slab)
	return e.queueStats(r)
}

// queueStats reads named queue q's counts (for the default queue, only
// what needs no engine totals); counting must be on (counts.start).
func (e *Engine) queueStats(q *queue) QueueStats {
	var qc queueCounts
	e.ctr.moves.read(func() {
		qc = queueCounts{e.counts.queueStateCounts(q), e.dead.QueueLen(q.name)}
	})
	return e.queueStatsOf(q, qc)
}

// queueCounts are a queue's counts read in the move window: its messages
// by state and its dead letters.
type queueCounts struct {
	c    stateCounts
	dead int
}

// queueStatsOf builds q's QueueStats from its counts.
func (e *Engine) queueStatsOf(q *queue, qc queueCounts) QueueStats {
	c, dead := qc.c, qc.dead
	s := QueueStats{
		Name: q.name, Pending: c.byState[Pending], Delayed: c.byState[Delayed], Leased: c.byState[Leased],
		Held: c.byState[Held], Dead: dead,
		Enqueued: q.enqueued.Load(), Acked: q.acked.Load(), DeadLettered: q.deadLettered.Load(),
	}
	if oldest := e.oldestReadyIn(q); oldest != 0 {
		if age := time.Duration(e.preciseNow() - oldest); age > 0 {
			s.OldestPending = age
		}
	}
	return s
}

// goneTotals is what deleted queues enqueued, acked and dead-lettered:
// the engine's totals still hold it, and the default queue's, derived as
// the engine's less the named queues', must not.
func (e *Engine) goneTotals() QueueStats {
	e.queues.mu.Lock()
	defer e.queues.mu.Unlock()
	g := e.queues.gone
	return QueueStats{Enqueued: g.Enqueued, Acked: g.Acked, DeadLettered: g.DeadLettered}
}

// queuesStats fills s.Queues: every declared queue, the default first,
// then by name; the default queue's totals are the engine's less the
// named queues' (deleted ones' included). The engine's were read first
// (Stats), the named ones' after, so the difference may lag but never
// lead, and high-water marks keep it from going back.
func (e *Engine) queuesStats(s *Stats, queues []*queue, counts []queueCounts) {
	named := e.goneTotals()
	for i, q := range queues {
		qs := e.queueStatsOf(q, counts[i])
		if q.num != 0 {
			named.Enqueued += qs.Enqueued
			named.Acked += qs.Acked
			named.DeadLettered += qs.DeadLettered
		}
		s.Queues = append(s.Queues, qs)
	}
	d := &s.Queues[0]
	d.Enqueued = e.metrics.q0Enqueued.atLeast(s.Enqueued - min(s.Enqueued, named.Enqueued))
	d.Acked = e.metrics.q0Acked.atLeast(s.Acked - min(s.Acked, named.Acked))
	d.DeadLettered = e.metrics.q0DeadLettered.atLeast(s.DeadLettered - min(s.DeadLettered, named.DeadLettered))
}
