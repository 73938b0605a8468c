package ringwal

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/clock"
)

// A DequeueBatch that leases a message by its deadline (EDF) still holds
// that message's entry in its tier ring; popping the entry later in the
// same batch must not wait on the lease the batch itself holds.
func TestDequeueBatchSkipsEntriesOfItsOwnLeases(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	e := openUnlessStalled(t, Options{Clock: fake, DeadlineSlack: time.Minute})
	for _, dl := range []time.Duration{0, 0, time.Second, 2 * time.Second} {
		m := Message{Payload: []byte("x")}
		if dl > 0 {
			m.Deadline = fake.Now().Add(dl)
		}
		_, err := e.Enqueue(context.Background(), m)
		require.NoError(t, err)
	}
	ds := batchWithin(t, e, 10)
	assert.Len(t, ds, 4)
	for _, d := range ds {
		require.NoError(t, e.Ack(d.Lease))
	}
	s := e.Stats()
	assert.Zero(t, s.Pending+s.Leased)
}

// Batches taken side by side while messages with and without deadlines
// keep arriving (so a batch leases some by their deadline and then meets
// entries of leases held by itself or by another batch) never wait on
// themselves or on each other, and deliver every message once.
func TestConcurrentDequeueBatchesNeverWaitOnEachOther(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	e := openUnlessStalled(t, Options{Clock: fake, DeadlineSlack: time.Minute})
	const n = 3000
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got sync.Map
	var wg sync.WaitGroup
	delivered := make(chan int, 64)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ds, err := e.DequeueBatch(ctx, 7)
				if err != nil {
					return
				}
				for _, d := range ds {
					_, twice := got.LoadOrStore(d.ID, true)
					assert.False(t, twice, "delivered twice: %d", d.ID)
					assert.NoError(t, e.Ack(d.Lease))
				}
				delivered <- len(ds)
			}
		}()
	}
	go func() {
		for i := range n {
			m := Message{Payload: []byte("x")}
			if i%2 == 1 {
				m.Deadline = fake.Now().Add(time.Duration(1+i%5) * time.Second)
			}
			if _, err := e.Enqueue(ctx, m); err != nil {
				return
			}
		}
	}()
	total := 0
	for total < n {
		select {
		case k := <-delivered:
			total += k
		case <-ctx.Done():
			t.Fatalf("batches stalled after %d of %d messages", total, n)
		}
	}
	cancel()
	wg.Wait()
	assert.Equal(t, n, total)
}

// openUnlessStalled opens a durable engine that the test closes at its
// end unless it failed: a stalled engine's Close would hang the suite.
func openUnlessStalled(t *testing.T, o Options) *Engine {
	t.Helper()
	e, err := Open(t.TempDir(), o)
	require.NoError(t, err)
	t.Cleanup(func() {
		if !t.Failed() {
			assert.NoError(t, e.Close())
		}
	})
	return e
}

// batchWithin takes one DequeueBatch of up to max, failing the test if it
// does not return within a few seconds (real time).
func batchWithin(t *testing.T, e *Engine, max int) []Delivery {
	t.Helper()
	type res struct {
		ds  []Delivery
		err error
	}
	c := make(chan res, 1)
	go func() {
		ds, err := e.DequeueBatch(context.Background(), max)
		c <- res{ds, err}
	}()
	select {
	case r := <-c:
		require.NoError(t, r.err)
		return r.ds
	case <-time.After(10 * time.Second):
		t.Fatal("DequeueBatch did not return")
		return nil
	}
}
