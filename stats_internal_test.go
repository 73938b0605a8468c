package ringwal

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A claim that turns out a repeat takes an ID before it is counted unused;
// a Stats read in between must not count it as enqueued, or the
// high-water mark that keeps Enqueued monotonic would keep the lead.
func TestStatsEnqueuedNeverLeadsOnAClaimInFlight(t *testing.T) {
	e := openIdleTest(t, Options{})
	for range 3 {
		_, err := e.Enqueue(context.Background(), Message{})
		require.NoError(t, err)
	}
	d, ok := e.TryDequeue()
	require.True(t, ok)
	require.NoError(t, e.Ack(d.Lease))

	e.nextID.Add(1) // a claim in flight, as claim takes its ID
	assert.Equal(t, uint64(3), e.Stats().Enqueued, "read while the claim is in flight")
	e.ctr.unused.Add(1) // it turned out a repeat
	assert.Equal(t, uint64(3), e.Stats().Enqueued, "at rest")
}
