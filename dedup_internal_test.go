package ringwal

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A repeat of a DedupID whose first enqueue is still being logged waits
// for it: answered ErrDuplicate only once the first is durable, and
// enqueued itself when the first's write fails.
func TestDuplicateAnswerWaitsForFirstToBeDurable(t *testing.T) {
	e := openEngine(t, t.TempDir(), Options{DedupWindow: time.Hour})
	// Play the first enqueue by hand, up to its log write: reserve its
	// DedupID as an enqueue does, and hold the write.
	mine := newDedupLogging()
	m := Message{DedupID: "pay-7", Payload: []byte("first")}
	now, slot, id, err := e.claimWaiting(context.Background(), &m, &e.defaultQueue, nil, true)
	require.NoError(t, err)
	_, dup, busy := e.dedup.reserve(m.DedupID, id, now, int64(time.Hour), UniqueWindow, 0, mine)
	require.False(t, dup)
	require.Nil(t, busy)

	type answer struct {
		id  ID
		err error
	}
	repeat := make(chan answer, 1)
	go func() {
		id, err := e.Enqueue(context.Background(), Message{DedupID: "pay-7", Payload: []byte("repeat")})
		repeat <- answer{id, err}
	}()
	var a answer
	select {
	case a = <-repeat:
		t.Errorf("repeat answered (%d, %v) before the first was logged", a.id, a.err)
	case <-time.After(50 * time.Millisecond):
	}
	// The first's write fails: the repeat is the message now.
	e.slab.at(slot).commit(e.counts)
	e.abortClaim(slot, mine)
	if !t.Failed() {
		a = <-repeat
	}
	require.NoError(t, a.err)
	require.NotEqual(t, id, a.id)
	info, err := e.Get(a.id)
	require.NoError(t, err)
	assert.Equal(t, []byte("repeat"), info.Message.Payload)

	// And once a first is durable, a repeat is answered with its ID.
	again, err := e.Enqueue(context.Background(), Message{DedupID: "pay-7"})
	require.ErrorIs(t, err, ErrDuplicate)
	assert.Equal(t, a.id, again)
}
