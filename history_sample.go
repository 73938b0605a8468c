package ringwal

import (
	"sync"
	"time"
)

// history is Engine.History's samples (history.go) and what its sampler
// remembers between samples. The sampler runs on the timer goroutine
// only (maintain); readers take the series' and mu's locks.
type history struct {
	epoch  time.Time // the engine's Open: point times count from it
	next   int64     // unix ns: when the next sample ends
	engine series

	mu     sync.Mutex
	queues map[string]*series // "" is the default queue

	// What the previous sample read (the sampler's own).
	prev      totals
	prevQueue map[string]totals
	prevWait  [latencyBuckets]uint64
}

// totals are the monotonic counts a sample takes differences of.
type totals struct {
	enqueued, acked, deadLettered, retried uint64
	byCategory                             [numCategories]uint64
}

func (t *history) init(now time.Time) {
	t.epoch = now
	t.next = now.Add(sampleEvery).UnixNano()
	t.queues = map[string]*series{"": {}}
	t.prevQueue = map[string]totals{}
}

// sampleHistory takes the samples that are due at now: one per
// sampleEvery, the last one's end at or before now. A long gap (a process
// stopped in a debugger, a fake clock moved by hours) gives one sample
// for the last interval, not one per interval missed. Timer goroutine.
func (e *Engine) sampleHistory(now int64) {
	t := &e.history
	if now < t.next {
		return
	}
	end := t.next
	if gap := (now - end) / int64(sampleEvery); gap > 0 {
		end += gap * int64(sampleEvery)
	}
	t.next = end + int64(sampleEvery)
	start := uint32(max(0, time.Duration(end-t.epoch.UnixNano())/time.Second-sampleEvery/time.Second))

	p, queues := e.readSample()
	p.start = start
	counts, total, _ := e.metrics.wait.snapshot()
	var waited [latencyBuckets]uint64
	var n uint64
	for i := range counts {
		waited[i] = counts[i] - t.prevWait[i]
		n += waited[i]
	}
	t.prevWait = counts
	if n > 0 && total > 0 {
		p.waitP95us = sat32(uint64(quantileOf(&waited, n, 0.95) / time.Microsecond))
	}
	t.engine.push(p.point(&t.prev, true))
	for _, q := range queues {
		s := e.queueSeries(q.name)
		if s == nil {
			continue
		}
		prev := t.prevQueue[q.name]
		q.start = start
		s.push(q.point(&prev, false))
		t.prevQueue[q.name] = prev
	}
}

// reading is what one sample read: totals and the counts at its end.
type reading struct {
	name                                       string
	totals                                     totals
	live, dead, pending, delayed, leased, held int
	counted                                    bool
	start, waitP95us                           uint32
}

// point turns r into a sample, prev's differences, and moves prev on.
func (r *reading) point(prev *totals, engine bool) point {
	d := func(now, before uint64) uint32 {
		if now < before {
			return 0
		}
		return sat32(now - before)
	}
	p := point{
		start: r.start, waitP95us: r.waitP95us,
		enqueued: d(r.totals.enqueued, prev.enqueued), acked: d(r.totals.acked, prev.acked),
		deadLettered: d(r.totals.deadLettered, prev.deadLettered), retried: d(r.totals.retried, prev.retried),
		live: sat32(r.live), dead: sat32(r.dead), counted: r.counted,
	}
	if r.counted {
		p.pending, p.delayed, p.leased, p.held = sat32(r.pending), sat32(r.delayed), sat32(r.leased), sat32(r.held)
	}
	if engine {
		for i := range p.byCategory {
			p.byCategory[i] = uint16(min(d(r.totals.byCategory[i], prev.byCategory[i]), 1<<16-1))
		}
	}
	*prev = r.totals
	return p
}

// readSample reads the engine's totals and counts, and each queue's.
// With counting on (somebody asked for Stats) it is Stats; without, it
// reads only what the verbs keep anyway, so that history never turns
// the hot path's counting on.
func (e *Engine) readSample() (reading, []reading) {
	if e.counts.complete.Load() {
		s := e.Stats()
		r := reading{
			totals: totals{enqueued: s.Enqueued, acked: s.Acked, deadLettered: s.DeadLettered, retried: s.Retried},
			live:   s.Pending + s.Delayed + s.Leased + s.Held, dead: s.Dead,
			pending: s.Pending, delayed: s.Delayed, leased: s.Leased, held: s.Held, counted: true,
		}
		for cat, n := range s.DeadLetteredByCategory {
			r.totals.byCategory[categoryIndex(cat)] = n
		}
		qs := make([]reading, len(s.Queues))
		for i, q := range s.Queues {
			qs[i] = reading{name: q.Name,
				totals: totals{enqueued: q.Enqueued, acked: q.Acked, deadLettered: q.DeadLettered},
				live:   q.Pending + q.Delayed + q.Leased + q.Held, dead: q.Dead,
				pending: q.Pending, delayed: q.Delayed, leased: q.Leased, held: q.Held, counted: true,
			}
		}
		return r, qs
	}
	var r reading
	freed := e.ctr.freed.Load()
	r.totals.enqueued = e.enqueuedTotal()
	for i := range r.totals.byCategory {
		r.totals.byCategory[i] = e.ctr.deadLettered[i].Load()
		r.totals.deadLettered += r.totals.byCategory[i]
	}
	r.totals.acked = ackedOf(freed, r.totals.deadLettered, e.ctr.cancelled.Load())
	r.totals.retried = e.ctr.retried.Load()
	r.live = max(0, int(int64(r.totals.enqueued)+e.ctr.added.Load()-int64(freed)))
	r.dead = e.dead.Len()
	// Named queues from their own counters; the default queue is the rest
	// (deleted queues' totals included in what is taken away, as Stats
	// does).
	qs := []reading{{name: "", totals: r.totals, live: r.live, dead: r.dead}}
	qs[0].totals.retried = 0
	g := e.goneTotals()
	qs[0].totals.less(g.Enqueued, g.Acked, g.DeadLettered)
	e.eachQueue(func(q *queue) {
		if q.num == 0 {
			return
		}
		qr := reading{name: q.name, live: int(q.live.Load()), dead: e.dead.QueueLen(q.name),
			totals: totals{enqueued: q.enqueued.Load(), acked: q.acked.Load(), deadLettered: q.deadLettered.Load()}}
		d := &qs[0]
		d.totals.less(qr.totals.enqueued, qr.totals.acked, qr.totals.deadLettered)
		d.live, d.dead = max(0, d.live-qr.live), max(0, d.dead-qr.dead)
		qs = append(qs, qr)
	})
	return r, qs
}

// less takes another queue's totals away, never below zero.
func (t *totals) less(enqueued, acked, deadLettered uint64) {
	t.enqueued -= min(t.enqueued, enqueued)
	t.acked -= min(t.acked, acked)
	t.deadLettered -= min(t.deadLettered, deadLettered)
}

// queueSeries returns the named queue's history, made on its first
// sample while fewer than maxQueueTimelines named queues have one; nil
// past that. A deleted queue's history stays (a queue declared again
// under its name goes on with it).
func (e *Engine) queueSeries(name string) *series {
	t := &e.history
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.queues[name]; ok {
		return s
	}
	if len(t.queues)-1 >= maxQueueTimelines {
		return nil
	}
	s := &series{}
	t.queues[name] = s
	return s
}
