package ringwal

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A reader that holds a pending message for a moment (Get here) does not
// make its deadline-heap entry look stale: the urgent message still goes
// out first.
func TestBriefReaderKeepsADeadline(t *testing.T) {
	e := openEngine(t, "", Options{})
	for i := 0; i < 5; i++ {
		_, err := e.TryEnqueue(Message{Payload: []byte("plain")})
		require.NoError(t, err)
	}
	urgent, err := e.TryEnqueue(Message{Payload: []byte("urgent"), Deadline: time.Now().Add(-time.Second)})
	require.NoError(t, err)
	slot, prev, found, ok := e.slab.ownID(urgent, liveStates)
	require.True(t, found && ok)
	// While a reader owns it, the scheduler considers the entry.
	assert.True(t, e.validEntry(entryFor(ref{slot: slot, gen: prev.gen()}, urgent, 0)), "a reader's hold must not make the entry stale")
	e.slab.at(slot).putBack(prev)
	d, ok := e.TryDequeue()
	require.True(t, ok)
	assert.Equal(t, urgent, d.ID, "the urgent message goes out first")
}
