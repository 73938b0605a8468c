package ringwal

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHotPathAllocatesNothing: enqueue, dequeue and ack of a memory
// engine allocate nothing per message once warm, with and without the
// features a message may not use (a nil OnEnqueue hook among them: a hook
// that takes the message's address must not move every caller's message
// to the heap). The benchmarks say how fast; this says it stays at zero.
func TestHotPathAllocatesNothing(t *testing.T) {
	e := openEngine(t, "", Options{TierCapacity: 1 << 12, MaxMessages: 1 << 13})
	ctx := context.Background()
	payload := make([]byte, 64)
	paths := []struct {
		name string
		run  func()
	}{
		{"Enqueue Dequeue Ack", func() {
			_, err := e.Enqueue(ctx, Message{Payload: payload})
			require.NoError(t, err)
			d, err := e.Dequeue(ctx)
			require.NoError(t, err)
			require.NoError(t, e.Ack(d.Lease))
		}},
		{"TryEnqueue TryDequeue Ack with a key", func() {
			_, err := e.TryEnqueue(Message{Payload: payload, Key: "k", Priority: High})
			require.NoError(t, err)
			d, ok := e.TryDequeue()
			require.True(t, ok)
			require.NoError(t, e.Ack(d.Lease))
		}},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			for range 1000 { // warm: the slab and the rings grow once
				p.run()
			}
			assert.Zero(t, testing.AllocsPerRun(1000, p.run))
		})
	}
}
