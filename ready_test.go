package ringwal_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
)

// Messages that expired while pending leave their ring entries behind
// until a consumer pops them. With no consumer around, the tier looked
// full for good: TryEnqueue said ErrFull and Enqueue waited with not one
// live message in the engine. The room is real once they are gone, up to
// the ring's size in live messages, and order holds.
func TestExpiredMessagesLeaveRoomInTheirTier(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{TierCapacity: 4, MaxMessages: 64})
	for i := 0; i < 4; i++ {
		enqueue(t, e, ringwal.Message{TTL: time.Second})
	}
	fake.Advance(2 * time.Second)
	require.Eventually(t, func() bool { s := e.Stats(); return s.Dead == 4 && s.Pending == 0 }, waitFor, tick)

	var ids []ringwal.ID
	id, err := e.TryEnqueue(ringwal.Message{})
	require.NoError(t, err, "no live message: TryEnqueue has room")
	ids = append(ids, id)
	ctx, cancel := context.WithTimeout(ctxBG, time.Second)
	defer cancel()
	for i := 0; i < 3; i++ {
		id, err := e.Enqueue(ctx, ringwal.Message{})
		require.NoError(t, err, "Enqueue %d does not wait for a consumer", i)
		ids = append(ids, id)
	}
	_, err = e.TryEnqueue(ringwal.Message{})
	assert.ErrorIs(t, err, ringwal.ErrFull, "four live messages fill a tier of four")
	for _, want := range ids {
		d := dequeue(t, e)
		require.Equal(t, want, d.ID, "FIFO")
		require.NoError(t, e.Ack(d.Lease))
	}
	_, ok := e.TryDequeue()
	assert.False(t, ok)
}

// Delays never end early on the real clock, whose cached reading the hot
// path uses and which lags when the machine is busy. (Timing dependent
// before the fix: it failed in some runs, never after.)
func TestDelaysNeverEarlyOnRealClock(t *testing.T) {
	const d = 5 * time.Millisecond
	e := open(t, "", ringwal.Options{Policies: fastPolicies(100)})
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		start := time.Now()
		_, err := e.Enqueue(ctx, ringwal.Message{Delay: d})
		require.NoError(t, err)
		dl, err := e.Dequeue(ctx)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, time.Since(start), d, "Delay ended early")

		start = time.Now()
		require.NoError(t, e.Nack(dl.Lease, classify.After(transient("503"), d)))
		again, err := e.Dequeue(ctx)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, time.Since(start), d, "classify.After ended early")
		require.NoError(t, e.Ack(again.Lease))
	}
}

// TestConsumersAtTheHeadLoseNothing: consumers that pop each message the
// moment it is pushed (while its enqueue is still being published) get
// every one, with and without a log.
func TestConsumersAtTheHeadLoseNothing(t *testing.T) {
	for _, c := range []struct {
		name string
		dir  func(t *testing.T) string
	}{
		{"memory", func(*testing.T) string { return "" }},
		{"buffered log", func(t *testing.T) string { return t.TempDir() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := open(t, c.dir(t), ringwal.Options{Durability: ringwal.Buffered})
			const producers, perProducer = 2, 20_000
			var acked atomic.Int64
			var wg sync.WaitGroup
			for p := 0; p < producers; p++ {
				wg.Add(2)
				go func() {
					defer wg.Done()
					for i := 0; i < perProducer; i++ {
						_, err := e.Enqueue(ctxBG, ringwal.Message{})
						if !assert.NoError(t, err) {
							return
						}
					}
				}()
				go func() { // a consumer spinning on the head
					defer wg.Done()
					deadline := time.Now().Add(waitFor)
					for acked.Load() < producers*perProducer && time.Now().Before(deadline) {
						if d, ok := e.TryDequeue(); ok && assert.NoError(t, e.Ack(d.Lease)) {
							acked.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			s := e.Stats()
			assert.Equal(t, int64(producers*perProducer), acked.Load(), "acked; left: %+v", counts(s))
		})
	}
}

func TestDelay(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{AgingAfter: noAging})
	t0 := fake.Now()
	id := enqueue(t, e, ringwal.Message{Priority: ringwal.High, Payload: []byte("later"), Delay: 100 * time.Millisecond})
	info, err := e.Get(id)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Delayed, info.State)
	assert.True(t, info.NextAt.Equal(t0.Add(100*time.Millisecond)), "NextAt %v", info.NextAt)

	// An undelayed message behind it in the same tier is not blocked.
	now := enqueueP(t, e, ringwal.High, "now")
	d := dequeue(t, e)
	assert.Equal(t, now, d.ID)
	require.NoError(t, e.Ack(d.Lease))

	assertNothingReady(t, e, "at enqueue")
	fake.Advance(99 * time.Millisecond)
	assertNothingReady(t, e, "1ms before enqueue+Delay")
	info, err = e.Get(id)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Delayed, info.State)

	fake.Advance(3 * time.Millisecond)
	d = dequeue(t, e)
	assert.Equal(t, id, d.ID)
	assert.Equal(t, 1, d.Attempt)
	assert.Equal(t, "later", string(d.Message.Payload))
	assert.True(t, d.EnqueuedAt.Equal(t0), "EnqueuedAt is the enqueue time, not the due time")
}
