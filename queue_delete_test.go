package ringwal

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/internal/wal"
)

// takeEveryFreeNumber gives every queue number no queue has to a stand-in
// queue (not logged, not listed): the state of an engine that has used
// all 65,535, without declaring them.
func takeEveryFreeNumber(e *Engine) {
	t := &e.queues
	t.mu.Lock()
	defer t.mu.Unlock()
	standIn := &queue{e: e, name: "stand-in"}
	for n := 1; n <= wal.MaxQueue; n++ {
		if t.at(uint16(n)) != nil {
			continue
		}
		c := t.chunks[n>>8].Load()
		if c == nil {
			c = new([256]atomic.Pointer[queue])
			t.chunks[n>>8].Store(c)
		}
		c[n&0xff].Store(standIn)
	}
}

func numberOf(t *testing.T, e *Engine, name string) uint16 {
	t.Helper()
	q, err := e.queueNamed(name, false)
	require.NoError(t, err)
	return q.num
}

func TestQueueNumberIsReusedOnlyAfterACheckpoint(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	// The old queue's records name its number in the log.
	_, err = e.Enqueue(ctx, Message{Queue: "old", Payload: []byte("x")})
	require.NoError(t, err)
	d, ok := e.Queue("old").TryDequeue()
	require.True(t, ok)
	require.NoError(t, e.Ack(d.Lease))
	num := numberOf(t, e, "old")
	takeEveryFreeNumber(e)
	require.NoError(t, e.DeleteQueue("old"))

	e.queues.mu.Lock()
	_, free := e.queues.number()
	e.queues.mu.Unlock()
	assert.False(t, free, "a deleted queue's number is not free before a checkpoint")
	assert.True(t, e.Stats().WAL.LastCheckpoint.IsZero())

	require.NoError(t, e.DeclareQueue("new", QueueOptions{LeaseTimeout: time.Minute}))
	assert.Equal(t, num, numberOf(t, e, "new"), "the declaration ran the checkpoint that freed the number")
	assert.False(t, e.Stats().WAL.LastCheckpoint.IsZero())
	id, err := e.Enqueue(ctx, Message{Queue: "new", Payload: []byte("y")})
	require.NoError(t, err)
	require.NoError(t, e.Close())

	e, err = Open(dir, Options{})
	require.NoError(t, err)
	defer e.Close()
	_, err = e.queueNamed("old", false)
	assert.ErrorIs(t, err, ErrNotFound)
	assert.Equal(t, num, numberOf(t, e, "new"))
	d, ok = e.Queue("new").TryDequeue()
	require.True(t, ok, "the new queue's message replays into it")
	assert.Equal(t, id, d.ID)
	assert.Equal(t, "y", string(d.Message.Payload))
	_, ok = e.Queue("new").TryDequeue()
	assert.False(t, ok)
}

func TestMemoryEngineReusesADeletedQueuesNumberAtOnce(t *testing.T) {
	e := openEngine(t, "", Options{})
	require.NoError(t, e.DeclareQueue("old", QueueOptions{}))
	num := numberOf(t, e, "old")
	takeEveryFreeNumber(e)
	require.NoError(t, e.DeleteQueue("old"))
	require.NoError(t, e.DeclareQueue("new", QueueOptions{}))
	assert.Equal(t, num, numberOf(t, e, "new"))
	err := e.DeclareQueue("one-too-many", QueueOptions{})
	assert.ErrorIs(t, err, ErrFull)
	assert.Contains(t, err.Error(), "queue numbers are in use")
}

// A log can hold two queues under one number (the older deleted before
// the newer was declared) when recovery replays it whole: each record
// goes to the queue its number named when it was written.
func TestLogWithANumberGivenAgainReplaysEachQueuesRecords(t *testing.T) {
	dir := t.TempDir()
	l, err := wal.Open(dir, wal.Options{})
	require.NoError(t, err)
	_, err = l.Replay(func(*wal.Record) error { return nil })
	require.NoError(t, err)
	require.NoError(t, l.RequireFormat(2))
	for _, r := range []wal.Record{
		{Kind: wal.KindQueue, Queue: 1, Key: "old", Time: 1},
		{Kind: wal.KindEnqueue, ID: 1, Queue: 1, Time: 2, Payload: []byte("x")},
		{Kind: wal.KindAck, ID: 1, Time: 3},
		{Kind: wal.KindQueueDelete, Queue: 1, Key: "old", Time: 4},
		{Kind: wal.KindQueue, Queue: 1, Key: "new", Time: 5},
		{Kind: wal.KindEnqueue, ID: 2, Queue: 1, Time: 6, Payload: []byte("y")},
	} {
		require.NoError(t, l.Append(&r))
	}
	require.NoError(t, l.Close())

	e := openEngine(t, dir, Options{})
	_, err = e.queueNamed("old", false)
	assert.ErrorIs(t, err, ErrNotFound)
	d, ok := e.Queue("new").TryDequeue()
	require.True(t, ok)
	assert.EqualValues(t, 2, d.ID)
	assert.Equal(t, "new", d.Message.Queue)
}

