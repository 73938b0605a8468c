package ringwal_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
)

func TestTTL(t *testing.T) {
	t.Run("expires with no consumer", func(t *testing.T) {
		hook, dls := deadLetterCh()
		e, fake := memEngine(t, ringwal.Options{OnDeadLetter: hook})
		id := enqueue(t, e, ringwal.Message{Payload: []byte("short-lived"), TTL: 100 * time.Millisecond})
		fake.Advance(99 * time.Millisecond)
		stays(t, e, id, ringwal.Pending, "before the TTL")
		fake.Advance(3 * time.Millisecond)
		info := waitState(t, e, id, ringwal.Dead)
		assert.Equal(t, classify.Expired, info.LastCategory)
		assert.Equal(t, 0, info.Attempts)
		x := deadEntry(t, e, id)
		assert.Equal(t, classify.Expired, x.Category)
		assert.Equal(t, "short-lived", string(x.Message.Payload))
		dl := recvDeadLetter(t, dls)
		assert.Equal(t, id, dl.ID)
		assert.Equal(t, uint64(1), e.Stats().Expired)
		assertNothingReady(t, e, "expired")
	})
	t.Run("delay longer than TTL", func(t *testing.T) {
		e, fake := memEngine(t, ringwal.Options{})
		id := enqueue(t, e, ringwal.Message{TTL: 50 * time.Millisecond, Delay: 10 * time.Second})
		fake.Advance(55 * time.Millisecond)
		info := waitState(t, e, id, ringwal.Dead)
		assert.Equal(t, classify.Expired, info.LastCategory)
	})
	t.Run("waiting for a retry", func(t *testing.T) {
		pol := fastPolicy(5)
		pol.Base, pol.Max = time.Second, time.Minute
		e, fake := memEngine(t, ringwal.Options{Policies: map[classify.Category]classify.RetryPolicy{classify.Transient: pol}})
		id := enqueue(t, e, ringwal.Message{TTL: 100 * time.Millisecond})
		d := dequeue(t, e)
		require.NoError(t, e.Nack(d.Lease, transient("x")))
		waitState(t, e, id, ringwal.Delayed)
		fake.Advance(105 * time.Millisecond)
		info := waitState(t, e, id, ringwal.Dead)
		assert.Equal(t, classify.Expired, info.LastCategory, "undelivered past its TTL while waiting to be retried")
	})
	t.Run("acked in time", func(t *testing.T) {
		e, fake := memEngine(t, ringwal.Options{})
		enqueue(t, e, ringwal.Message{TTL: 100 * time.Millisecond})
		d := dequeue(t, e)
		require.NoError(t, e.Ack(d.Lease))
		fake.Advance(200 * time.Millisecond)
		assert.Never(t, func() bool {
			es, err := e.DeadLetters(dlq.Query{})
			return err != nil || len(es) > 0
		}, quiet, tick, "an acked message does not expire")
		assert.Equal(t, uint64(0), e.Stats().Expired)
	})
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

// A short TTL under the real (coarse) clock dead-letters the message about
// then, with no consumer: the TTL is eager.
func TestShortTTLExpiresEagerlyRealClock(t *testing.T) {
	e, err := ringwal.Open("", ringwal.Options{})
	require.NoError(t, err)
	defer e.Close()
	for i := 0; i < 20; i++ {
		id, err := e.Enqueue(ctxBG, ringwal.Message{TTL: 3 * time.Millisecond})
		require.NoError(t, err)
		deadline := time.Now().Add(2 * time.Second)
		for {
			info, err := e.Get(id)
			require.NoError(t, err)
			if info.State == ringwal.Dead {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: a message with a 3ms TTL still %v after 500ms", i, info.State)
			}
			time.Sleep(time.Millisecond)
		}
	}
}
