package ringwal

import (
	"math"
	"math/bits"
	"sync/atomic"

	"github.com/ringwal/ringwal/internal/wal"
)

// The statistics the engine keeps for Stats: lock-free histograms and
// atomics that the hot path and the WAL writer update. Nothing here knows
// about Prometheus or HTTP: package prom exports Stats as metrics, and
// package admin serves it as JSON.

// walBatchBuckets: bucket i counts batches of up to 2^i records (more
// than 2^(i-1)); the last takes everything above too.
const walBatchBuckets = 20

// metrics is the home of the statistics the engine keeps for Stats.
type metrics struct {
	wait, handling     histogram
	enqueue            histogram // a sampled Enqueue's claim to return
	walWrite, walFsync histogram
	// Written by the WAL writer goroutine only (onBatch).
	walBatchRecords [walBatchBuckets]atomic.Uint64
	walBatches      atomic.Uint64
	walRecords      atomic.Uint64
	walBytes        atomic.Uint64
	walFailed       atomic.Uint64

	// High-water marks of the derived totals, so that Stats never reports
	// one going backwards.
	enqueued, acked, dequeued monotonic
	// The default queue's totals, derived as the engine's less the named
	// queues' (queue_stats.go).
	q0Enqueued, q0Acked, q0DeadLettered monotonic
}

// monotonic is a high-water mark.
type monotonic struct{ v atomic.Uint64 }

// atLeast raises the mark to v and returns the mark.
func (m *monotonic) atLeast(v uint64) uint64 {
	for {
		old := m.v.Load()
		if v <= old {
			return old
		}
		if m.v.CompareAndSwap(old, v) {
			return v
		}
	}
}

func newMetrics(*Engine) *metrics { return &metrics{} }

func (m *metrics) observeWait(ns int64)     { m.wait.observe(ns) }
func (m *metrics) observeHandling(ns int64) { m.handling.observe(ns) }

// onBatch is the WAL writer's per-batch hook (called on its goroutine,
// after the batch's waiters are released and before it takes the next
// batch).
func (e *Engine) onBatch(b wal.BatchInfo) {
	if h := e.afterBatchForTest.Load(); h != nil {
		(*h)(b)
	}
	m := e.metrics
	if m == nil {
		return
	}
	if b.Err != nil {
		m.walFailed.Add(1)
	}
	if b.Records > 0 {
		i := min(walBatchBuckets-1, bits.Len64(uint64(b.Records-1)))
		m.walBatchRecords[i].Add(1)
		m.walRecords.Add(uint64(b.Records))
		m.walBatches.Add(1)
		m.walBytes.Add(uint64(b.Bytes))
		m.walWrite.observe(int64(b.Write))
	}
	if b.Sync > 0 {
		m.walFsync.observe(int64(b.Sync))
	}
}

// walStats reads the WAL's figures for Stats.
func (m *metrics) walStats() WALStats {
	s := WALStats{
		Batches: m.walBatches.Load(), Records: m.walRecords.Load(),
		Bytes: m.walBytes.Load(), FailedBatches: m.walFailed.Load(),
		Write: m.walWrite.latency(), Fsync: m.walFsync.latency(),
		BatchRecords: make([]BatchBucket, walBatchBuckets),
	}
	var cum uint64
	for i := range m.walBatchRecords {
		cum += m.walBatchRecords[i].Load()
		s.BatchRecords[i] = BatchBucket{UpperBound: 1 << i, Count: cum}
	}
	s.BatchRecords[walBatchBuckets-1].UpperBound = math.MaxInt
	return s
}

// observeHandling records a sampled delivery's handling time as its
// lease ends; the lease's start is derived from its end (rec.at), unless
// Extend moved it.
func (e *Engine) observeHandling(r *rec) {
	if !sampled(r.id.Load()) || r.extended() {
		return
	}
	start := r.at - e.queueOf(r).leaseFor.Load()
	e.metrics.observeHandling(e.preciseNow() - start)
}
