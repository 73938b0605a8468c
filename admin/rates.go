package admin

// The overview's rates: a small ring of Stats samples, taken when the
// overview is requested (by a visitor or its refresh script), at most one
// a second, from which the rates over the last minute are the difference
// of two samples.

import (
	"sync"
	"time"

	"github.com/ringwal/ringwal"
)

// Sampling bounds: samples closer than sampleEvery replace nothing (the
// first is kept), and the ring holds enough of them to span rateWindow.
const (
	sampleEvery = time.Second
	rateWindow  = time.Minute
	sampleRing  = 128
)

// sample is the lifetime totals of one Stats.
type sample struct {
	at                                               time.Time
	enqueued, dequeued, acked, nacked, retried, dead uint64
}

// sampler is a ring of samples, safe for concurrent use.
type sampler struct {
	mu   sync.Mutex
	ring [sampleRing]sample
	n    int // samples held
	next int // where the next one goes

	// The queues' samples (rates_queues.go), under mu too.
	qring     [queueRing]queueSample
	qn, qnext int
}

// add records s taken at at, unless the last sample is less than
// sampleEvery old.
func (sm *sampler) add(at time.Time, s ringwal.Stats) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	if sm.n > 0 {
		last := sm.ring[(sm.next+sampleRing-1)%sampleRing]
		if at.Sub(last.at) < sampleEvery && !at.Before(last.at) {
			return
		}
	}
	sm.ring[sm.next] = sample{at: at, enqueued: s.Enqueued, dequeued: s.Dequeued, acked: s.Acked,
		nacked: s.Nacked, retried: s.Retried, dead: s.DeadLettered}
	sm.next = (sm.next + 1) % sampleRing
	sm.n = min(sm.n+1, sampleRing)
}

// rate is one counter's rate per second.
type rate struct {
	Name      string
	PerSecond float64
}

// rates returns the rates between the newest sample and the oldest one
// within rateWindow of it, and the span they cover; ok is false while
// the samples span less than sampleEvery (a first visit).
func (sm *sampler) rates() (rs []rate, span time.Duration, ok bool) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	newest, oldest, span, ok := window(sm.ring[:], sm.next, sm.n, func(s sample) time.Time { return s.at })
	if !ok {
		return nil, span, false
	}
	per := perSecond(span)
	return []rate{
		{"enqueued", per(newest.enqueued, oldest.enqueued)},
		{"delivered", per(newest.dequeued, oldest.dequeued)},
		{"acked", per(newest.acked, oldest.acked)},
		{"nacked", per(newest.nacked, oldest.nacked)},
		{"retried", per(newest.retried, oldest.retried)},
		{"dead-lettered", per(newest.dead, oldest.dead)},
	}, span, true
}

// window finds, in a ring of samples (next: where the next one goes; n:
// how many it holds), the newest sample and the oldest one within
// rateWindow of it, and the span between them; ok is false while there
// are fewer than two, or they span less than sampleEvery (a first visit).
func window[S any](ring []S, next, n int, at func(S) time.Time) (newest, oldest S, span time.Duration, ok bool) {
	if n < 2 {
		return newest, oldest, 0, false
	}
	size := len(ring)
	newest = ring[(next+size-1)%size]
	oldest = newest
	for i := 2; i <= n; i++ {
		s := ring[(next+size-i)%size]
		if at(newest).Sub(at(s)) > rateWindow || at(s).After(at(oldest)) {
			break
		}
		oldest = s
	}
	span = at(newest).Sub(at(oldest))
	return newest, oldest, span, span >= sampleEvery
}

// perSecond turns the growth of a counter over span into a rate (a
// counter that went back, after a restart, counts as 0).
func perSecond(span time.Duration) func(now, then uint64) float64 {
	return func(now, then uint64) float64 {
		if now < then {
			return 0
		}
		return float64(now-then) / span.Seconds()
	}
}
