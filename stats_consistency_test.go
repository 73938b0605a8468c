package ringwal_test

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
)

// TestStatsCountsEveryMessageAtEveryInstant: a fixed population of
// messages circulates through every live state (leases taken, nacked,
// requeued, extended or left to expire; retries coming due; keys whose
// breaker opens hold theirs; readers owning records for a moment) while
// Stats is called in a loop: every call counts each message in exactly
// one state. In "live and dead" messages also move to the dead-letter
// store and back (permanent nacks, an operator's redrives), and Dead
// counts too.
func TestStatsCountsEveryMessageAtEveryInstant(t *testing.T) {
	t.Run("live", func(t *testing.T) { statsConsistency(t, false) })
	t.Run("live and dead", func(t *testing.T) { statsConsistency(t, true) })
}

func statsConsistency(t *testing.T, withDead bool) {
	const n = 256
	fake := clock.NewFake(time.Time{})
	e, _ := memEngine(t, ringwal.Options{
		Clock:        fake,
		LeaseTimeout: 20 * time.Millisecond,
		Policies:     fastPolicies(1 << 20),
		Breaker:      breaker.Options{ConsecutiveFailures: 3, OpenTimeout: 30 * time.Millisecond},
		// Held messages stay held: the fake clock runs through MaxHold's
		// default (15 minutes) within the run on a fast machine, and the
		// live case counts no dead letters.
		MaxHold: -1,
	})
	keys := []string{"", "a", "b", "c"}
	ids := make([]ringwal.ID, n)
	for i := range ids {
		m := ringwal.Message{Key: keys[i%len(keys)], Priority: ringwal.Priority(i%5 - 2)}
		if i%7 == 0 {
			m.Delay = time.Duration(i) * time.Millisecond
		}
		ids[i] = enqueue(t, e, m)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	run := func(fn func(rng *rand.Rand)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
			for {
				select {
				case <-stop:
					return
				default:
				}
				fn(rng)
			}
		}()
	}
	for c := 0; c < 2; c++ {
		run(func(rng *rand.Rand) {
			d, ok := e.TryDequeue()
			if !ok {
				runtime.Gosched()
				return
			}
			switch rng.IntN(6) {
			case 5:
				if withDead {
					_ = e.Nack(d.Lease, classify.Mark(errors.New("never"), classify.Permanent))
				}
			case 0, 1:
				_ = e.Nack(d.Lease, classify.Mark(errors.New("down"), classify.Transient))
			case 2:
				_ = e.Requeue(d.ID)
			case 3:
				_ = e.Extend(d.Lease, time.Duration(rng.IntN(20))*time.Millisecond+time.Millisecond)
			case 4: // left to expire
			}
		})
	}
	run(func(rng *rand.Rand) { // readers own records for a moment
		_, _ = e.Get(ids[rng.IntN(n)])
		_ = e.Peek(4)
	})
	if withDead {
		run(func(rng *rand.Rand) { // the operator
			if e.Redrive(ids[rng.IntN(n)]) != nil {
				runtime.Gosched()
			}
		})
	}
	run(func(*rand.Rand) { // the housekeeper's time
		fake.Advance(time.Millisecond)
		runtime.Gosched()
	})
	var calls, bad atomic.Int64
	var first atomic.Pointer[stateCounts]
	run(func(*rand.Rand) {
		c := counts(e.Stats())
		calls.Add(1)
		total := c.Pending + c.Delayed + c.Leased + c.Held
		if withDead {
			total += c.Dead
		}
		if total != n {
			bad.Add(1)
			first.CompareAndSwap(nil, &c)
		}
	})
	time.Sleep(2 * time.Second) // real time: the length of the run, not engine time
	close(stop)
	wg.Wait()
	t.Logf("%d Stats calls", calls.Load())
	assert.Positive(t, calls.Load())
	if c := first.Load(); c != nil {
		t.Errorf("%d of %d Stats calls did not count %d live messages; first: %+v", bad.Load(), calls.Load(), n, *c)
	}
	s := e.Stats()
	assert.Equal(t, n, s.Pending+s.Delayed+s.Leased+s.Held+s.Dead)
}
