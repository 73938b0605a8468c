package ringwal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/internal/sched"
)

// Each maintenance task is called directly here, on an engine whose fake
// clock never reaches the housekeeper's own periodic entries.

func TestSweepDedupForgetsIDsPastTheWindow(t *testing.T) {
	e, fake := openFake(t, "", Options{DedupWindow: time.Minute})
	_, err := e.TryEnqueue(Message{DedupID: "a"})
	require.NoError(t, err)
	now := fake.Now().UnixNano()
	e.sweepDedup(now + int64(time.Minute) - 1)
	assert.Equal(t, 1, e.dedup.len(), "still inside the window")
	e.sweepDedup(now + int64(time.Minute))
	assert.Zero(t, e.dedup.len())
}

func TestSweepRetentionRemovesReviewedDeadLettersOnly(t *testing.T) {
	e, fake := openFake(t, t.TempDir(), Options{DeadLetterRetention: time.Hour})
	var ids []ID
	for range 2 {
		id, err := e.TryEnqueue(Message{})
		require.NoError(t, err)
		d, ok := e.TryDequeue()
		require.True(t, ok)
		require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("bad"), classify.Permanent)))
		ids = append(ids, id)
	}
	require.NoError(t, e.MarkReviewed(ids[0], "done"))
	e.sweepRetention(fake.Now().Add(time.Hour + time.Second).UnixNano())
	_, err := e.Get(ids[0])
	assert.ErrorIs(t, err, ErrNotFound, "reviewed and past retention: removed")
	info, err := e.Get(ids[1])
	require.NoError(t, err, "unreviewed: kept")
	assert.Equal(t, Dead, info.State)
}

func TestCompactDeadlinesDropsStaleEntriesOfALargeHeap(t *testing.T) {
	e, fake := openFake(t, "", Options{})
	dl := e.defaultDelivery.sched.Deadlines()
	at := fake.Now().Add(time.Hour).UnixNano()
	for i := range sched.DefaultCompactAbove + 10 {
		dl.Push(at, sched.Entry{ID: uint64(i % 8), Gen: 7}) // no record has generation 7
	}
	e.compactDeadlines()
	assert.Zero(t, dl.Len())

	dl.Push(at, sched.Entry{ID: 1, Gen: 7})
	e.compactDeadlines()
	assert.Equal(t, 1, dl.Len(), "a small heap is left to lazy deletion")
}

func TestCheckpointIfDueRunsOncePastCheckpointBytes(t *testing.T) {
	e, _ := openFake(t, t.TempDir(), Options{CheckpointBytes: 64 << 10})
	payload := bytes.Repeat([]byte{'x'}, 1024)
	for e.log.Size() <= 64<<10 {
		_, err := e.TryEnqueue(Message{Payload: payload})
		require.NoError(t, err)
		d, ok := e.TryDequeue()
		require.True(t, ok)
		require.NoError(t, e.Ack(d.Lease))
	}
	e.checkpointIfDue()
	assert.Less(t, e.log.Size(), int64(64<<10), "the checkpoint let the log drop what it covers")
	before := e.log.Size()
	e.checkpointIfDue()
	assert.Equal(t, before, e.log.Size(), "below the threshold nothing happens")
}

func TestScanLeasesExpiresDueLeasesAndSaysWhenToLookAgain(t *testing.T) {
	e, fake := openFake(t, "", Options{LeaseTimeout: 10 * time.Second})
	_, err := e.TryEnqueue(Message{})
	require.NoError(t, err)
	_, err = e.TryEnqueue(Message{})
	require.NoError(t, err)
	first, ok := e.TryDequeue()
	require.True(t, ok)
	fake.Advance(4 * time.Second)
	second, ok := e.TryDequeue()
	require.True(t, ok)

	now := fake.Now().UnixNano()
	next := e.scanLeases(now)
	assert.Equal(t, now+int64(6*time.Second), next, "the earliest lease ends in 6s")

	later := now + int64(6*time.Second)
	next = e.scanLeases(later)
	assert.ErrorIs(t, e.Ack(first.Lease), ErrStaleLease, "the first lease expired")
	info, err := e.Get(first.ID)
	require.NoError(t, err)
	assert.Equal(t, classify.Timeout, info.LastCategory)
	assert.Equal(t, later+int64(4*time.Second), next, "the second lease ends 4s later")
	require.NoError(t, e.Ack(second.Lease), "the second lease is still valid")
}

func TestLogDeadLettersSummarisesOncePerPass(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &buf, mu: &mu}, nil))
	e, _ := openFake(t, "", Options{Logger: logger})
	for range 3 {
		_, err := e.TryEnqueue(Message{})
		require.NoError(t, err)
		d, ok := e.TryDequeue()
		require.True(t, ok)
		require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("bad"), classify.Permanent)))
	}
	e.hk.logDeadLetters()
	e.hk.logDeadLetters()
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 1, bytes.Count(buf.Bytes(), []byte("messages dead-lettered")), buf.String())
	assert.Contains(t, buf.String(), "count=3")
	assert.Contains(t, buf.String(), "permanent=3")
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestNotifyDeadLettersCallsOnDeadLetterOffTheCallersGoroutine(t *testing.T) {
	got := make(chan DeadLetter, 1)
	e, _ := openFake(t, "", Options{OnDeadLetter: func(d DeadLetter) { got <- d }})
	id, err := e.Enqueue(context.Background(), Message{Key: "k"})
	require.NoError(t, err)
	d, ok := e.TryDequeue()
	require.True(t, ok)
	require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("bad"), classify.Permanent)))
	select {
	case dl := <-got:
		assert.EqualValues(t, id, dl.ID)
		assert.Equal(t, "k", dl.Key)
	case <-time.After(5 * time.Second):
		t.Fatal("OnDeadLetter was not called")
	}
}

func TestSweepKeysForgetsIdleKeysOnly(t *testing.T) {
	e, _ := openFake(t, "", Options{KeyPolicy: func(string) KeyPolicy { return KeyPolicy{MaxInFlight: 4} }})
	for i := range 100 {
		_, err := e.TryEnqueue(Message{Key: fmt.Sprintf("user-%d", i)})
		require.NoError(t, err)
	}
	busy, err := e.TryEnqueue(Message{Key: "busy"})
	require.NoError(t, err)
	require.NoError(t, e.PauseKey("paused", time.Time{}))
	for {
		d, ok := e.TryDequeue()
		if !ok {
			break
		}
		if d.ID != busy {
			require.NoError(t, e.Ack(d.Lease))
		}
	}
	assert.Equal(t, 100, e.keys.sweep(), "the acked keys are idle")
	assert.NotNil(t, e.keys.lookup("busy"), "a key with a lease stays")
	assert.NotNil(t, e.keys.lookup("paused"), "a paused key stays")
	// A key comes back as new after its state was dropped.
	_, err = e.TryEnqueue(Message{Key: "user-7"})
	require.NoError(t, err)
	require.NotNil(t, e.keys.lookup("user-7"))
	assert.EqualValues(t, 1, e.keys.lookup("user-7").live.Load())
}
