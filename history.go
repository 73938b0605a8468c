package ringwal

import (
	"sync"
	"time"

	"github.com/ringwal/ringwal/classify"
)

// This file owns the engine's history: per-interval samples of its
// counters. A series costs 68 bytes a point, at most 354 points, about
// 23 KiB. There is a series for the engine, the default queue and up to
// 16 named queues. The housekeeper's maintenance pass takes the samples;
// they have no goroutine of their own. So an operator who opens the
// console after an incident sees what happened. Three resolutions, each a
// ring: 10 s samples for the last 15 minutes, 1 min for 2 hours, 10 min
// for a day. Each coarser sample is made of the finer ones as they age.
//
// The counts by state (Pending, Held, ...) are kept by the verbs only once
// somebody asked for Stats; until then the hot path pays nothing for them
// (counts.go). So a sample carries them only from then on
// (HistorySample.Counted). A Prometheus scrape, the console or the admin
// API all ask. The rest (the totals, live and dead messages, wait times)
// is always there.

// HistorySample is one interval of the engine's (or a queue's) history.
type HistorySample struct {
	// Start and Length delimit the interval.
	Start  time.Time
	Length time.Duration
	// Enqueued, Acked, DeadLettered and Retried count what happened in
	// the interval (a queue's samples carry no Retried).
	Enqueued, Acked, DeadLettered, Retried uint64
	// DeadLetteredByCategory splits DeadLettered (the engine's samples),
	// each category counting at most 65,535 a sample: past that, during
	// a storm of more than ~109 dead letters a second in a 10-minute
	// sample, the split no longer adds up to DeadLettered.
	DeadLetteredByCategory map[classify.Category]uint64
	// Live and Dead are the live messages and the dead letters at the
	// interval's end.
	Live, Dead int
	// Counted reports that the counts by state below were kept (see the
	// file's comment); they are those at the interval's end.
	Counted                        bool
	Pending, Delayed, Leased, Held int
	// WaitP95 estimates the 95th percentile of the wait (ready to
	// dequeue) of the messages dequeued in the interval, of those
	// measured (one in 64); 0 when none was. A coarse sample keeps the
	// highest of its parts'.
	WaitP95 time.Duration
}

// History returns the engine's samples, oldest first: the day's 10-minute
// samples older than the 1-minute ones, those older than the 10-second
// ones, then those. It is empty for an engine open less than 10 seconds.
// Safe for concurrent use.
func (e *Engine) History() []HistorySample {
	return e.history.engine.samples(e.history.epoch)
}

// QueueHistory returns the samples of the named queue ("" for the
// default queue), as History does. Only the first maxQueueTimelines
// named queues (by name, among those declared when a sample is taken)
// are followed (and the
// default queue), a queue keeping its history once it has one;
// another has no history (nil). Safe for concurrent use.
func (e *Engine) QueueHistory(name string) []HistorySample {
	t := &e.history
	t.mu.Lock()
	s := t.queues[name]
	t.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.samples(t.epoch)
}

const (
	// sampleEvery is the finest resolution.
	sampleEvery = 10 * time.Second
	// maxQueueTimelines bounds the named queues followed.
	maxQueueTimelines = 16
)

// resolutions: each level's sample length and how many it keeps; a
// level's samples are made of whole samples of the level before.
var resolutions = [...]struct {
	every time.Duration
	keep  int
}{{sampleEvery, 90}, {time.Minute, 120}, {10 * time.Minute, 144}}

// point is a sample as kept: 4-byte fields, times in seconds since the
// engine opened (136 years of them).
type point struct {
	start                                      uint32 // seconds since epoch
	enqueued, acked, deadLettered, retried     uint32
	live, dead, pending, delayed, leased, held uint32
	waitP95us                                  uint32
	counted                                    bool
	byCategory                                 [numCategories]uint16 // the engine's only; saturates
}

