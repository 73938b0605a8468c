package ringwal

// Ways EnqueueBatch once lost or stalled a message: a batch that waited
// while it held records, a failed batch that kept its DedupID
// reservations, a unique DedupID repeated inside one batch.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
)

// A batch that must wait for a key's room (MaxQueued) holds no record
// while it waits, so the housekeeper's lease scan (which waits out busy
// records) keeps running, and the retry timer that will make the room
// fires.
func TestEnqueueBatchWaitsHoldingNoRecord(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	e := openEngine(t, "", Options{
		Clock:        fake,
		LeaseTimeout: 100 * time.Millisecond,
		KeyPolicy: func(key string) KeyPolicy {
			if key == "k" {
				return KeyPolicy{MaxQueued: 1}
			}
			return KeyPolicy{}
		},
	})
	_, err := e.TryEnqueue(Message{Key: "k", Payload: []byte("first")})
	require.NoError(t, err)
	d, ok := e.TryDequeue()
	require.True(t, ok)
	busy := classify.Mark(errors.New("busy"), classify.Transient)
	require.NoError(t, e.Nack(d.Lease, classify.After(busy, 300*time.Millisecond)))

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// A consumer that acks everything: the retry, once due, frees k's room.
	go func() {
		for ctx.Err() == nil {
			if d, err := e.Dequeue(ctx); err == nil {
				_ = e.Ack(d.Lease)
			}
		}
	}()
	done := make(chan error, 1)
	go func() {
		_, err := e.EnqueueBatch(ctx, []Message{{Payload: []byte("a")}, {Key: "k", Payload: []byte("second")}})
		done <- err
	}()
	for {
		select {
		case err := <-done:
			require.NoError(t, err, "the batch must finish once the retry is acked, not when its ctx ends")
			return
		case <-time.After(time.Millisecond):
			fake.Advance(10 * time.Millisecond)
		}
	}
}

// A batch that fails (here its ctx ends while a key is full) leaves no
// DedupID reserved: the caller's retry of that message is enqueued, not
// answered ErrDuplicate with an ID no message has.
func TestFailedEnqueueBatchLeavesNoDedupReservation(t *testing.T) {
	for _, dir := range []string{"", "log"} {
		t.Run(map[string]string{"": "memory", "log": "log"}[dir], func(t *testing.T) {
			if dir != "" {
				dir = t.TempDir()
			}
			e := openEngine(t, dir, Options{
				DedupWindow: time.Hour,
				KeyPolicy: func(key string) KeyPolicy {
					return KeyPolicy{MaxQueued: 1}
				},
			})
			_, err := e.TryEnqueue(Message{Key: "full", Payload: []byte("x")})
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err = e.EnqueueBatch(ctx, []Message{{DedupID: "order-1"}, {Key: "full"}})
			require.ErrorIs(t, err, context.Canceled)

			id, err := e.Enqueue(context.Background(), Message{DedupID: "order-1"})
			require.NoError(t, err, "the failed batch's DedupID must not be left reserved")
			info, err := e.Get(id)
			require.NoError(t, err)
			assert.Equal(t, "order-1", info.Message.DedupID)
		})
	}
}

// Inside one EnqueueBatch a message repeating an earlier one's DedupID
// under UniqueQueued or UniqueLive gets the first's ID, is not added, and
// the call's error wraps ErrDuplicate: the batch returns, with or without
// a log.
func TestEnqueueBatchAnswersARepeatedUniqueDedupID(t *testing.T) {
	for _, tc := range []struct {
		name    string
		durable bool
		mode    Unique
		replace bool
	}{
		{"memory/queued", false, UniqueQueued, false},
		{"memory/live", false, UniqueLive, false},
		{"memory/live/replace", false, UniqueLive, true},
		{"durable/queued", true, UniqueQueued, false},
		{"durable/live", true, UniqueLive, false},
		{"durable/queued/replace", true, UniqueQueued, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := ""
			if tc.durable {
				dir = t.TempDir()
			}
			e := openEngine(t, dir, Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			ms := []Message{
				{Payload: []byte("a"), DedupID: "d", Unique: tc.mode},
				{Payload: []byte("b")},
				{Payload: []byte("c"), DedupID: "d", Unique: tc.mode, Replace: tc.replace},
			}
			ids, err := e.EnqueueBatch(ctx, ms)
			require.NotErrorIs(t, err, context.DeadlineExceeded, "the batch never returned")
			if tc.replace {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, ErrDuplicate)
			}
			require.Len(t, ids, 3)
			assert.NotZero(t, ids[0])
			assert.Equal(t, ids[0], ids[2])
			assert.Equal(t, 2, e.Stats().Pending)
			m, err := e.Get(ids[0])
			require.NoError(t, err)
			want := "a"
			if tc.replace {
				want = "c"
			}
			assert.Equal(t, want, string(m.Message.Payload))
		})
	}
}
