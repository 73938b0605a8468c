package ringwal

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/ring"
)

// TestCountClassesAreDistinct: every counted state, tier and reason has
// a class and a field of its own, the kinds follow State's order, and
// the states that are not counted have none.
func TestCountClassesAreDistinct(t *testing.T) {
	require.Equal(t, []State{Pending, Delayed, Leased, Held}, []State{kindPending, kindDelayed, kindLeased, kindHeld},
		"counts.go reads a kind below kindWaiting as the State of that number")
	seen := map[countClass]string{}
	fields := map[field]countClass{}
	for _, st := range []uint32{stPending, stDelayed, stLeased, stHeld, stWaiting} {
		for tier := 0; tier < ring.NumTiers; tier++ {
			for why := NotWaiting; why <= WaitPaused; why++ {
				if st != stWaiting && why != NotWaiting {
					assert.Equal(t, classOf(st, tier, NotWaiting), classOf(st, tier, why), "a reason only splits Waiting")
					continue
				}
				c := classOf(st, tier, why)
				require.NotZero(t, c)
				require.Less(t, int(c), numClasses)
				name := publicStates[st].String() + "/" + why.String()
				if prev, dup := seen[c]; dup {
					t.Fatalf("%s and %s share class %d", prev, name, c)
				}
				seen[c] = name
				f := fieldOf[c]
				require.Less(t, int(f.word), numWords)
				if prev, dup := fields[f]; dup {
					t.Fatalf("classes %d and %d share field %+v", prev, c, f)
				}
				fields[f] = c
			}
		}
	}
	assert.Equal(t, classOf(stPending, 2, NotWaiting), classOf(stCommitting, 2, NotWaiting), "committing counts as Pending")
	for _, st := range []uint32{stFree, stBusy} {
		assert.Zero(t, classOf(st, 0, NotWaiting))
	}
}

// scanCounts counts the slab record by record, as Stats did before it
// kept its counts: the reference the kept counts are checked against.
func (e *Engine) scanCounts() stateCounts {
	var c stateCounts
	e.slab.each(func(_ uint32, r *rec) {
		w, ok := r.ownAny(liveStates) // waits out a committing enqueue
		if !ok {
			return
		}
		st, _ := publicState(w.state())
		c.byState[st]++
		c.byTier[st][r.tierIndex()]++
		if w.state() == stWaiting {
			c.waiting[r.waitReason()]++
		}
		r.putBack(w)
	})
	return c
}

// TestKeptCountsMatchAScan drives an engine through every kind of move a
// message makes (delays, leases, acks, nacks into retries, holds and dead
// letters, requeues, extends, expiries, cancels, keys that wait, pauses)
// and checks after each step that the counts Stats keeps equal a count of
// the records themselves.
func TestKeptCountsMatchAScan(t *testing.T) {
	t.Run("memory", func(t *testing.T) { keptCountsMatchAScan(t, "") })
	// Durable: a message counts as Pending while its enqueue is logged.
	t.Run("durable", func(t *testing.T) { keptCountsMatchAScan(t, t.TempDir()) })
}