// add folds a later sample b into p (a coarser sample made of both).
func (p *point) add(b *point) {
	p.enqueued = satAdd(p.enqueued, b.enqueued)
	p.acked = satAdd(p.acked, b.acked)
	p.deadLettered = satAdd(p.deadLettered, b.deadLettered)
	p.retried = satAdd(p.retried, b.retried)
	for i := range p.byCategory {
		p.byCategory[i] = uint16(min(uint32(p.byCategory[i])+uint32(b.byCategory[i]), 1<<16-1))
	}
	p.live, p.dead, p.counted = b.live, b.dead, b.counted
	p.pending, p.delayed, p.leased, p.held = b.pending, b.delayed, b.leased, b.held
	p.waitP95us = max(p.waitP95us, b.waitP95us)
}

func satAdd(a, b uint32) uint32 {
	if s := a + b; s >= a {
		return s
	}
	return 1<<32 - 1
}

func sat32[T int | uint64](v T) uint32 {
	if v < 0 {
		return 0
	}
	if uint64(v) > 1<<32-1 {
		return 1<<32 - 1
	}
	return uint32(v)
}

// series is one history (the engine's or a queue's): a ring per level.
// Its lock is taken by the sampler once per sample and by readers.
type series struct {
	mu     sync.Mutex
	levels [len(resolutions)]struct {
		ring    []point
		n, head int   // head: where the next goes
		pending point // the coarser sample being made of finer ones
		parts   int   // how many finer ones it holds
	}
}

// push adds a finest-level sample and folds aged ones into coarser levels.
func (s *series) push(p point) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pushAt(0, p)
}

func (s *series) pushAt(lv int, p point) {
	l := &s.levels[lv]
	if l.ring == nil {
		l.ring = make([]point, resolutions[lv].keep)
	}
	l.ring[l.head] = p
	l.head = (l.head + 1) % len(l.ring)
	l.n = min(l.n+1, len(l.ring))
	if lv+1 == len(s.levels) {
		return
	}
	// Every sample also goes into the next level's sample in the making,
	// which is pushed once it spans that level's length.
	up := &s.levels[lv+1]
	if up.parts == 0 {
		up.pending = p
	} else {
		up.pending.add(&p)
	}
	up.parts++
	if up.parts == int(resolutions[lv+1].every/resolutions[lv].every) {
		next := up.pending
		up.parts = 0
		s.pushAt(lv+1, next)
	}
}

// samples returns the history, oldest first, each level from where the
// finer one's starts no more.
func (s *series) samples(epoch time.Time) []HistorySample {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []HistorySample
	until := uint32(1<<32 - 1) // the start of what finer levels cover
	// Finest first to learn what each covers, then emit coarsest first.
	var covered [len(resolutions)]uint32
	for lv := range s.levels {
		l := &s.levels[lv]
		covered[lv] = until
		if l.n > 0 {
			oldest := l.ring[(l.head-l.n+len(l.ring))%len(l.ring)]
			until = min(until, oldest.start)
		}
	}
	for lv := len(s.levels) - 1; lv >= 0; lv-- {
		l := &s.levels[lv]
		for i := l.n; i > 0; i-- {
			p := &l.ring[(l.head-i+len(l.ring))%len(l.ring)]
			if p.start >= covered[lv] {
				continue // a finer level has this stretch
			}
			out = append(out, p.sample(epoch, resolutions[lv].every))
		}
	}
	return out
}

func (p *point) sample(epoch time.Time, length time.Duration) HistorySample {
	h := HistorySample{
		Start: epoch.Add(time.Duration(p.start) * time.Second), Length: length,
		Enqueued: uint64(p.enqueued), Acked: uint64(p.acked), DeadLettered: uint64(p.deadLettered), Retried: uint64(p.retried),
		Live: int(p.live), Dead: int(p.dead), Counted: p.counted,
		WaitP95: time.Duration(p.waitP95us) * time.Microsecond,
	}
	if h.Counted {
		h.Pending, h.Delayed, h.Leased, h.Held = int(p.pending), int(p.delayed), int(p.leased), int(p.held)
	}
	for i, n := range p.byCategory {
		if n > 0 {
			if h.DeadLetteredByCategory == nil {
				h.DeadLetteredByCategory = make(map[classify.Category]uint64)
			}
			h.DeadLetteredByCategory[classify.Category(i)] = uint64(n)
		}
	}
	return h
}
