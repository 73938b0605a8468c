package ringwal_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
)

// Durations far beyond any clock must saturate, not wrap into the past.
func TestHugeTTLAndDelay(t *testing.T) {
	tests := []struct {
		name string
		msg  ringwal.Message
		want ringwal.State
	}{
		{"TTL", ringwal.Message{TTL: math.MaxInt64}, ringwal.Pending},
		{"Delay", ringwal.Message{Delay: math.MaxInt64}, ringwal.Delayed},
		{"both", ringwal.Message{TTL: math.MaxInt64, Delay: math.MaxInt64}, ringwal.Delayed},
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

// A message's MaxAttempts raises the retries of retryable failures; it does
// not make a failure marked Permanent retryable.
func TestMaxAttemptsDoesNotRetryPermanent(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{Policies: fastPolicies(5)})
	id := enqueue(t, e, ringwal.Message{MaxAttempts: 5})
	d := dequeue(t, e)
	require.NoError(t, e.Nack(d.Lease, permanent("400 bad request")))
	info := waitState(t, e, id, ringwal.Dead)
	assert.Equal(t, classify.Permanent, info.LastCategory)
	assert.Equal(t, 1, info.Attempts)
}

// A TTL that ends while the message is leased is enforced when the lease
// ends without an Ack: no retry goes out and nothing sits pending.
func TestTTLEndsDuringLease(t *testing.T) {
	for _, end := range []string{"nack", "requeue", "lease expiry"} {
		t.Run(end, func(t *testing.T) {
			pol := fastPolicy(5)
			e, fake := memEngine(t, ringwal.Options{Policies: map[classify.Category]classify.RetryPolicy{classify.Transient: pol, classify.Timeout: pol},
				LeaseTimeout: time.Second})
			id := enqueue(t, e, ringwal.Message{TTL: 100 * time.Millisecond})
			d := dequeue(t, e)
			fake.Advance(150 * time.Millisecond) // the TTL timer fires while leased
			stays(t, e, id, ringwal.Leased, "a lease is not cut short by the TTL")
			switch end {
			case "nack":
				require.NoError(t, e.Nack(d.Lease, transient("503")))
			case "requeue":
				require.NoError(t, e.Requeue(id))
			case "lease expiry":
				fake.Advance(2 * time.Second)
			}
			info := waitState(t, e, id, ringwal.Dead)
			assert.Equal(t, classify.Expired, info.LastCategory)
			assertNothingReady(t, e, "expired during its lease")
		})
	}
}

// Peek's n is a bound, not a size: a huge n allocates nothing extra.
func TestPeekHugeN(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	enqueue(t, e, ringwal.Message{Payload: []byte("a")})
	got := e.Peek(math.MaxInt)
	require.Len(t, got, 1)
	assert.Equal(t, "a", string(got[0].Message.Payload))
}
