package ringwal

import (
	"context"
	"errors"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
)

// historyEngine opens a memory engine on a fake clock that the test never
// advances: the housekeeper's maintenance never runs, and the test calls
// the sampler itself with the times it wants (as the timer goroutine
// would, one call at a time).
func historyEngine(t *testing.T) (*Engine, time.Time) {
	t.Helper()
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	e := openEngine(t, "", Options{Clock: clock.NewFake(start)})
	return e, start
}

func TestHistorySampleCountsWhatHappenedInItsInterval(t *testing.T) {
	e, start := historyEngine(t)
	ctx := context.Background()
	for range 5 {
		_, err := e.Enqueue(ctx, Message{})
		require.NoError(t, err)
	}
	for range 3 {
		d, ok := e.TryDequeue()
		require.True(t, ok)
		require.NoError(t, e.Ack(d.Lease))
	}
	d, ok := e.TryDequeue()
	require.True(t, ok)
	require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("no"), classify.Permanent)))

	e.sampleHistory(start.Add(9 * time.Second).UnixNano())
	assert.Empty(t, e.History(), "no sample before its interval ends")
	e.sampleHistory(start.Add(10 * time.Second).UnixNano())
	h := e.History()
	require.Len(t, h, 1)
	got := h[0]
	assert.Equal(t, start, got.Start)
	assert.Equal(t, 10*time.Second, got.Length)
	assert.Equal(t, uint64(5), got.Enqueued)
	assert.Equal(t, uint64(3), got.Acked)
	assert.Equal(t, uint64(1), got.DeadLettered)
	assert.Equal(t, map[classify.Category]uint64{classify.Permanent: 1}, got.DeadLetteredByCategory)
	assert.Equal(t, 1, got.Live)
	assert.Equal(t, 1, got.Dead)
	assert.False(t, got.Counted, "nobody asked for Stats: the counts by state are not kept, and history does not turn them on")
	assert.False(t, e.counts.on.Load(), "sampling turned the hot path's counting on")

	// Once somebody asked for Stats, samples carry the counts by state.
	_ = e.Stats()
	e.sampleHistory(start.Add(20 * time.Second).UnixNano())
	h = e.History()
	require.Len(t, h, 2)
	got = h[1]
	assert.Equal(t, start.Add(10*time.Second), got.Start)
	assert.Zero(t, got.Enqueued, "nothing happened in the second interval")
	assert.True(t, got.Counted)
	assert.Equal(t, 1, got.Pending)
	assert.Equal(t, 1, got.Live)
}

func TestHistoryKeepsADayAtCoarserResolutions(t *testing.T) {
	e, start := historyEngine(t)
	ctx := context.Background()
	total := 0
	// 25 hours, one message every 10 s: each sample of any length counts
	// one per 10 s of it.
	for at := 10 * time.Second; at <= 25*time.Hour; at += 10 * time.Second {
		_, err := e.Enqueue(ctx, Message{})
		require.NoError(t, err)
		d, ok := e.TryDequeue()
		require.True(t, ok)
		require.NoError(t, e.Ack(d.Lease))
		total++
		e.sampleHistory(start.Add(at).UnixNano())
	}
	h := e.History()
	require.NotEmpty(t, h)
	levels := map[time.Duration]int{}
	for i, s := range h {
		levels[s.Length]++
		assert.Equal(t, uint64(s.Length/(10*time.Second)), s.Enqueued, "sample %d (%v long) counts one per 10 s", i, s.Length)
		if i > 0 {
			prev := h[i-1]
			assert.Equal(t, prev.Start.Add(prev.Length), s.Start, "sample %d follows the one before without gap or overlap", i)
			assert.GreaterOrEqual(t, prev.Length, s.Length, "coarser samples come first")
		}
	}
	assert.Equal(t, map[time.Duration]int{10 * time.Second: 90, time.Minute: 105, 10 * time.Minute: 132}, levels,
		"15 minutes of 10 s samples, the rest of 2 hours at 1 minute, the rest of the day at 10 minutes")
	last := h[len(h)-1]
	covered := last.Start.Add(last.Length).Sub(h[0].Start)
	assert.Equal(t, 24*time.Hour, covered, "a day is covered")
	assert.Equal(t, start.Add(25*time.Hour), last.Start.Add(last.Length), "the newest sample ends at the last sampling")
	t.Logf("%d samples cover %v; a point is %d bytes, %d points a series at most (%d KiB)",
		len(h), covered, unsafe.Sizeof(point{}), historyPoints(), historyPoints()*int(unsafe.Sizeof(point{}))/1024)
}

