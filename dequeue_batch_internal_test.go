package ringwal

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/clock"
)

// A deadline a day away, or a deadline entry left behind by a message
// already gone, does not turn DequeueBatch's one-pass take off: only a
// deadline the scheduler could serve now does.
func TestTakeBatchIgnoresDeadlinesNotDue(t *testing.T) {
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	e := openEngine(t, "", Options{Clock: clock.NewFake(start)})
	ctx := context.Background()
	_, err := e.Enqueue(ctx, Message{Deadline: start.Add(24 * time.Hour)})
	require.NoError(t, err)
	d, err := e.Dequeue(ctx)
	require.NoError(t, err)
	require.NoError(t, e.Ack(d.Lease)) // its heap entry stays, stale, until it surfaces
	for range 10 {
		_, err := e.Enqueue(ctx, Message{})
		require.NoError(t, err)
	}
	require.NotZero(t, e.defaultDelivery.sched.Deadlines().Len(), "the stale entry is still in the heap")
	var refs [64]ref
	n := e.takeBatch(&e.defaultDelivery, refs[:])
	assert.Equal(t, 10, n, "one pass takes the tier's ten")
	for _, rf := range refs[:n] {
		r := e.slab.at(rf.slot)
		require.True(t, r.own(rf.gen, stPending))
		require.True(t, e.lease(&e.defaultDelivery, rf.slot, r, &Delivery{}, nil))
	}
}
