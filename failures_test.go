package ringwal_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/dlq"
)

// TestNackCauseKeptWhenTTLEndsDuringDelivery: a nack whose message's TTL
// ran out during the delivery dead-letters it as Expired; the nack's
// cause stays in its history across a reopen.
func TestNackCauseKeptWhenTTLEndsDuringDelivery(t *testing.T) {
	forLogAndCheckpoint(t, func(t *testing.T, checkpoint bool) {
		fake := clock.NewFake(time.Time{})
		r := newReopener(t, ringwal.Options{Clock: fake, Policies: fastPolicies(5)})
		id := enqueue(t, r.e, ringwal.Message{TTL: 10 * time.Second})
		d := dequeue(t, r.e)
		fake.Advance(11 * time.Second)
		require.NoError(t, r.e.Nack(d.Lease, transient("downstream said no")))
		before := deadEntry(t, r.e, id)
		require.Equal(t, classify.Expired, before.Category)
		require.Len(t, before.Failures, 2, "the nack, then the TTL verdict")
		require.Equal(t, "downstream said no", before.Failures[0].Error)

		e2, _ := r.reopen(checkpoint, fake.Now())
		sameDeadLetter(t, before, deadEntry(t, e2, id))
	})
}

// TestRepeatedFailureTextKeptAfterReopen: "Failures always includes the
// last attempt" holds after a reopen when the last failure's text repeats
// the one before, and a history trimmed to its last entries keeps its
// FirstFailedAt.
func TestRepeatedFailureTextKeptAfterReopen(t *testing.T) {
	for _, attempts := range []int{2, dlq.DefaultMaxFailures + 3} {
		forLogAndCheckpoint(t, func(t *testing.T, checkpoint bool) {
			fake := clock.NewFake(time.Time{})
			r := newReopener(t, ringwal.Options{Clock: fake, Policies: fastPolicies(attempts)})
			id := enqueue(t, r.e, ringwal.Message{})
			for i := 0; i < attempts; i++ {
				d := dequeue(t, r.e)
				require.Equal(t, id, d.ID)
				require.NoError(t, r.e.Nack(d.Lease, transient("same text")))
				fake.Advance(200 * time.Millisecond) // past the backoff
			}
			before := deadEntry(t, r.e, id)
			require.Len(t, before.Failures, min(attempts, dlq.DefaultMaxFailures))

			e2, _ := r.reopen(checkpoint, fake.Now())
			sameDeadLetter(t, before, deadEntry(t, e2, id))
		})
	}
}
