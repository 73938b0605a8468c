package ringwal_test

// Acks that do not wait for the log one by one: Run's workers append their
// acks without waiting.

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

// live is the number of messages an engine still holds.
func live(e *ringwal.Engine) int {
	s := e.Stats()
	return s.Pending + s.Delayed + s.Leased + s.Held
}

// TestRunAcksSurviveClose: Run's workers do not wait for their acks to
// reach the log, but Close writes them: after a clean Close and a reopen,
// nothing a handler acked is delivered again, in every mode.
func TestRunAcksSurviveClose(t *testing.T) {
	const n = 2000
	for _, mode := range []ringwal.Durability{ringwal.Write, ringwal.Fsync, ringwal.Buffered} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			e, err := ringwal.Open(dir, ringwal.Options{Durability: mode})
			require.NoError(t, err)
			msgs := make([]ringwal.Message, n)
			for i := range msgs {
				msgs[i] = ringwal.Message{Payload: []byte("x")}
			}
			_, err = e.EnqueueBatch(ctxBG, msgs)
			require.NoError(t, err)

			var handled atomic.Int64
			all := make(chan struct{})
			ran := make(chan error, 1)
			go func() {
				ran <- e.Run(ctxBG, 4, func(context.Context, ringwal.Delivery) error {
					if handled.Add(1) == n {
						close(all)
					}
					return nil
				})
			}()
			<-all
			// The last handlers have returned; their workers' acks may still
			// be on their way to the log. Close waits for the workers, then
			// writes (and syncs) everything appended.
			require.NoError(t, e.Close())
			require.NoError(t, <-ran)

			e2 := open(t, dir, ringwal.Options{Durability: mode})
			assert.Zero(t, live(e2), "messages acked by a handler came back after a clean Close")
			_, ok := e2.TryDequeue()
			assert.False(t, ok, "a handler-acked message was delivered again")
			assert.Equal(t, int64(n), handled.Load(), "each message handled once")
		})
	}
}
