package ringwal

// "Log, then make visible, then wait": what a mutation makes visible
// before its record is durable, seen with the log writer held.

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/internal/wal"
)

// holdWriter makes e's log writer stop after its next batch until the
// returned release is called: records appended meanwhile wait in memory.
func holdWriter(t *testing.T, e *Engine) (release func()) {
	t.Helper()
	held, gate := make(chan struct{}), make(chan struct{})
	first := true
	hook := func(wal.BatchInfo) {
		if first {
			first = false
			close(held)
			<-gate
		}
	}
	e.afterBatchForTest.Store(&hook)
	// A batch of its own: once it is written the writer waits at the gate
	// (whether before or after it releases that batch's waiter).
	go func() { _, _ = e.TryEnqueue(Message{Payload: []byte("gate")}) }()
	<-held
	released := false
	release = func() {
		if !released {
			released = true
			close(gate)
		}
	}
	t.Cleanup(release)
	return release
}

// drain takes every deliverable message and returns their payloads.
func drain(e *Engine) []string {
	var got []string
	for {
		d, ok := e.TryDequeue()
		if !ok {
			return got
		}
		got = append(got, string(d.Message.Payload))
	}
}

// An ordered key's next message goes out only once the removal of the
// head (a Cancel, a dead-lettering) is durable: after a crash the head
// cannot come back behind a successor that was already handled.
func TestOrderedKeyReleasesNextOnlyOnceHeadRemovalIsDurable(t *testing.T) {
	cases := []struct {
		name   string
		remove func(e *Engine, head ID, lease Lease) error
	}{
		{"cancel", func(e *Engine, head ID, _ Lease) error { return e.Cancel(head) }},
		{"dead-letter", func(e *Engine, _ ID, l Lease) error {
			return e.Nack(l, classify.Mark(errors.New("rejected"), classify.Permanent))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := openCore(t, t.TempDir(), Options{KeyPolicy: func(string) KeyPolicy { return KeyPolicy{Ordered: true} }})
			head, err := e.TryEnqueue(Message{Key: "o", Payload: []byte("head")})
			require.NoError(t, err)
			_, err = e.TryEnqueue(Message{Key: "o", Payload: []byte("next")})
			require.NoError(t, err)
			d, ok := e.TryDequeue()
			require.True(t, ok)
			require.Equal(t, head, d.ID)

			release := holdWriter(t, e)
			drain(e)
			done := make(chan error, 1)
			go func() { done <- tc.remove(e, head, d.Lease) }()
			// The removal's record waits in memory: the head may still come
			// back, so its successor must not go out.
			for i := 0; i < 50; i++ {
				assert.NotContains(t, drain(e), "next", "the next message went out before the head's removal was durable")
				time.Sleep(time.Millisecond)
			}
			release()
			require.NoError(t, <-done)
			require.Eventually(t, func() bool {
				d, ok := e.TryDequeue()
				return ok && string(d.Message.Payload) == "next"
			}, 10*time.Second, time.Millisecond)
		})
	}
}

// A timer entry that outlives 2^32 publishes of its slot (a long delay on
// a busy slot) does not fire on the message that then holds the slot at
// the same generation.
func TestTimerDoesNotFireOnALaterMessageOfItsSlot(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	e := openCore(t, "", Options{Clock: fake, MaxMessages: 8})
	first, err := e.TryEnqueue(Message{Payload: []byte("first"), Delay: time.Hour})
	require.NoError(t, err)
	slot, w, found, ok := e.slab.ownID(first, liveStates)
	require.True(t, found && ok)
	r := e.slab.at(slot)
	e.slab.at(slot).putBack(w)
	require.NoError(t, e.Cancel(first))
	// Play the slot's generation round to one before first's (2^32
	// publishes later), free.
	r.word.Store(uint64(makeWord(w.gen()-1, 0, stFree)))
	var later ID
	for {
		id, err := e.TryEnqueue(Message{Payload: []byte("later"), Delay: 2 * time.Hour})
		require.NoError(t, err)
		if s, _, found, _ := e.slab.ownID(id, 0); found && s == slot {
			later = id
			break
		}
		require.NoError(t, e.Cancel(id))
	}
	require.Equal(t, w.gen(), r.load().gen(), "later holds the slot at first's generation")
	// A sentinel due just after first's timer: once it is pending, the
	// timer goroutine has handled first's entry.
	sentinel, err := e.TryEnqueue(Message{Payload: []byte("sentinel"), Delay: time.Hour + time.Millisecond})
	require.NoError(t, err)
	fake.Advance(time.Hour + time.Second)
	require.Eventually(t, func() bool {
		info, err := e.Get(sentinel)
		return err == nil && info.State == Pending
	}, 10*time.Second, time.Millisecond)
	info, err := e.Get(later)
	require.NoError(t, err)
	assert.Equal(t, Delayed, info.State, "first's timer made a later message of its slot due an hour early")
}

// A message redriven while a checkpoint runs, so that the snapshot sees
// it live again but its Redrive's records land after the snapshot's cut,
// and then dead-lettered again, is a dead letter after a reopen (replay
// once took the Redrive for one logged ahead of its dead-letter record,
// and dropped the later dead-lettering).
func TestRedriveAcrossACheckpointThenDeadAgainStaysDead(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	defer func() { _ = e.Close() }()
	permanent := classify.Mark(errors.New("rejected"), classify.Permanent)
	id, err := e.TryEnqueue(Message{Payload: []byte("x")})
	require.NoError(t, err)
	d, ok := e.TryDequeue()
	require.True(t, ok)
	require.NoError(t, e.Nack(d.Lease, permanent))

	release := holdWriter(t, e)
	redriven := make(chan error, 1)
	go func() { redriven <- e.Redrive(id) }()
	// The Redrive takes it out of the store, and its records wait in the
	// batch being filled: whenever the checkpoint takes its cut, it is the
	// held batch's, before the Redrive's; the snapshot, taken once the
	// writer goes on, sees the message live.
	require.Eventually(t, func() bool { return e.dead.Len() == 0 }, 10*time.Second, 100*time.Microsecond)
	checkpointed := make(chan error, 1)
	go func() { checkpointed <- e.Checkpoint() }()
	release()
	require.NoError(t, <-redriven)
	require.NoError(t, <-checkpointed)

	drain := func() Delivery {
		for {
			d, ok := e.TryDequeue()
			require.True(t, ok)
			if d.ID == id {
				return d
			}
			require.NoError(t, e.Ack(d.Lease))
		}
	}
	require.NoError(t, e.Nack(drain().Lease, permanent))
	require.NoError(t, e.Close())

	e, err = Open(dir, Options{})
	require.NoError(t, err)
	info, err := e.Get(id)
	require.NoError(t, err)
	assert.Equal(t, Dead, info.State, "%+v", info)
}
