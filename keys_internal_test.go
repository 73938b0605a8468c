package ringwal

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/classify"
)

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
			e := openEngine(t, t.TempDir(), Options{KeyPolicy: func(string) KeyPolicy { return KeyPolicy{Ordered: true} }})
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
