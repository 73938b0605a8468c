package ringwal_test

// The failure path's defaults: a message held behind an open breaker ends
// in the dead-letter store after MaxHold, and a RateLimited failure with a
// Retry-After hint pauses its key without counting against its breaker.

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
)

// statusError is an HTTP client's error: a status and, for a 429 or a
// 503, the response's Retry-After.
type statusError struct {
	status     int
	retryAfter time.Duration
}

func (e *statusError) Error() string             { return fmt.Sprintf("status %d", e.status) }
func (e *statusError) StatusCode() int           { return e.status }
func (e *statusError) RetryAfter() time.Duration { return e.retryAfter }
func breakerOf(e *ringwal.Engine, key string) breaker.KeyState {
	for _, b := range e.Stats().Breakers {
		if b.Key == key {
			return b
		}
	}
	return breaker.KeyState{Key: key}
}

// longTransient retries a Transient failure more often than a test's hold
// could spend, so that only MaxHold can end the message.
var longTransient = map[classify.Category]classify.RetryPolicy{
	classify.Transient: {MaxAttempts: 1000, Base: time.Second, Max: time.Second, Multiplier: 1, Jitter: classify.NoJitter},
}

// failKeyFor delivers and fails (Transient) every message of a down target
// as fake time passes in steps of one second, for span or until n are dead;
// it returns when the key's breaker first opened.
func failKeyFor(t *testing.T, e *ringwal.Engine, fake *clock.Fake, n int, span time.Duration) (openedAt time.Time) {
	t.Helper()
	start := fake.Now()
	for fake.Now().Sub(start) < span && e.Stats().Dead < n {
		for {
			d, ok := e.TryDequeue()
			if !ok {
				break
			}
			require.NoError(t, e.Nack(d.Lease, transient("503 service unavailable")))
		}
		if openedAt.IsZero() && breakerOf(e, "down").Trips > 0 {
			openedAt = fake.Now()
		}
		fake.Advance(time.Second)
		// The engine's timer goroutine arms its (one) timer again once it
		// has done what came due: wait for that, so that the engine keeps
		// up with the fake clock however loaded the machine is.
		fake.BlockUntil(1)
	}
	require.False(t, openedAt.IsZero(), "the breaker never opened")
	return openedAt
}

func TestHeldMessagesAreDeadLetteredAfterMaxHold(t *testing.T) {
	const n = 5
	for _, tt := range []struct {
		name    string
		maxHold time.Duration     // Options.MaxHold
		policy  ringwal.KeyPolicy // the key's
		want    time.Duration     // the hold that dead-letters; 0: none does
	}{
		{name: "default", want: 15 * time.Minute},
		{name: "engine option", maxHold: 3 * time.Minute, want: 3 * time.Minute},
		{name: "key policy wins", maxHold: time.Hour, policy: ringwal.KeyPolicy{MaxHold: 2 * time.Minute}, want: 2 * time.Minute},
		{name: "negative holds forever", maxHold: -1},
		{name: "negative key policy is no policy", maxHold: 3 * time.Minute, policy: ringwal.KeyPolicy{MaxHold: -time.Minute}, want: 3 * time.Minute},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, fake := memEngine(t, ringwal.Options{MaxHold: tt.maxHold, Policies: longTransient,
				KeyPolicy: policyFor(tt.policy)})
			ids := make([]ringwal.ID, n)
			for i := range ids {
				ids[i] = enqueue(t, e, ringwal.Message{Key: "down"})
			}
			span := tt.want + 2*time.Minute
			if tt.want == 0 {
				span = 2 * time.Hour
			}
			openedAt := failKeyFor(t, e, fake, n, span)
			if tt.want == 0 {
				st := e.Stats()
				assert.Zero(t, st.Dead, "nothing dead-lettered")
				assert.Equal(t, n, st.Held+st.Pending+st.Delayed, "held (or between holds), never dead")
				return
			}
			require.Eventually(t, func() bool { return e.Stats().Dead == n }, waitFor, tick, "stats %+v", e.Stats())
			for _, id := range ids {
				d := deadEntry(t, e, id)
				assert.Equal(t, classify.Transient, d.Category, "the category of the failures that opened the breaker")
				last := d.Failures[len(d.Failures)-1].Error
				assert.Contains(t, last, fmt.Sprintf("MaxHold %v", tt.want))
				// Held from a second after the breaker opened (the retries'
				// backoff): not before MaxHold, and not much after it
				// (half-open probes, this message's own among them, do not
				// start the count again).
				held := d.DeadAt.Sub(openedAt)
				assert.GreaterOrEqual(t, held, tt.want, "dead-lettered before MaxHold")
				if !assert.Less(t, held, tt.want+time.Minute, "held past MaxHold") {
					for _, f := range d.Failures {
						t.Logf("%v %v %s", f.At.Sub(openedAt), f.Category, f.Error)
					}
				}
			}
		})
	}
}

