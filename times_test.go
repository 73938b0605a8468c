package ringwal_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/dlq"
	"github.com/ringwal/ringwal/internal/enginetest"
)

// The engine keeps instants as int64 Unix nanoseconds (1677-09-21 to
// 2262-04-11); time.Time.UnixNano wraps outside that span. These tests
// protect the rule that an instant the API takes, or one it derives from
// now plus a duration the caller gives, is refused with ErrInvalid outside
// the span instead of wrapping around.

var (
	lastInstant  = time.Unix(0, math.MaxInt64)
	firstInstant = time.Unix(0, math.MinInt64)
)

func TestMessageTimesOutsideTheRepresentableRangeAreInvalid(t *testing.T) {
	year := func(y int) time.Time { return time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC) }
	cases := []struct {
		name string
		m    ringwal.Message
		ok   bool
	}{
		{"Deadline in 2263", ringwal.Message{Deadline: year(2263)}, false},
		{"Deadline one ns past the last instant", ringwal.Message{Deadline: lastInstant.Add(1)}, false},
		{"Deadline far in the future", ringwal.Message{Deadline: time.Unix(1<<62, 0)}, false},
		{"Deadline in 1677", ringwal.Message{Deadline: year(1677)}, false},
		{"Deadline one ns before the first instant", ringwal.Message{Deadline: firstInstant.Add(-1)}, false},
		{"Deadline at the Unix epoch (stored as none)", ringwal.Message{Deadline: time.Unix(0, 0)}, false},
		{"Delay past the last instant", ringwal.Message{Delay: math.MaxInt64}, false},
		{"TTL past the last instant", ringwal.Message{TTL: math.MaxInt64}, false},
		{"Deadline at the last instant", ringwal.Message{Deadline: lastInstant}, true},
		{"Deadline at the first instant", ringwal.Message{Deadline: firstInstant}, true},
		{"Deadline in 1900", ringwal.Message{Deadline: year(1900)}, true},
		{"Delay of a century", ringwal.Message{Delay: 100 * 365 * 24 * time.Hour}, true},
		{"TTL of a century", ringwal.Message{TTL: 100 * 365 * 24 * time.Hour}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := enginetest.Open(t, "", ringwal.Options{})
			_, err := e.TryEnqueue(tc.m)
			if tc.ok {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, ringwal.ErrInvalid)
			_, err = e.EnqueueBatch(context.Background(), []ringwal.Message{{}, tc.m})
			assert.ErrorIs(t, err, ringwal.ErrInvalid, "EnqueueBatch")
			assert.Zero(t, e.Stats().Pending+e.Stats().Delayed, "a refused message is not enqueued")
		})
	}
}

func TestADeadlinePastTheRangeIsNotServedBeforeTodays(t *testing.T) {
	e := enginetest.Open(t, "", ringwal.Options{})
	_, err := e.TryEnqueue(ringwal.Message{Deadline: time.Date(2263, 1, 1, 0, 0, 0, 0, time.UTC), Payload: []byte("2263")})
	require.ErrorIs(t, err, ringwal.ErrInvalid)
	_, err = e.TryEnqueue(ringwal.Message{Deadline: time.Now(), Payload: []byte("today")})
	require.NoError(t, err)
	d := enginetest.Dequeue(t, e)
	assert.Equal(t, "today", string(d.Message.Payload))
}

func TestPauseUntilPastTheRangeIsInvalid(t *testing.T) {
	far := time.Date(2611, 1, 1, 0, 0, 0, 0, time.UTC)
	// An hour before the instant far's UnixNano wraps to (in 2026): a
	// wrapped pause would be accepted and end within the hour.
	fc := clock.NewFake(time.Unix(0, far.UnixNano()).Add(-time.Hour))
	e := enginetest.Open(t, "", ringwal.Options{Clock: fc})
	assert.ErrorIs(t, e.PauseKey("k", far), ringwal.ErrInvalid)
	assert.ErrorIs(t, e.Pause(far), ringwal.ErrInvalid)

	// The last instant is accepted and holds for longer than an hour.
	require.NoError(t, e.PauseKey("k", lastInstant))
	_, err := e.TryEnqueue(ringwal.Message{Key: "k"})
	require.NoError(t, err)
	fc.Advance(2 * time.Hour)
	_, ok := e.TryDequeue()
	assert.False(t, ok, "the key's pause ended early")
	var paused bool
	for _, ks := range e.Stats().Keys {
		if ks.Key == "k" {
			paused = ks.Paused
		}
	}
	assert.True(t, paused)
}

// Dead-letter queries compare time.Time values and never convert them, so
// a bound past 2262 (a common "no end" idiom) is valid and means what it
// says.
func TestDeadLetterQueryBoundsPastTheRangeStillWork(t *testing.T) {
	e := enginetest.Open(t, "", ringwal.Options{})
	_, err := e.TryEnqueue(ringwal.Message{})
	require.NoError(t, err)
	d := enginetest.Dequeue(t, e)
	require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("bad"), classify.Permanent)))
	require.Eventually(t, func() bool { return e.Stats().Dead == 1 }, enginetest.WaitFor, time.Millisecond)

	far := time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	got, err := e.DeadLetters(dlq.Query{Until: far})
	require.NoError(t, err)
	assert.Len(t, got, 1, "Until in 9999 includes today's dead letter")
	got, err = e.DeadLetters(dlq.Query{Since: far})
	require.NoError(t, err)
	assert.Empty(t, got, "Since in 9999 excludes it")
	got, err = e.DeadLetters(dlq.Query{Since: time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)})
	require.NoError(t, err)
	assert.Len(t, got, 1, "Since in year 1 includes it")
}

// Durations of centuries (ending before 2262, the last instant the engine
// holds; times_test.go checks those past it are refused) must not wrap
// into the past.
func TestHugeTTLAndDelay(t *testing.T) {
	const centuries = 2 * 100 * 365 * 24 * time.Hour
	tests := []struct {
		name string
		msg  ringwal.Message
		want ringwal.State
	}{
		{"TTL", ringwal.Message{TTL: centuries}, ringwal.Pending},
		{"Delay", ringwal.Message{Delay: centuries}, ringwal.Delayed},
		{"both", ringwal.Message{TTL: centuries, Delay: centuries}, ringwal.Delayed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, fake := memEngine(t, ringwal.Options{})
			id := enqueue(t, e, tt.msg)
			fake.Advance(time.Hour)
			stays(t, e, id, tt.want, "a duration of centuries")
		})
	}
}
