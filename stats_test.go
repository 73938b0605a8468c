package ringwal_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/dlq"
)

// TestOldestPendingIsTheLongestWaitingMessage: Stats.OldestPending is the
// age of the pending message that became ready first, wherever it waits
// (its tier, behind a cancelled or leased one, in its key's queue, across
// priorities) and nothing once none is pending.
func TestOldestPendingIsTheLongestWaitingMessage(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, e *ringwal.Engine, advance func(time.Duration))
		want time.Duration
	}{
		{"none pending", func(t *testing.T, e *ringwal.Engine, advance func(time.Duration)) {
			enqueue(t, e, ringwal.Message{Delay: time.Hour})
			advance(time.Minute)
		}, 0},
		{"behind cancelled ones", func(t *testing.T, e *ringwal.Engine, advance func(time.Duration)) {
			var first []ringwal.ID
			for i := 0; i < 10; i++ {
				first = append(first, enqueue(t, e, ringwal.Message{}))
			}
			advance(10 * time.Second)
			enqueue(t, e, ringwal.Message{})
			advance(5 * time.Second)
			for _, id := range first {
				require.NoError(t, e.Cancel(id))
			}
		}, 5 * time.Second},
		{"behind a leased one", func(t *testing.T, e *ringwal.Engine, advance func(time.Duration)) {
			enqueue(t, e, ringwal.Message{})
			advance(3 * time.Second)
			enqueue(t, e, ringwal.Message{})
			dequeue(t, e)
			advance(4 * time.Second)
		}, 4 * time.Second},
		{"in another priority", func(t *testing.T, e *ringwal.Engine, advance func(time.Duration)) {
			enqueue(t, e, ringwal.Message{Priority: ringwal.Low})
			advance(20 * time.Second)
			enqueue(t, e, ringwal.Message{Priority: ringwal.Critical})
			advance(time.Second)
		}, 21 * time.Second},
		{"waiting in its key's queue", func(t *testing.T, e *ringwal.Engine, advance func(time.Duration)) {
			enqueue(t, e, ringwal.Message{Key: "ordered"})
			enqueue(t, e, ringwal.Message{Key: "ordered"})
			dequeue(t, e) // the head is out; the second waits on it
			advance(8 * time.Second)
		}, 8 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, fake := memEngine(t, ringwal.Options{KeyPolicy: func(key string) ringwal.KeyPolicy {
				return ringwal.KeyPolicy{Ordered: key == "ordered"}
			}})
			c.run(t, e, fake.Advance)
			assert.Equal(t, c.want, e.Stats().OldestPending)
		})
	}
}

func TestStatsCountsDeadLettersPurgedReviewedAndUnreviewed(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	var ids []ringwal.ID
	for range 5 {
		id := enqueue(t, e, ringwal.Message{})
		d := dequeue(t, e)
		require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("no"), classify.Permanent)))
		ids = append(ids, id)
	}
	s := e.Stats()
	require.Equal(t, 5, s.Dead)
	assert.Equal(t, 5, s.UnreviewedDeadLetters)

	require.NoError(t, e.MarkReviewed(ids[0], "seen"))
	require.NoError(t, e.MarkReviewed(ids[0], "seen again")) // a re-review counts, and is still one reviewed
	require.NoError(t, e.MarkReviewed(ids[1], "seen"))
	require.NoError(t, e.PurgeDeadLetter(ids[1])) // a reviewed one goes
	n, err := e.PurgeDeadLetters(dlq.Query{Limit: 0, After: ids[3]})
	require.NoError(t, err)
	require.Equal(t, 1, n) // ids[4]

	s = e.Stats()
	assert.Equal(t, 3, s.Dead)
	assert.Equal(t, uint64(3), s.DeadLettersReviewed)
	assert.Equal(t, uint64(2), s.DeadLettersPurged)
	assert.Equal(t, 2, s.UnreviewedDeadLetters, "ids 2 and 3; id 0 is reviewed, 1 and 4 are gone")
}

func TestDeadLetterSearchFindsHeadersKeysAndErrors(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	fail := func(m ringwal.Message, why string) ringwal.ID {
		id := enqueue(t, e, m)
		d := dequeue(t, e)
		require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New(why), classify.Permanent)))
		return id
	}
	a := fail(ringwal.Message{Key: "tenant-9", Headers: map[string]string{"order": "A-1001"}}, "card declined")
	b := fail(ringwal.Message{Key: "tenant-3"}, "HTTP 410 Gone from webhook")
	for text, want := range map[string][]ringwal.ID{"a-1001": {a}, "TENANT": {a, b}, "410 gone": {b}, "order": {a}, "nothing": nil} {
		ds, err := e.DeadLetters(dlq.Query{Text: text})
		require.NoError(t, err)
		var got []ringwal.ID
		for _, d := range ds {
			got = append(got, d.ID)
		}
		assert.Equal(t, want, got, "search %q", text)
	}
}

func TestStatsTimesASampleOfEnqueueCalls(t *testing.T) {
	e := open(t, t.TempDir(), ringwal.Options{Durability: ringwal.Write})
	for range 128 {
		enqueue(t, e, ringwal.Message{})
	}
	_, err := e.EnqueueBatch(context.Background(), make([]ringwal.Message, 64))
	require.NoError(t, err)
	l := e.Stats().EnqueueLatency
	assert.Equal(t, uint64(2), l.Count, "IDs 64 and 128: one Enqueue in 64 is timed, a batch's messages are not")
	assert.Positive(t, l.Sum, "a Write-mode enqueue waits for the log")
}

