package ringwal_test

// Options: what Open refuses (bad options, a TierCapacity no machine
// holds, bad breaker options) and odd but valid options that work.

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/classify"
)

// A TierCapacity no machine can hold is bad input: Open must say so, not
// die allocating five rings of it (it used to be a fatal out-of-memory).
// A TierCapacity merely above MaxMessages still works.
func TestTierCapacityTooLargeIsInvalid(t *testing.T) {
	for _, c := range []int{1 << 40, 1<<63 - 1} {
		var e *ringwal.Engine
		var err error
		require.NotPanics(t, func() { e, err = ringwal.Open("", ringwal.Options{TierCapacity: c}) })
		if e != nil {
			_ = e.Close()
		}
		assert.ErrorIs(t, err, ringwal.ErrInvalid, "TierCapacity %d", c)
	}
	e, _ := memEngine(t, ringwal.Options{TierCapacity: 1 << 24, MaxMessages: 8})
	for i := 0; i < 8; i++ {
		_, err := e.TryEnqueue(ringwal.Message{})
		require.NoError(t, err, "message %d of MaxMessages 8", i)
	}
	_, err := e.TryEnqueue(ringwal.Message{})
	assert.ErrorIs(t, err, ringwal.ErrFull, "MaxMessages still binds")
}

// Breaker options are checked by Open: a FailureRate above 1 (a
// percentage, say) or NaN silently never tripped, and a huge Buckets was
// a fatal out-of-memory at the first message with a Key.
func TestBreakerOptionsValidated(t *testing.T) {
	for name, b := range map[string]breaker.Options{
		"rate as percent": {FailureRate: 50},
		"rate NaN":        {FailureRate: math.NaN()},
		"huge buckets":    {Buckets: 1 << 40, Window: 1 << 50},
	} {
		var e *ringwal.Engine
		var err error
		require.NotPanics(t, func() { e, err = ringwal.Open("", ringwal.Options{Breaker: b}) }, name)
		if e != nil {
			_ = e.Close()
		}
		assert.ErrorIs(t, err, ringwal.ErrInvalid, name)
	}
}

// Odd but valid options open an engine that works: no panic anywhere on
// the way of a message through enqueue, lease, nack, retry and ack.
func TestOddOptionsWork(t *testing.T) {
	for name, o := range map[string]ringwal.Options{
		"huge weights":      {Weights: [5]int{1 << 62, 1 << 62, 1 << 62, 1 << 62, 1 << 62}},
		"one weight":        {Weights: [5]int{0, 0, 0, 0, 1}},
		"no aging":          {AgingAfter: -1},
		"huge durations":    {LeaseTimeout: 1<<63 - 1, DeadlineSlack: 1<<63 - 1, CloseGrace: time.Millisecond},
		"off switches":      {DedupWindow: -1, CheckpointBytes: -1, DeadLetterRetention: -1},
		"tiny capacities":   {TierCapacity: 1, MaxMessages: 1},
		"breaker negatives": {Breaker: breaker.Options{ConsecutiveFailures: -1, FailureRate: -1, MinCalls: -1, Window: -1, Buckets: -1, OpenTimeout: -1, MaxProbes: -1, IdleTTL: -1}},
		"unknown category":  {Policies: map[classify.Category]classify.RetryPolicy{classify.Category(200): {MaxAttempts: 2}}},
	} {
		t.Run(name, func(t *testing.T) {
			require.NotPanics(t, func() {
				e, _ := memEngine(t, o)
				id := enqueue(t, e, ringwal.Message{Key: "k", Priority: ringwal.High, Deadline: time.Unix(1, 0)})
				d := dequeue(t, e)
				require.Equal(t, id, d.ID)
				require.NoError(t, e.Nack(d.Lease, classify.After(errors.New("again"), 0)))
				d = dequeue(t, e)
				require.NoError(t, e.Ack(d.Lease))
			})
		})
	}
}

func TestInvalidOptions(t *testing.T) {
	cases := []struct {
		name  string
		o     ringwal.Options
		words []string
	}{
		{"unknown durability", ringwal.Options{Durability: ringwal.Durability(200)}, []string{"durability"}},
		{"negative LeaseTimeout", ringwal.Options{LeaseTimeout: -time.Second}, []string{"lease"}},
		{"negative TierCapacity", ringwal.Options{TierCapacity: -1}, []string{"tiercapacity", "capacity"}},
		{"negative MaxPayload", ringwal.Options{MaxPayload: -1}, []string{"maxpayload", "payload"}},
		{"negative MaxMessages", ringwal.Options{MaxMessages: -1}, []string{"maxmessages", "messages"}},
		{"negative weight", ringwal.Options{Weights: [5]int{16, 8, -4, 2, 1}}, []string{"weight"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, dir := range []string{"", t.TempDir()} {
				var e *ringwal.Engine
				var err error
				require.NotPanics(t, func() { e, err = ringwal.Open(dir, tc.o) })
				if e != nil {
					_ = e.Close()
				}
				require.Error(t, err, "Open(%q)", dir)
				assert.ErrorIs(t, err, ringwal.ErrInvalid)
				assert.True(t, containsAny(errText(err), tc.words), "error %q should say what was wrong (one of %q)", err, tc.words)
			}
		})
	}
}

