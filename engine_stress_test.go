package ringwal_test

// Stress: many producers and consumers settling, leasing and abandoning
// leases at once while time moves; nothing is lost or acked twice.

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/dlq"
)

// Many producers and consumers acking, nacking, extending and abandoning
// leases while time moves and a breaker trips and recovers: every message
// ends acked exactly once or dead, and Stats agrees.
// With a log, a consumer may pop a message the instant it is pushed, while
// its enqueue is still being published.
func TestStressNothingLostOrAckedTwice(t *testing.T) {
	t.Run("memory", func(t *testing.T) { stressNothingLostOrAckedTwice(t, "") })
	t.Run("buffered log", func(t *testing.T) { stressNothingLostOrAckedTwice(t, t.TempDir()) })
}

func stressNothingLostOrAckedTwice(t *testing.T, dir string) {
	fake := clock.NewFake(time.Time{})
	e := open(t, dir, ringwal.Options{
		Clock:        fake,
		Durability:   ringwal.Buffered,
		LeaseTimeout: 50 * time.Millisecond,
		Policies:     fastPolicies(4),
		Breaker:      breaker.Options{ConsecutiveFailures: 3, OpenTimeout: 100 * time.Millisecond},
	})
	const producers, perProducer, consumers = 2, 400, 4
	keys := []string{"", "a", "b"}
	var ids sync.Map  // ID -> struct{}
	var acks sync.Map // ID -> *atomic.Int32
	var calm atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perProducer; i++ {
				id, err := e.Enqueue(ctxBG, ringwal.Message{Key: keys[i%len(keys)], Priority: ringwal.Priority(i%3 - 1)})
				if !assert.NoError(t, err) {
					return
				}
				ids.Store(id, struct{}{})
			}
		}()
	}
	var cw sync.WaitGroup
	for c := 0; c < consumers; c++ {
		cw.Add(1)
		go func() {
			defer cw.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				d, ok := e.TryDequeue()
				if !ok {
					runtime.Gosched()
					continue
				}
				n := rand.IntN(10)
				if calm.Load() {
					n = 0
				}
				switch {
				case n < 6:
				case n < 8:
					_ = e.Nack(d.Lease, transient("flaky"))
					continue
				case n < 9:
					_ = e.Extend(d.Lease, time.Duration(1+rand.IntN(60))*time.Millisecond)
				default:
					continue // abandoned: the lease expires
				}
				if err := e.Ack(d.Lease); err == nil {
					v, _ := acks.LoadOrStore(d.ID, new(atomic.Int32))
					if v.(*atomic.Int32).Add(1) > 1 {
						t.Errorf("ID %d acked twice", d.ID)
					}
				} else {
					assert.ErrorIs(t, err, ringwal.ErrStaleLease)
				}
			}
		}()
	}
	cw.Add(1)
	go func() { // time moves, and readers look on
		defer cw.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			fake.Advance(2 * time.Millisecond)
			_, _ = e.Get(ringwal.ID(1 + rand.IntN(producers*perProducer)))
			_ = e.Stats()
			time.Sleep(100 * time.Microsecond)
		}
	}()
	wg.Wait()
	time.Sleep(200 * time.Millisecond)
	calm.Store(true)
	var s ringwal.Stats
	ok := assert.Eventually(t, func() bool {
		s = e.Stats()
		return s.Pending+s.Delayed+s.Leased+s.Held == 0
	}, waitFor, 5*time.Millisecond)
	close(stop)
	cw.Wait()
	require.True(t, ok, "messages left: %+v", counts(s))

	nAcked := 0
	acks.Range(func(_, _ any) bool { nAcked++; return true })
	dead, err := e.DeadLetters(dlq.Query{})
	require.NoError(t, err)
	deadIDs := map[ringwal.ID]bool{}
	for _, x := range dead {
		deadIDs[x.ID] = true
	}
	ids.Range(func(k, _ any) bool {
		id := k.(ringwal.ID)
		_, acked := acks.Load(id)
		if acked == deadIDs[id] {
			t.Errorf("ID %d: acked %v, dead %v", id, acked, deadIDs[id])
		}
		return true
	})
	s = e.Stats()
	assert.Equal(t, producers*perProducer, nAcked+len(dead), "acked + dead")
	assert.Equal(t, uint64(nAcked), s.Acked, "Stats.Acked")
	assert.Equal(t, len(dead), s.Dead, "Stats.Dead")
	assert.Equal(t, uint64(producers*perProducer), s.Enqueued, "Stats.Enqueued")
}
