package admin

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

// qstats is a Stats whose queues have these totals (enqueued, acked,
// dead-lettered), by name.
func qstats(qs map[string][3]uint64) ringwal.Stats {
	var s ringwal.Stats
	for name, n := range qs {
		s.Queues = append(s.Queues, ringwal.QueueStats{Name: name, Enqueued: n[0], Acked: n[1], DeadLettered: n[2]})
	}
	return s
}

// Each queue's rates come from samples of the last minute, at most one
// every queueSampleEvery; a queue declared since the older sample counts
// from zero, a counter that went back (a queue deleted and declared
// again) reads 0, and only the first maxRateQueues queues are sampled.
func TestSamplerQueueRates(t *testing.T) {
	var sm sampler
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	_, _, ok := sm.queueRates()
	require.False(t, ok, "no sample")
	sm.addQueues(t0, qstats(map[string][3]uint64{"": {10, 0, 0}, "a": {100, 50, 5}, "gone": {9, 9, 9}}))
	sm.addQueues(t0.Add(time.Second), qstats(map[string][3]uint64{"a": {1e6, 0, 0}})) // too soon: dropped
	_, _, ok = sm.queueRates()
	require.False(t, ok, "one sample")
	// A sample every 5s for two minutes: a gets 10/s enqueued, 5/s acked.
	for i := 1; i <= 24; i++ {
		sm.addQueues(t0.Add(time.Duration(i)*queueSampleEvery), qstats(map[string][3]uint64{
			"": {10, 0, 0}, "a": {100 + uint64(50*i), 50 + uint64(25*i), 5}, "gone": {0, 0, 0}, "new": {uint64(5 * i), 0, 0}}))
	}
	rs, span, ok := sm.queueRates()
	require.True(t, ok)
	assert.Equal(t, time.Minute, span)
	assert.Equal(t, queueRate{Enqueued: 10, Acked: 5}, rs["a"])
	assert.Equal(t, queueRate{}, rs[""])
	assert.Equal(t, queueRate{}, rs["gone"], "counters that went back read 0")
	assert.Equal(t, queueRate{Enqueued: 1}, rs["new"])

	var many sampler
	big := map[string][3]uint64{}
	for i := 0; i < maxRateQueues+50; i++ {
		big[fmt.Sprintf("q%05d", i)] = [3]uint64{1, 1, 1}
	}
	s := qstats(big)
	many.addQueues(t0, s)
	assert.Len(t, many.ring[0].queues, maxRateQueues, "a sample holds at most maxRateQueues queues")
}
