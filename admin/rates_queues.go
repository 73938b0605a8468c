package admin

// The queues page's rates: a second, smaller ring of samples of every
// queue's totals (enqueued, acked, dead-lettered), taken from the same
// Stats as the overview's samples, when the overview or the queues page
// is requested. Its samples are spaced wider than the overview's so that
// a few of them span the minute: a sample holds a map of up to
// maxRateQueues queues, not six numbers.

import (
	"time"

	"github.com/ringwal/ringwal"
)

// Queue sampling bounds: queueSampleEvery apart at least, queueRing of
// them (enough to span rateWindow), of at most maxRateQueues queues each
// (the first in Stats.Queues' order: the default queue, then by name);
// queues past that show no rate.
const (
	queueSampleEvery = 5 * time.Second
	queueRing        = 16
	maxRateQueues    = 1000
)

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
// kept). sm.mu guards the queue ring too.
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
// sampleEvery. A queue missing from the older sample (declared since)
// counts from zero.
func (sm *sampler) queueRates() (rs map[string]queueRate, span time.Duration, ok bool) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	newest, oldest, span, ok := window(sm.qring[:], sm.qnext, sm.qn, func(s queueSample) time.Time { return s.at })
	if !ok {
		return nil, span, false
	}
	per := perSecond(span)
	rs = make(map[string]queueRate, len(newest.queues))
	for name, n := range newest.queues {
		o := oldest.queues[name]
		rs[name] = queueRate{Enqueued: per(n.enqueued, o.enqueued), Acked: per(n.acked, o.acked),
			DeadLettered: per(n.dead, o.dead)}
	}
	return rs, span, true
}