// Queues declared, used and deleted over and over while checkpoints run,
// with every number but theirs taken: each declaration needs a number
// freed by a checkpoint, so numbers pass from queue to queue. After a
// reopen each queue holds exactly the message it was left with.
func TestNumbersPassingBetweenQueuesKeepEveryMessageInItsQueue(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	names := []string{"a", "b", "c", "d"}
	for _, name := range names {
		require.NoError(t, e.DeclareQueue(name, QueueOptions{}))
	}
	takeEveryFreeNumber(e)

	stop := make(chan struct{})
	checkpoints := make(chan error, 1)
	go func() {
		defer close(checkpoints)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := e.Checkpoint(); err != nil {
				checkpoints <- err
				return
			}
		}
	}()
	errs := make(chan error, len(names))
	for _, name := range names {
		go func() {
			errs <- func() error {
				for round := 0; round < 20; round++ {
					for i := 0; i < 3; i++ {
						if _, err := e.Enqueue(ctx, Message{Queue: name, Payload: []byte(name)}); err != nil {
							return err
						}
					}
					for i := 0; i < 3; i++ {
						d, err := e.Queue(name).Dequeue(ctx)
						if err != nil {
							return err
						}
						if string(d.Message.Payload) != name {
							return fmt.Errorf("queue %s delivered %q", name, d.Message.Payload)
						}
						if err := e.Ack(d.Lease); err != nil {
							return err
						}
					}
					if err := e.DeleteQueue(name); err != nil {
						return err
					}
				}
				_, err := e.Enqueue(ctx, Message{Queue: name, Payload: []byte(name)})
				return err
			}()
		}()
	}
	for range names {
		require.NoError(t, <-errs)
	}
	close(stop)
	require.NoError(t, <-checkpoints)
	require.NoError(t, e.Close())

	e, err = Open(dir, Options{})
	require.NoError(t, err)
	defer e.Close()
	for _, name := range names {
		d, ok := e.Queue(name).TryDequeue()
		require.True(t, ok, "queue %s keeps its message", name)
		assert.Equal(t, name, string(d.Message.Payload))
		_, ok = e.Queue(name).TryDequeue()
		assert.False(t, ok, "queue %s holds only its own", name)
	}
}

// A DeleteQueue that runs while a dead letter of its queue is being
// purged comes after the purge record in the log: a crash between the
// two then leaves a log whose every record names a declared queue. (The
// other order, deletion first, leaves the dead letter naming a deleted
// queue, and every checkpoint after the next Open fails.)
func TestDeleteQueueFollowsThePurgeOfItsLastDeadLetter(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, Options{})
	q := e.Queue("q")
	ctx := context.Background()
	id, err := q.Enqueue(ctx, Message{Payload: []byte("x")})
	require.NoError(t, err)
	d, err := q.Dequeue(ctx)
	require.NoError(t, err)
	require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("no"), classify.Permanent)))

	deleted := make(chan error, 1)
	hook := func() {
		go func() { deleted <- e.DeleteQueue("q") }()
		// A DeleteQueue that does not wait for the purge returns now.
		select {
		case err := <-deleted:
			deleted <- err
		case <-time.After(200 * time.Millisecond):
		}
	}
	deadLetterRemoved.Store(&hook)
	t.Cleanup(func() { deadLetterRemoved.Store(nil) })
	require.NoError(t, e.PurgeDeadLetter(id))
	deadLetterRemoved.Store(nil)
	require.NoError(t, <-deleted)
	require.NoError(t, e.Close())

	var order []wal.Kind
	require.NoError(t, wal.Dump(dir, func(_ uint64, r *wal.Record) error {
		if r.Kind == wal.KindPurge || r.Kind == wal.KindQueueDelete {
			order = append(order, r.Kind)
		}
		return nil
	}))
	assert.Equal(t, []wal.Kind{wal.KindPurge, wal.KindQueueDelete}, order)
}