// A message's hold runs on through its own failed half-open probe, and
// ends when the message goes through a closed breaker: held again after
// that, it has its whole MaxHold again.
func TestMaxHoldCountsFromTheFirstHoldUntilTheBreakerLetsTheMessageThrough(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{MaxHold: 90 * time.Second, Policies: longTransient,
		Breaker: breaker.Options{ConsecutiveFailures: 1, OpenTimeout: time.Minute, MaxOpenTimeout: time.Minute}})
	start := fake.Now()
	at := func() time.Duration { return fake.Now().Sub(start) }
	probe := enqueue(t, e, ringwal.Message{Key: "k"})
	x := enqueue(t, e, ringwal.Message{Key: "k"})
	d := dequeue(t, e)
	require.Equal(t, probe, d.ID)
	require.NoError(t, e.Nack(d.Lease, transient("503"))) // opens the breaker
	heldSoon(t, e, x)                                     // held since 0s

	// 61s: half-open. The probe (due again since 1s) goes first and
	// succeeds: the breaker closes, and x goes through it, fails, and
	// opens it again.
	fake.Advance(61 * time.Second)
	d = dequeue(t, e)
	require.Equal(t, probe, d.ID, "at %v", at())
	require.NoError(t, e.Ack(d.Lease))
	d = dequeue(t, e)
	require.Equal(t, x, d.ID)
	require.Equal(t, breaker.Closed, breakerOf(e, "k").State, "x went through a closed breaker")
	require.NoError(t, e.Nack(d.Lease, transient("503")))
	fake.Advance(time.Second)
	heldSoon(t, e, x) // held again since 62s, its first hold over

	// 122s: half-open again; x is the probe and fails: its hold goes on
	// from 62s.
	fake.Advance(60 * time.Second)
	d = dequeue(t, e)
	require.Equal(t, x, d.ID, "at %v", at())
	require.NoError(t, e.Nack(d.Lease, transient("503")))
	fake.Advance(time.Second)
	heldSoon(t, e, x) // 123s: 123s after its first hold, 61s into this one

	fake.Advance(25 * time.Second) // 148s: 86s into the hold
	info, err := e.Get(x)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Held, info.State, "86s into a hold of at most 90s")
	fake.Advance(5 * time.Second) // 153s: 91s
	info = stateNot(t, e, x, ringwal.Held)
	assert.Equal(t, ringwal.Dead, info.State)
	deadAt := deadEntry(t, e, x).DeadAt.Sub(start)
	assert.GreaterOrEqual(t, deadAt, 62*time.Second+90*time.Second, "MaxHold after the hold began")
	assert.LessOrEqual(t, deadAt, 153*time.Second, "when the timer fired (the clock's time then)")
}

func TestRateLimitedWithRetryAfterDoesNotCountAgainstTheBreaker(t *testing.T) {
	tooMany := errors.New("429 too many requests")
	for _, tt := range []struct {
		name  string
		cause error
		trips bool
	}{
		{"Retry-After header", &statusError{status: 429, retryAfter: time.Second}, false},
		{"classify.After", classify.After(classify.Mark(tooMany, classify.RateLimited), time.Second), false},
		{"no hint", &statusError{status: 429}, true},
		{"marked, no hint", classify.Mark(tooMany, classify.RateLimited), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, fake := memEngine(t, ringwal.Options{})
			var leases []ringwal.Lease
			for range 5 { // five requests in flight together
				enqueue(t, e, ringwal.Message{Key: "api"})
				leases = append(leases, dequeue(t, e).Lease)
			}
			for _, l := range leases {
				require.NoError(t, e.Nack(l, tt.cause))
			}
			b := breakerOf(e, "api")
			if tt.trips {
				assert.Equal(t, uint64(1), b.Trips, "five RateLimited failures without a hint open the breaker")
				return
			}
			assert.Zero(t, b.Trips, "the breaker did not open")
			assert.Zero(t, b.ConsecutiveFailures, "nor count them")
			assert.True(t, keyPaused(e, "api"), "the hint paused the key instead")
			fake.Advance(time.Second)
			for range 5 {
				require.NoError(t, e.Ack(dequeue(t, e).Lease))
			}
			assert.Zero(t, e.Stats().Dead)
		})
	}
}

// heldSoon offers id for delivery until its key's open breaker holds it
// (a message is held when a consumer takes it from its tier).
func heldSoon(t *testing.T, e *ringwal.Engine, id ringwal.ID) {
	t.Helper()
	require.Eventually(t, func() bool {
		if d, ok := e.TryDequeue(); ok {
			require.FailNow(t, "delivered behind an open breaker", "ID %d", d.ID)
		}
		info, err := e.Get(id)
		return err == nil && info.State == ringwal.Held
	}, waitFor, tick, "ID %d not held", id)
}

// keyPaused reports whether Stats shows key paused.
func keyPaused(e *ringwal.Engine, key string) bool {
	for _, k := range e.Stats().Keys {
		if k.Key == key {
			return k.Paused
		}
	}
	return false
}