func historyPoints() int {
	n := 0
	for _, r := range resolutions {
		n += r.keep
	}
	return n
}

func TestHistoryGapGivesOneSample(t *testing.T) {
	e, start := historyEngine(t)
	e.sampleHistory(start.Add(10 * time.Second).UnixNano())
	e.sampleHistory(start.Add(3*time.Hour + 5*time.Second).UnixNano()) // the process was stopped
	h := e.History()
	require.Len(t, h, 2)
	assert.Equal(t, start.Add(3*time.Hour-10*time.Second), h[1].Start, "the sample after a gap is its last interval")
	e.sampleHistory(start.Add(3*time.Hour + 9*time.Second).UnixNano())
	assert.Len(t, e.History(), 2, "the next one is due 10 s after it")
}

// A deleted queue's traffic stays its own: the default queue's history,
// the engine's less the named queues', must not take it over when the
// named queue goes.
func TestDefaultQueueHistoryKeepsOutADeletedQueue(t *testing.T) {
	e, start := historyEngine(t)
	ctx := context.Background()
	mail := e.Queue("mail")
	for range 50 {
		_, err := mail.Enqueue(ctx, Message{})
		require.NoError(t, err)
		d, ok := mail.TryDequeue()
		require.True(t, ok)
		require.NoError(t, e.Ack(d.Lease))
	}
	e.sampleHistory(start.Add(10 * time.Second).UnixNano())
	require.NoError(t, e.DeleteQueue("mail"))
	e.sampleHistory(start.Add(20 * time.Second).UnixNano())
	for _, p := range e.QueueHistory("") {
		assert.Zero(t, p.Enqueued, "default queue's sample at %v", p.Start)
		assert.Zero(t, p.Acked, "default queue's sample at %v", p.Start)
	}
}

func TestQueueHistoryFollowsEachQueueAndTheDefault(t *testing.T) {
	e, start := historyEngine(t)
	ctx := context.Background()
	for _, q := range []string{"", "mail", "mail", "sms"} {
		_, err := e.Enqueue(ctx, Message{Queue: q})
		require.NoError(t, err)
	}
	for _, counted := range []bool{false, true} {
		if counted {
			_ = e.Stats()
		}
		at := start.Add(10 * time.Second)
		if counted {
			at = start.Add(20 * time.Second)
		}
		e.sampleHistory(at.UnixNano())
		for q, want := range map[string]int{"": 1, "mail": 2, "sms": 1} {
			h := e.QueueHistory(q)
			require.NotEmpty(t, h, "queue %q", q)
			last := h[len(h)-1]
			assert.Equal(t, want, last.Live, "queue %q live (counted %v)", q, counted)
			if !counted {
				assert.Equal(t, uint64(want), last.Enqueued, "queue %q enqueued", q)
			} else {
				assert.Equal(t, want, last.Pending, "queue %q pending", q)
			}
		}
	}
	assert.Nil(t, e.QueueHistory("never"), "a queue never seen has no history")
}

func TestHistoryWaitP95IsTheIntervals(t *testing.T) {
	e, start := historyEngine(t)
	e.metrics.observeWait(int64(3 * time.Millisecond))
	e.sampleHistory(start.Add(10 * time.Second).UnixNano())
	e.sampleHistory(start.Add(20 * time.Second).UnixNano())
	e.metrics.observeWait(int64(100 * time.Microsecond))
	e.sampleHistory(start.Add(30 * time.Second).UnixNano())
	h := e.History()
	require.Len(t, h, 3)
	assert.InDelta(t, float64(3*time.Millisecond), float64(h[0].WaitP95), float64(2*time.Millisecond))
	assert.Zero(t, h[1].WaitP95, "nothing waited in the second interval")
	assert.Less(t, h[2].WaitP95, 200*time.Microsecond, "the third interval's own wait, not the whole run's")
}

func TestHousekeeperSamplesHistory(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	e := openEngine(t, "", Options{Clock: fake})
	_, err := e.Enqueue(context.Background(), Message{})
	require.NoError(t, err)
	for range 10 {
		fake.Advance(time.Second) // the maintenance pass runs once a second
	}
	require.Eventually(t, func() bool { return len(e.History()) == 1 }, 10*time.Second, time.Millisecond,
		"the maintenance pass takes a sample every 10 s")
	assert.Equal(t, uint64(1), e.History()[0].Enqueued)
}
