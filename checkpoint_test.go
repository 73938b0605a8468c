package ringwal_test

// Checkpoints: what a reopened engine rebuilds when a checkpoint carried
// the state (a dead letter whole, its dedup window where it was), and
// checkpoints under load losing nothing.

import (
	"context"
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

// TestDeadLetterMessageSurvivesCheckpoint: a dead letter's message comes
// back whole after a restart, whether the log or a checkpoint carried it.
func TestDeadLetterMessageSurvivesCheckpoint(t *testing.T) {
	forLogAndCheckpoint(t, func(t *testing.T, checkpoint bool) {
		dir := t.TempDir()
		fake := clock.NewFake(time.Time{})
		o := ringwal.Options{Clock: fake}
		e1, err := ringwal.Open(dir, o)
		require.NoError(t, err)
		closed := false
		t.Cleanup(func() {
			if !closed {
				_ = e1.Close()
			}
		})
		m := ringwal.Message{DedupID: "dl", Key: "k", Priority: ringwal.High, Payload: []byte("p"),
			Headers: map[string]string{"a": "b"}, Delay: time.Second, TTL: time.Hour,
			Deadline: fake.Now().Add(time.Minute), MaxAttempts: 1}
		id := enqueue(t, e1, m)
		fake.Advance(2 * time.Second)
		d := dequeue(t, e1)
		require.Equal(t, id, d.ID)
		require.NoError(t, e1.Nack(d.Lease, permanent("rejected")))
		before := deadEntry(t, e1, id)
		require.Equal(t, m, before.Message)
		if checkpoint {
			require.NoError(t, e1.Checkpoint())
		}
		require.NoError(t, e1.Close())
		closed = true

		o.Clock = clock.NewFake(fake.Now())
		e2 := open(t, dir, o)
		after := deadEntry(t, e2, id)
		after.Message.Deadline = after.Message.Deadline.UTC()
		assert.Equal(t, m, after.Message, "the dead letter's message survives")
		assert.Equal(t, before.Attempts, after.Attempts)
		assert.Equal(t, before.Failures, after.Failures)
		assert.True(t, before.DeadAt.Equal(after.DeadAt))
	})
}

// TestDedupOfDeadLetterAfterCheckpoint: a checkpoint does not restart a
// dead letter's dedup window at the time it died.
func TestDedupOfDeadLetterAfterCheckpoint(t *testing.T) {
	forLogAndCheckpoint(t, func(t *testing.T, checkpoint bool) {
		dir := t.TempDir()
		fake := clock.NewFake(time.Time{})
		o := ringwal.Options{Clock: fake, DedupWindow: time.Minute}
		e1, err := ringwal.Open(dir, o)
		require.NoError(t, err)
		closed := false
		t.Cleanup(func() {
			if !closed {
				_ = e1.Close()
			}
		})
		id := enqueue(t, e1, ringwal.Message{DedupID: "once"})
		fake.Advance(40 * time.Second)
		d := dequeue(t, e1)
		require.Equal(t, id, d.ID)
		require.NoError(t, e1.Nack(d.Lease, permanent("rejected")))
		waitState(t, e1, id, ringwal.Dead)
		if checkpoint {
			require.NoError(t, e1.Checkpoint())
		}
		require.NoError(t, e1.Close())
		closed = true

		// 70s after the first enqueue, 30s after it died.
		o.Clock = clock.NewFake(fake.Now().Add(30 * time.Second))
		e2 := open(t, dir, o)
		again, err := e2.Enqueue(ctxBG, ringwal.Message{DedupID: "once"})
		assert.NoError(t, err, "the window counts from the first enqueue")
		assert.NotEqual(t, id, again)
		// And the dead letter keeps its DedupID.
		assert.Equal(t, "once", deadEntry(t, e2, id).Message.DedupID)
	})
}

// TestCheckpointUnderLoadLosesNothing: checkpoints taken while producers,
// consumers and an operator change messages' states leave a log from
// which a reopened engine has every unacked message once, no acked one,
// and every dead letter with its review.
func TestCheckpointUnderLoadLosesNothing(t *testing.T) {
	dir := t.TempDir()
	o := ringwal.Options{
		Durability:   ringwal.Write,
		LeaseTimeout: time.Hour,
		Policies: map[classify.Category]classify.RetryPolicy{
			classify.Transient: {MaxAttempts: 3, Base: time.Millisecond, Multiplier: 1, Jitter: classify.NoJitter},
		},
	}
	e1, err := ringwal.Open(dir, o)
	require.NoError(t, err)
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = e1.Close()
		}
	})

	const producers, perProducer = 4, 400
	var mu sync.Mutex
	acked := map[ringwal.ID]bool{}
	enqueued := map[ringwal.ID]bool{}
	reviewed := map[ringwal.ID]string{}
	purged := map[ringwal.ID]bool{}
	ctx, cancel := context.WithCancel(ctxBG)
	defer cancel()

	var prod sync.WaitGroup
	for p := 0; p < producers; p++ {
		prod.Add(1)
		go func(p int) {
			defer prod.Done()
			for i := 0; i < perProducer; i++ {
				key := fmt.Sprintf("k%d.%d", p, i) // lets the operator purge just this one
				id, err := e1.Enqueue(ctx, ringwal.Message{Key: key, Payload: []byte{byte(i)}})
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				enqueued[id] = true
				mu.Unlock()
			}
		}(p)
	}
	var bg sync.WaitGroup
	for c := 0; c < 4; c++ {
		bg.Add(1)
		go func() {
			defer bg.Done()
			for n := 0; ; n++ {
				d, err := e1.Dequeue(ctx)
				if err != nil {
					return
				}
				switch n % 4 {
				case 0, 1:
					if assert.NoError(t, e1.Ack(d.Lease)) {
						mu.Lock()
						acked[d.ID] = true
						mu.Unlock()
					}
				case 2:
					assert.NoError(t, e1.Nack(d.Lease, transient("again")))
				case 3:
					assert.NoError(t, e1.Nack(d.Lease, permanent("never")))
				}
			}
		}()
	}
	bg.Add(2)
	go func() { // the operator
		defer bg.Done()
		for ctx.Err() == nil {
			dls, err := e1.DeadLetters(dlq.Query{Reviewed: dlq.OnlyUnreviewed, Limit: 8})
			if err != nil {
				return
			}
			for i, dl := range dls {
				id := dl.ID
				switch i % 4 {
				case 0:
					if e1.Redrive(id) == nil {
						continue
					}
				case 1:
					if n, err := e1.PurgeDeadLetters(dlq.Query{Key: dl.Key}); err == nil && n == 1 {
						mu.Lock()
						purged[id] = true
						mu.Unlock()
						continue
					}
				}
				note := fmt.Sprintf("note %d", id)
				if e1.MarkReviewed(id, note) == nil {
					mu.Lock()
					reviewed[id] = note
					mu.Unlock()
				}
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	go func() { // checkpoints
		defer bg.Done()
		for ctx.Err() == nil {
			assert.NoError(t, e1.Checkpoint())
			time.Sleep(time.Millisecond)
		}
	}()
	prod.Wait()
	time.Sleep(50 * time.Millisecond)
	cancel()
	bg.Wait()
	before := e1.Stats()
	require.NoError(t, e1.Checkpoint())
	// A few changes after the last checkpoint, replayed from the log.
	extra := enqueue(t, e1, ringwal.Message{Payload: []byte("extra")})
	require.NoError(t, e1.Close())
	closed = true

	e2 := open(t, dir, o)
	after := e2.Stats()
	assert.Equal(t, before.Pending+before.Delayed+before.Leased+before.Held+1,
		after.Pending+after.Delayed+after.Leased+after.Held, "live messages: before %+v, after %+v", before, after)
	assert.Equal(t, before.Dead, after.Dead, "dead letters")
	for id := range enqueued {
		info, err := e2.Get(id)
		switch {
		case acked[id]:
			assert.ErrorIs(t, err, ringwal.ErrNotFound, "acked %d comes back: %+v", id, info)
		case purged[id]:
			assert.ErrorIs(t, err, ringwal.ErrNotFound, "purged %d comes back: %+v", id, info)
		default:
			if assert.NoError(t, err, "%d is lost", id) && info.State == ringwal.Dead {
				if note, ok := reviewed[id]; ok {
					dl := deadEntry(t, e2, id)
					assert.True(t, dl.Reviewed, "%d's review", id)
					assert.Equal(t, note, dl.Note)
				}
			}
		}
	}
	_, err = e2.Get(extra)
	assert.NoError(t, err)
}
