package ringwal

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/clock"
)

// A timer entry that outlives 2^32 publishes of its slot (a long delay on
// a busy slot) does not fire on the message that then holds the slot at
// the same generation.
func TestTimerDoesNotFireOnALaterMessageOfItsSlot(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	e := openEngine(t, "", Options{Clock: fake, MaxMessages: 8})
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
