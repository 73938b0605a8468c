package ringwal_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
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
