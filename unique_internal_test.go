package ringwal

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Under a unique mode too, a repeat of a DedupID whose first enqueue is
// still being logged waits for it: it is not answered (refused, or a
// Replace) before the first is durable, and when the first's write
// fails, the repeat is the message. Dedup is off (a negative window):
// the unique modes are no window.
func TestUniqueAnswerWaitsForFirstToBeDurable(t *testing.T) {
	for _, m := range []Message{
		{DedupID: "imp-7", Unique: UniqueLive, Payload: []byte("repeat")},
		{DedupID: "imp-7", Unique: UniqueQueued, Replace: true, Payload: []byte("repeat")},
	} {
		t.Run(m.Unique.String(), func(t *testing.T) {
			e := openEngine(t, t.TempDir(), Options{DedupWindow: -1})
			require.NoError(t, e.requireUnique())
			// Play the first enqueue by hand, up to its log write.
			mine := newDedupLogging()
			first := Message{DedupID: "imp-7", Unique: m.Unique, Payload: []byte("first")}
			now, slot, id, err := e.claimWaiting(context.Background(), &first, &e.defaultQueue, nil, true)
			require.NoError(t, err)
			_, dup, busy := e.dedup.reserve(first.DedupID, id, now, 0, first.Unique, 0, mine)
			require.False(t, dup)
			require.Nil(t, busy)

			type answer struct {
				id  ID
				err error
			}
			repeat := make(chan answer, 1)
			go func() {
				id, err := e.Enqueue(context.Background(), m)
				repeat <- answer{id, err}
			}()
			var a answer
			select {
			case a = <-repeat:
				t.Errorf("repeat answered (%d, %v) before the first was logged", a.id, a.err)
			case <-time.After(50 * time.Millisecond):
			}
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
			assert.Equal(t, 1, e.dedup.len())
		})
	}
}

// A unique entry goes when its message leaves the slab, so the index
// does not grow with messages done; a window entry stays for its window.
func TestUniqueEntryGoesWithItsMessage(t *testing.T) {
	e := openEngine(t, "", Options{DedupWindow: time.Hour})
	for i, u := range []Unique{UniqueWindow, UniqueQueued, UniqueLive} {
		_, err := e.TryEnqueue(Message{DedupID: u.String(), Unique: u})
		require.NoError(t, err)
		d, ok := e.TryDequeue()
		require.True(t, ok)
		require.NoError(t, e.Ack(d.Lease))
		assert.Equal(t, 1, e.dedup.len(), "after %d acks: the window's entry only", i+1)
	}
}
