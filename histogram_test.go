package ringwal

import (
	"context"
	"testing"
	"time"
)

// An observation above a bucket's upper bound must not be counted in it:
// a Prometheus bucket le=x holds observations <= x.
func TestHistogramBucketUpperBound(t *testing.T) {
	for _, ns := range []int64{1001, 1500, 1999, 2001, 3999, 4001, 1_000_001} {
		var h histogram
		h.observe(ns)
		counts, _, _ := h.snapshot()
		for i, n := range counts {
			if n == 0 {
				continue
			}
			if up := bucketUpperSeconds(i) * 1e9; float64(ns) > up && i < latencyBuckets-1 {
				t.Errorf("observe(%dns) counted in bucket %d (le=%gs), below the observation", ns, i, bucketUpperSeconds(i))
			}
			if i > 0 && float64(ns) <= bucketUpperSeconds(i-1)*1e9 {
				t.Errorf("observe(%dns) counted in bucket %d, but fits bucket %d", ns, i, i-1)
			}
		}
		// What package prom exports: Latency.Buckets, cumulative.
		for _, b := range h.latency().Buckets {
			if int64(b.UpperBound) < ns && b.Count != 0 {
				t.Errorf("observe(%dns): bucket le=%v counts %d", ns, b.UpperBound, b.Count)
			}
		}
	}
}

// Acked counts acks since Open: a message whose TTL passed while the
// engine was closed, dead-lettered on reopen, must not be subtracted from
// the acks that follow.
func TestStatsAckedAfterReopenWithExpiredTTL(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := e.Enqueue(ctx, Message{Payload: []byte("ttl"), TTL: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := e.Enqueue(ctx, Message{Payload: []byte("x"), Delay: 300 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	e, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	deadline := time.Now().Add(5 * time.Second)
	acked := 0
	for acked < 3 && time.Now().Before(deadline) {
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		d, err := e.Dequeue(dctx)
		cancel()
		if err != nil {
			continue
		}
		if err := e.Ack(d.Lease); err != nil {
			t.Fatal(err)
		}
		acked++
	}
	s := e.Stats()
	t.Logf("acked %d, stats: acked %d dequeued %d deadLettered %d expired %d dead %d", acked, s.Acked, s.Dequeued, s.DeadLettered, s.Expired, s.Dead)
	if s.Acked != uint64(acked) || s.Dequeued != uint64(acked) {
		t.Errorf("Stats.Acked %d, Dequeued %d after %d acks", s.Acked, s.Dequeued, acked)
	}
}
