package admin

// The queues page's rates of the queues the engine keeps no history of
// (Engine.QueueHistory follows the default queue and the first 16 named
// queues; the others' rates come from here): a small ring of samples of
// every queue's totals (enqueued, acked, dead-lettered), taken from the
// Stats of the overview and of the queues page when they are requested,
// from which a rate over the last minute is the difference of two
// samples. A sample holds a map of up to maxRateQueues queues.

import (
	"sync"
	"time"

	"github.com/ringwal/ringwal"
)

// Queue sampling bounds: queueSampleEvery apart at least, queueRing of
// them (enough to span rateWindow), of at most maxRateQueues queues each
// (the first in Stats.Queues' order: the default queue, then by name);
// queues past that show no rate.
const (
	rateWindow       = time.Minute
	queueSampleEvery = 5 * time.Second
	queueRing        = 16
	maxRateQueues    = 1000
)

// sampler is a ring of queue samples, safe for concurrent use.
type sampler struct {
	mu        sync.Mutex
	qring     [queueRing]queueSample
	qn, qnext int // samples held; where the next one goes
}

// queueTotals are one queue's totals in a sample.
type queueTotals struct{ enqueued, acked, dead uint64 }

// queueSample is every queue's totals at one time.
type queueSample struct {
	at     time.Time
	queues map[string]queueTotals
}

// queueRate is one queue's rates per second.
type queueRate struct {
	Enqueued, Acked, DeadLettered float64
}

// addQueues records s's queue totals taken at at, unless the last queue
// sample is less than queueSampleEvery old (the first of a burst is
// kept).
func (sm *sampler) addQueues(at time.Time, s ringwal.Stats) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	if sm.qn > 0 {
		last := sm.qring[(sm.qnext+queueRing-1)%queueRing]
		if at.Sub(last.at) < queueSampleEvery && !at.Before(last.at) {
			return
		}
	}
	m := make(map[string]queueTotals, min(len(s.Queues), maxRateQueues))
	for _, q := range s.Queues[:min(len(s.Queues), maxRateQueues)] {
		m[q.Name] = queueTotals{q.Enqueued, q.Acked, q.DeadLettered}
	}
	sm.qring[sm.qnext] = queueSample{at: at, queues: m}
	sm.qnext = (sm.qnext + 1) % queueRing
	sm.qn = min(sm.qn+1, queueRing)
}

// queueRates returns each sampled queue's rates (by engine name) between
// the newest queue sample and the oldest one within rateWindow of it,
// and the span they cover; ok is false while the samples span less than
// a second. A queue missing from the older sample (declared since)
// counts from zero.
func (sm *sampler) queueRates() (rs map[string]queueRate, span time.Duration, ok bool) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	newest, oldest, span, ok := window(sm.qring[:], sm.qnext, sm.qn, func(s queueSample) time.Time { return s.at })
	if !ok {
		return nil, span, false
	}
	per := growthPerSecond(span)
	rs = make(map[string]queueRate, len(newest.queues))
	for name, n := range newest.queues {
		o := oldest.queues[name]
		rs[name] = queueRate{Enqueued: per(n.enqueued, o.enqueued), Acked: per(n.acked, o.acked),
			DeadLettered: per(n.dead, o.dead)}
	}
	return rs, span, true
}

// window finds, in a ring of samples (next: where the next one goes; n:
// how many it holds), the newest sample and the oldest one within
// rateWindow of it, and the span between them; ok is false while there
// are fewer than two, or they span less than a second (a first visit).
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
	return newest, oldest, span, span >= time.Second
}

// growthPerSecond turns the growth of a counter over span into a rate (a
// counter that went back, after a restart, counts as 0).
func growthPerSecond(span time.Duration) func(now, then uint64) float64 {
	return func(now, then uint64) float64 {
		if now < then {
			return 0
		}
		return float64(now-then) / span.Seconds()
	}
}