func TestBadOptions(t *testing.T) {
	bad := []struct {
		name string
		o    ringwal.Options
	}{
		{"unknown Durability", ringwal.Options{Durability: 9}},
		{"negative LeaseTimeout", ringwal.Options{LeaseTimeout: -1}},
		{"negative DeadlineSlack", ringwal.Options{DeadlineSlack: math.MinInt64}},
		{"negative FlushInterval", ringwal.Options{FlushInterval: -time.Second}},
		{"negative CloseGrace", ringwal.Options{CloseGrace: -1}},
		{"negative TierCapacity", ringwal.Options{TierCapacity: -1}},
		{"huge TierCapacity", ringwal.Options{TierCapacity: math.MaxInt}},
		{"negative MaxMessages", ringwal.Options{MaxMessages: math.MinInt}},
		{"huge MaxMessages", ringwal.Options{MaxMessages: math.MaxInt}},
		{"negative MaxPayload", ringwal.Options{MaxPayload: -1}},
		{"negative CrashLoopLimit", ringwal.Options{CrashLoopLimit: -1}},
		{"negative weight", ringwal.Options{Weights: [5]int{1, -1}}},
		{"FailureRate above 1", ringwal.Options{Breaker: breaker.Options{FailureRate: 2}}},
		{"FailureRate NaN", ringwal.Options{Breaker: breaker.Options{FailureRate: math.NaN()}}},
		{"huge Breaker.Buckets", ringwal.Options{Breaker: breaker.Options{Buckets: math.MaxInt}}},
		{"policy with negative MaxAttempts", ringwal.Options{Policies: map[classify.Category]classify.RetryPolicy{
			classify.Transient: {MaxAttempts: -1}}}},
		{"policy with Base above Max", ringwal.Options{Policies: map[classify.Category]classify.RetryPolicy{
			classify.Transient: {Base: time.Hour, Max: time.Second}}}},
		{"policy with infinite Multiplier", ringwal.Options{Policies: map[classify.Category]classify.RetryPolicy{
			classify.Transient: {Multiplier: math.Inf(1)}}}},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			e, err := callOpen(t, c.o)
			if e != nil {
				_ = e.Close()
			}
			assert.ErrorIs(t, err, ringwal.ErrInvalid)
		})
	}
	// At the edge of their range, these are fine.
	edge := []struct {
		name string
		o    ringwal.Options
	}{
		{"huge LeaseTimeout", ringwal.Options{LeaseTimeout: math.MaxInt64}},
		{"huge DedupWindow", ringwal.Options{DedupWindow: math.MaxInt64}},
		{"negative DedupWindow (off)", ringwal.Options{DedupWindow: -1}},
		{"negative AgingAfter (off)", ringwal.Options{AgingAfter: math.MinInt64}},
		{"huge DeadlineSlack", ringwal.Options{DeadlineSlack: math.MaxInt64}},
		{"negative CheckpointBytes (off)", ringwal.Options{CheckpointBytes: -1}},
		{"huge CheckpointBytes", ringwal.Options{CheckpointBytes: math.MaxInt64}},
		{"huge CrashLoopLimit", ringwal.Options{CrashLoopLimit: math.MaxInt}},
		{"huge weights", ringwal.Options{Weights: [5]int{math.MaxInt, math.MaxInt, math.MaxInt, math.MaxInt, math.MaxInt}}},
		{"huge DeadLetterRetention", ringwal.Options{DeadLetterRetention: math.MaxInt64}},
		{"negative DeadLetterRetention (forever)", ringwal.Options{DeadLetterRetention: -1}},
		{"huge CloseGrace", ringwal.Options{CloseGrace: math.MaxInt64}},
		{"huge Breaker durations", ringwal.Options{Breaker: breaker.Options{OpenTimeout: math.MaxInt64, Window: math.MaxInt64}}},
	}
	for _, c := range edge {
		t.Run(c.name, func(t *testing.T) {
			e, err := callOpen(t, c.o)
			require.NoError(t, err)
			t.Cleanup(func() { _ = e.Close() })
			id, err := e.Enqueue(ctxBG, ringwal.Message{DedupID: "d", Key: "k", TTL: time.Hour})
			require.NoError(t, err)
			d := dequeue(t, e)
			require.Equal(t, id, d.ID)
			require.NoError(t, e.Nack(d.Lease, fmt.Errorf("once")))
			_ = e.Stats()
			require.NoError(t, e.Close())
		})
	}
}