func TestStatsAfterKnownWorkload(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{Policies: fastPolicies(5)})
	var ready []ringwal.ID
	for i := 0; i < 6; i++ {
		ready = append(ready, enqueueP(t, e, ringwal.Normal, fmt.Sprint(i)))
	}
	for i := 0; i < 2; i++ {
		enqueue(t, e, ringwal.Message{Payload: []byte("later"), Delay: time.Second})
	}
	waitCounts(t, e, stateCounts{Pending: 6, Delayed: 2})

	var ds []ringwal.Delivery
	for i := 0; i < 4; i++ {
		ds = append(ds, dequeue(t, e))
	}
	assert.Equal(t, ready[:4], ids(ds))
	waitCounts(t, e, stateCounts{Pending: 2, Delayed: 2, Leased: 4})

	require.NoError(t, e.Ack(ds[0].Lease))
	require.NoError(t, e.Nack(ds[1].Lease, classify.Mark(errors.New("flaky"), classify.Transient)))
	require.NoError(t, e.Nack(ds[2].Lease, classify.Mark(errors.New("nope"), classify.Permanent)))
	waitCounts(t, e, stateCounts{Pending: 2, Delayed: 3, Leased: 1, Dead: 1})

	s := e.Stats()
	assert.Equal(t, uint64(8), s.Enqueued, "Enqueued")
	assert.Equal(t, uint64(1), s.Acked, "Acked")
	assert.Equal(t, uint64(2), s.Nacked, "Nacked")
	assert.Equal(t, uint64(1), s.Retried, "Retried")
	assert.Equal(t, uint64(1), s.DeadLettered, "DeadLettered")
	assert.Equal(t, uint64(0), s.Expired, "Expired")

	// A TTL'd message expires with no consumer; the retry (10ms) comes due
	// on the way.
	enqueue(t, e, ringwal.Message{Payload: []byte("ttl"), TTL: 50 * time.Millisecond})
	fake.Advance(55 * time.Millisecond)
	waitCounts(t, e, stateCounts{Pending: 3, Delayed: 2, Leased: 1, Dead: 2})
	s = e.Stats()
	assert.Equal(t, uint64(9), s.Enqueued, "Enqueued")
	assert.Equal(t, uint64(1), s.Expired, "Expired")
	assert.GreaterOrEqual(t, s.DeadLettered, uint64(1), "DeadLettered")
	assert.Equal(t, uint64(1), s.Retried, "Retried")
}

// Stats counts a message that sits still, whatever readers do meanwhile.
func TestStatsCountsStableMessagesUnderReaders(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	pending := enqueueP(t, e, ringwal.Normal, "p")
	leased := enqueueP(t, e, ringwal.Normal, "l")
	d := dequeue(t, e)
	require.Equal(t, pending, d.ID)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, id := range []ringwal.ID{pending, leased} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, _ = e.Get(id)
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	for i := 0; i < 300; i++ {
		s := e.Stats()
		if s.Pending != 1 || s.Leased != 1 {
			t.Fatalf("scan %d: Pending %d, Leased %d; want 1 and 1 (nothing moved)", i, s.Pending, s.Leased)
		}
	}
}

// TestOldestPendingSurvivesReopen: Stats.OldestPending counts from when
// the oldest pending message became ready (enqueued, came due, was
// requeued), across a reopen.
func TestOldestPendingSurvivesReopen(t *testing.T) {
	cases := []struct {
		name string
		make func(t *testing.T, e *ringwal.Engine, fake *clock.Fake)
		want time.Duration
	}{
		{"enqueued", func(t *testing.T, e *ringwal.Engine, fake *clock.Fake) {
			enqueue(t, e, ringwal.Message{})
			fake.Advance(30 * time.Second)
		}, 30 * time.Second},
		{"came due", func(t *testing.T, e *ringwal.Engine, fake *clock.Fake) {
			id := enqueue(t, e, ringwal.Message{Delay: 5 * time.Second})
			fake.Advance(30 * time.Second)
			waitState(t, e, id, ringwal.Pending)
		}, 25 * time.Second},
		{"retried", func(t *testing.T, e *ringwal.Engine, fake *clock.Fake) {
			id := enqueue(t, e, ringwal.Message{})
			d := dequeue(t, e)
			require.NoError(t, e.Nack(d.Lease, classify.After(errors.New("later"), 4*time.Second)))
			fake.Advance(30 * time.Second)
			waitState(t, e, id, ringwal.Pending)
		}, 26 * time.Second},
		{"requeued", func(t *testing.T, e *ringwal.Engine, fake *clock.Fake) {
			id := enqueue(t, e, ringwal.Message{Delay: time.Hour})
			fake.Advance(7 * time.Second)
			require.NoError(t, e.Requeue(id))
			fake.Advance(30 * time.Second)
		}, 30 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forLogAndCheckpoint(t, func(t *testing.T, checkpoint bool) {
				fake := clock.NewFake(time.Time{})
				r := newReopener(t, ringwal.Options{Clock: fake})
				c.make(t, r.e, fake)
				require.Equal(t, c.want, r.e.Stats().OldestPending, "before the reopen")
				e2, _ := r.reopen(checkpoint, fake.Now())
				assert.Equal(t, c.want, e2.Stats().OldestPending, "after the reopen")
			})
		})
	}
}
