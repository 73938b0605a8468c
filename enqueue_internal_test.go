package ringwal

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/ringwal/ringwal/classify"
)

// At MaxMessages, with retried messages holding runs of slots (an outage
// nacks everything for a while), Enqueue must wait for room, never fail:
// a bench run once lost producers to a "no free slot" error when every
// slot near the next IDs held a delayed retry.
func TestEnqueueAtCapacityWaitsInsteadOfFailing(t *testing.T) {
	e := openEngine(t, "", Options{MaxMessages: 1024, TierCapacity: 256, Policies: map[classify.Category]classify.RetryPolicy{
		classify.Transient: {MaxAttempts: 1 << 20, Base: time.Millisecond, Max: 4 * time.Millisecond, Multiplier: 2},
	}})
	total := int64(200_000)
	if testing.Short() {
		total = 40_000
	}
	const producers, consumers = 8, 8
	var deliveries atomic.Int64
	var acked atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fail := classify.Mark(errors.New("flake"), classify.Transient)
	var wg sync.WaitGroup
	errs := make(chan error, producers+consumers)
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int64(0); i < total/producers; i++ {
				if _, err := e.Enqueue(ctx, Message{Payload: []byte("x")}); err != nil {
					errs <- err
					cancel() // fail now rather than wait for the timeout
					return
				}
			}
		}()
	}
	for c := 0; c < consumers; c++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			for acked.Load() < total {
				d, err := e.Dequeue(ctx)
				if err != nil {
					if acked.Load() < total {
						errs <- err
					}
					return
				}
				// Outages: every 20,000 deliveries, 3,000 fail in a row;
				// otherwise about one in 16 fails.
				n := deliveries.Add(1)
				if seed = seed*6364136223846793005 + 1442695040888963407; n%20_000 < 3_000 || seed>>60 == 0 {
					_ = e.Nack(d.Lease, fail)
					continue
				}
				if err := e.Ack(d.Lease); err != nil {
					errs <- err
					return
				}
				if acked.Add(1) == total {
					cancel() // wake the consumers still waiting
				}
			}
		}(uint64(c) + 1)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	assert.Equal(t, total, acked.Load())
	s := e.Stats()
	assert.Equal(t, uint64(total), s.Enqueued)
	assert.Zero(t, s.Pending+s.Delayed+s.Leased)
}