func keptCountsMatchAScan(t *testing.T, dir string) {
	fake := clock.NewFake(time.Time{})
	e := openEngine(t, dir, Options{
		Clock:        fake,
		LeaseTimeout: 50 * time.Millisecond,
		Policies: map[classify.Category]classify.RetryPolicy{
			classify.Transient: {MaxAttempts: 4, Base: 5 * time.Millisecond, Max: 20 * time.Millisecond},
		},
		Breaker: breaker.Options{ConsecutiveFailures: 3, OpenTimeout: 40 * time.Millisecond},
		KeyPolicy: func(key string) KeyPolicy {
			switch key {
			case "ordered":
				return KeyPolicy{Ordered: true}
			case "capped":
				return KeyPolicy{MaxInFlight: 1}
			case "rated":
				return KeyPolicy{Rate: 100}
			}
			return KeyPolicy{}
		},
	})
	e.Stats() // counting starts
	keys := []string{"", "a", "ordered", "capped", "rated", "flaky"}
	rng := rand.New(rand.NewPCG(1, 2))
	var leases []Lease
	var ids []ID
	for step := 0; step < 3000; step++ {
		switch op := rng.IntN(10); {
		case op < 3:
			m := Message{Key: keys[rng.IntN(len(keys))], Priority: Priority(rng.IntN(5) - 2), Payload: []byte("x")}
			if rng.IntN(4) == 0 {
				m.Delay = time.Duration(rng.IntN(30)) * time.Millisecond
			}
			if rng.IntN(8) == 0 {
				m.TTL = time.Duration(1+rng.IntN(60)) * time.Millisecond
			}
			if id, err := e.TryEnqueue(m); err == nil {
				ids = append(ids, id)
			}
		case op < 5:
			if d, ok := e.TryDequeue(); ok {
				leases = append(leases, d.Lease)
			}
		case op < 8 && len(leases) > 0:
			i := rng.IntN(len(leases))
			l := leases[i]
			leases = append(leases[:i], leases[i+1:]...)
			switch rng.IntN(5) {
			case 0:
				_ = e.Ack(l)
			case 1:
				_ = e.Nack(l, classify.Mark(errors.New("down"), classify.Transient))
			case 2:
				_ = e.Nack(l, classify.Mark(errors.New("bad"), classify.Permanent))
			case 3:
				_ = e.Extend(l, time.Duration(rng.IntN(30))*time.Millisecond)
				leases = append(leases, l)
			case 4: // left to expire
			}
		case op == 8 && len(ids) > 0:
			id := ids[rng.IntN(len(ids))]
			switch rng.IntN(4) {
			case 0:
				_ = e.Requeue(id)
			case 1:
				_ = e.Cancel(id)
			case 2:
				_ = e.PauseKey("a", fake.Now().Add(15*time.Millisecond))
			case 3:
				_ = e.Redrive(id)
			}
		default:
			fake.Advance(time.Duration(1+rng.IntN(10)) * time.Millisecond)
		}
		// The housekeeper moves messages on its own goroutine: wait for
		// the kept counts and a scan to agree, then compare them whole.
		var kept, scanned stateCounts
		for try := 0; try < 2000; try++ {
			kept, scanned = e.counts.stateCounts(), e.scanCounts()
			if kept == scanned {
				break
			}
			time.Sleep(50 * time.Microsecond)
		}
		require.Equal(t, scanned, kept, "step %d: kept counts differ from the records", step)
	}
	s := e.Stats()
	assert.Positive(t, s.Acked+s.Nacked, "the run moved messages")
	assert.Positive(t, s.Retried)
	assert.Positive(t, s.DeadLettered)
}

// TestCountingStartsWithTheFirstStats: an engine nobody asks for Stats
// keeps no counts; the first Stats counts what is there, and from then on
// every move is counted.
func TestCountingStartsWithTheFirstStats(t *testing.T) {
	e := openEngine(t, "", Options{})
	for i := 0; i < 10; i++ {
		_, err := e.TryEnqueue(Message{Priority: Priority(i%5 - 2), Delay: time.Duration(i%2) * time.Hour})
		require.NoError(t, err)
	}
	d, ok := e.TryDequeue()
	require.True(t, ok)
	assert.False(t, e.counts.on.Load())
	assert.Equal(t, stateCounts{}, e.counts.stateCounts(), "nothing counted before the first Stats")

	s := e.Stats()
	assert.Equal(t, []int{4, 5, 1}, []int{s.Pending, s.Delayed, s.Leased})
	assert.Equal(t, e.scanCounts(), e.counts.stateCounts())

	require.NoError(t, e.Ack(d.Lease))
	d, ok = e.TryDequeue()
	require.True(t, ok)
	require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("bad"), classify.Permanent)))
	s = e.Stats()
	assert.Equal(t, []int{3, 5, 0, 1}, []int{s.Pending, s.Delayed, s.Leased, s.Dead})
	assert.Equal(t, e.scanCounts(), e.counts.stateCounts())
}
