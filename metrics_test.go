package ringwal_test

// Tests of Stats' histograms (what package prom exports) and of what the
// engine logs. The Prometheus collector's own tests are in prom/.

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
)

var (
	errTransient = classify.Mark(errors.New("upstream reset"), classify.Transient)
	errPermanent = classify.Mark(errors.New("bad request"), classify.Permanent)
)

// slowRetries keeps retried messages Delayed for a minute of fake time.
func slowRetries() map[classify.Category]classify.RetryPolicy {
	p := classify.RetryPolicy{MaxAttempts: 5, Base: time.Minute, Max: time.Minute, Multiplier: 2, Jitter: classify.NoJitter}
	return map[classify.Category]classify.RetryPolicy{classify.Transient: p}
}

// TestMetricsStatsHistograms: Stats carries the histograms themselves
// (cumulative buckets, sum), whether the engine is durable and closed, and
// the WAL's batch sizes on a disk engine only.
func TestMetricsStatsHistograms(t *testing.T) {
	fake := clock.NewFake(time.Time{})
	e := open(t, "", ringwal.Options{Clock: fake})
	const n = 128 // two sampled messages at least (one in 64, by ID)
	for i := 0; i < n; i++ {
		_, err := e.Enqueue(context.Background(), ringwal.Message{})
		require.NoError(t, err)
	}
	ds := make([]ringwal.Delivery, n)
	for i := range ds {
		ds[i] = dequeue(t, e)
	}
	fake.Advance(3 * time.Millisecond)
	for _, d := range ds {
		require.NoError(t, e.Ack(d.Lease))
	}
	s := e.Stats()
	assert.False(t, s.Durable)
	assert.False(t, s.Closed)
	assert.Equal(t, ringwal.WALStats{}, s.WAL, "memory only")
	h := s.Handling
	require.NotZero(t, h.Count)
	require.Len(t, h.Buckets, 28)
	assert.Equal(t, time.Microsecond, h.Buckets[0].UpperBound)
	assert.Equal(t, 1<<26*time.Microsecond, h.Buckets[26].UpperBound)
	assert.Equal(t, time.Duration(math.MaxInt64), h.Buckets[27].UpperBound)
	assert.Equal(t, h.Count, h.Buckets[27].Count, "cumulative")
	assert.Equal(t, uint64(0), h.Buckets[11].Count, "nothing at or below 2048µs")
	assert.Equal(t, h.Count, h.Buckets[12].Count, "everything at or below 4096µs")
	assert.Equal(t, time.Duration(h.Count)*3*time.Millisecond, h.Sum)
	w := s.Wait
	require.Len(t, w.Buckets, 28, "the bounds are there even when empty")
	assert.Equal(t, w.Count, w.Buckets[0].Count, "no time passed before dequeue")
	require.NoError(t, e.Close())
	assert.True(t, e.Stats().Closed)

	d := open(t, t.TempDir(), ringwal.Options{})
	_, err := d.Enqueue(context.Background(), ringwal.Message{})
	require.NoError(t, err)
	// The writer counts a batch just after it releases its waiters.
	require.Eventually(t, func() bool { return d.Stats().WAL.Batches > 0 }, 5*time.Second, time.Millisecond)
	s = d.Stats()
	assert.True(t, s.Durable)
	b := s.WAL.BatchRecords
	require.Len(t, b, 20)
	assert.Equal(t, 1, b[0].UpperBound)
	assert.Equal(t, 1<<18, b[18].UpperBound)
	assert.Equal(t, math.MaxInt, b[19].UpperBound)
	assert.Equal(t, s.WAL.Batches, b[19].Count, "cumulative")
	assert.Len(t, s.WAL.Write.Buckets, 28)
}

// lockedWriter makes a bytes.Buffer safe for a logger used from several
// goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *lockedWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *lockedWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

// TestLoggingAtInfo: a workload of many messages logs nothing per message
// at Info and above, and a breaker transition is logged.
func TestLoggingAtInfo(t *testing.T) {
	var buf bytes.Buffer
	w := &lockedWriter{w: &buf}
	logger := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
	fake := clock.NewFake(time.Time{})
	e := open(t, t.TempDir(), ringwal.Options{
		Clock: fake, Logger: logger, Policies: slowRetries(),
		Breaker: breaker.Options{ConsecutiveFailures: 1, FailureRate: -1, OpenTimeout: time.Hour},
	})
	const n = 200
	for i := 0; i < n; i++ {
		_, err := e.Enqueue(context.Background(), ringwal.Message{Payload: []byte("x")})
		require.NoError(t, err)
	}
	for i := 0; i < n; i++ {
		d := dequeue(t, e)
		if i%2 == 0 {
			require.NoError(t, e.Ack(d.Lease))
		} else {
			require.NoError(t, e.Nack(d.Lease, errPermanent)) // dead-lettered
		}
	}
	_, err := e.Enqueue(context.Background(), ringwal.Message{Key: "flaky"})
	require.NoError(t, err)
	d := dequeue(t, e)
	require.NoError(t, e.Nack(d.Lease, errTransient))
	require.Eventually(t, func() bool { return strings.Contains(w.String(), "breaker state changed") },
		5*time.Second, time.Millisecond)
	require.NoError(t, e.Close())
	lines := strings.Split(strings.TrimSpace(w.String()), "\n")
	assert.Less(t, len(lines), 10, "nothing per message at Info:\n%s", w.String())
}
