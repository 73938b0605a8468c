package ringwal

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/clock"
)

// Messages that become ready while their tier's ring is full (here:
// delayed messages all coming due at once) wait in the spill queue and
// still come out in order, each exactly once.
func TestSpillKeepsOrderAndLosesNothing(t *testing.T) {
	fake := clock.NewFake(time.Time{})
	e := openEngine(t, "", Options{Clock: fake, TierCapacity: 4, MaxMessages: 4096})
	const n = 3000
	ids := make([]ID, n)
	var err error
	for i := range ids {
		ids[i], err = e.Enqueue(context.Background(), Message{Delay: time.Second})
		require.NoError(t, err)
	}
	fake.Advance(time.Second + time.Millisecond)
	require.Eventually(t, func() bool { return e.Stats().Pending == n }, 5*time.Second, time.Millisecond)
	assert.NotZero(t, e.defaultDelivery.spilled.Load(), "the ring of 4 overflowed into the spill queue")
	for i := 0; i < n; i++ {
		d, ok := e.TryDequeue()
		require.True(t, ok, "message %d of %d", i, n)
		require.Equal(t, ids[i], d.ID, "FIFO order through the spill queue")
		require.NoError(t, e.Ack(d.Lease))
	}
	_, ok := e.TryDequeue()
	assert.False(t, ok)
	assert.Zero(t, e.defaultDelivery.spilled.Load())
}
