package admin

// The queues page's rates of the queues the engine keeps no history of.
// Engine.QueueHistory follows the default queue and the first 16 named
// queues; the others' rates come from here. This is a small ring of
// samples of every queue's totals: enqueued, acked, dead-lettered. The
// samples are taken from the Stats of the overview and of the queues
// page, when those are requested. A rate over the last minute is the
// difference of two samples. A sample holds a map of up to maxRateQueues
// queues.

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
	mu      sync.Mutex
	ring    [queueRing]queueSample
	n, next int // samples held; where the next one goes
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
	if sm.n > 0 {
		last := sm.ring[(sm.next+queueRing-1)%queueRing]
		if at.Sub(last.at) < queueSampleEvery && !at.Before(last.at) {
			return
		}
	}
	m := make(map[string]queueTotals, min(len(s.Queues), maxRateQueues))
	for _, q := range s.Queues[:min(len(s.Queues), maxRateQueues)] {
		m[q.Name] = queueTotals{q.Enqueued, q.Acked, q.DeadLettered}
	}
	sm.ring[sm.next] = queueSample{at: at, queues: m}
	sm.next = (sm.next + 1) % queueRing
	sm.n = min(sm.n+1, queueRing)
}

// queueRates returns each sampled queue's rates, by engine name, and the
// span they cover. The rates are between the newest queue sample and the
// oldest one within rateWindow of it. ok is false while there are fewer
// than two samples, or they span less than a second, as on a first
// visit. A queue missing from the older sample was declared since; it
// counts from zero. A counter that went back reads 0: its queue was
// deleted and declared again.
func (sm *sampler) queueRates() (rs map[string]queueRate, span time.Duration, ok bool) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	if sm.n < 2 {
		return nil, 0, false
	}
	newest := sm.ring[(sm.next+queueRing-1)%queueRing]
	oldest := newest
	for i := 2; i <= sm.n; i++ {
		s := sm.ring[(sm.next+queueRing-i)%queueRing]
		if newest.at.Sub(s.at) > rateWindow || s.at.After(oldest.at) {
			break
		}
		oldest = s
	}
	if span = newest.at.Sub(oldest.at); span < time.Second {
		return nil, span, false
	}
	per := func(now, then uint64) float64 {
		if now < then {
			return 0
		}
		return float64(now-then) / span.Seconds()
	}
	rs = make(map[string]queueRate, len(newest.queues))
	for name, n := range newest.queues {
		o := oldest.queues[name]
		rs[name] = queueRate{Enqueued: per(n.enqueued, o.enqueued), Acked: per(n.acked, o.acked),
			DeadLettered: per(n.dead, o.dead)}
	}
	return rs, span, true
}
