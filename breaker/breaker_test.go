package breaker

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/clock"
)

// harness is a Set on a fake clock that records every transition.
type harness struct {
	t   *testing.T
	clk *clock.Fake
	s   *Set

	mu     sync.Mutex
	events []string
}

func newHarness(t *testing.T, o Options) *harness {
	h := &harness{t: t, clk: clock.NewFake(time.Time{})}
	o.Clock = h.clk
	o.OnStateChange = func(key string, from, to State) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.events = append(h.events, fmt.Sprintf("%s:%s->%s", key, from, to))
	}
	h.s = New(o)
	return h
}

// call makes one admitted call on key with the given outcome and reports
// whether it was admitted.
func (h *harness) call(key string, success bool) bool {
	t, ok := h.s.Allow(key)
	if ok {
		h.s.Done(t, success)
	}
	return ok
}

func (h *harness) takeEvents() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	ev := h.events
	h.events = nil
	return ev
}

// step is one line of a state-machine table.
type step struct {
	do        string        // "ok", "fail", "allow" (no Done), "advance"
	d         time.Duration // for "advance"
	admitted  bool          // for "ok", "fail", "allow"
	wantState State
}

func ok(admitted bool) step { return step{do: "ok", admitted: admitted} }
func fail(admitted bool) step {
	return step{do: "fail", admitted: admitted}
}
func advance(d time.Duration) step { return step{do: "advance", d: d} }

func TestStateMachine(t *testing.T) {
	repeat := func(n int, s step, st State) []step {
		out := make([]step, n)
		for i := range out {
			out[i] = s
			out[i].wantState = st
		}
		return out
	}
	with := func(s step, st State) step { s.wantState = st; return s }
	cat := func(parts ...[]step) []step {
		var out []step
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tripped := cat(repeat(4, fail(true), Closed), []step{with(fail(true), Open)})
	tests := []struct {
		name  string
		opt   Options
		steps []step
	}{
		{"four failures stay closed, the fifth trips", Options{},
			cat(repeat(4, fail(true), Closed), []step{with(fail(true), Open), with(ok(false), Open)})},
		{"a success ends the run", Options{},
			cat(repeat(4, fail(true), Closed), []step{with(ok(true), Closed)}, repeat(4, fail(true), Closed))},
		{"open refuses until the timeout, then one probe closes", Options{},
			cat(tripped, []step{
				with(advance(5*time.Second-1), Open), with(ok(false), Open),
				with(advance(1), HalfOpen), with(ok(true), Closed), with(ok(true), Closed),
			})},
		{"a failed probe re-opens for twice as long", Options{},
			cat(tripped, []step{
				with(advance(5*time.Second), HalfOpen), with(fail(true), Open),
				with(advance(10*time.Second-1), Open), with(ok(false), Open),
				with(advance(1), HalfOpen), with(ok(true), Closed),
			})},
		{"SuccessThreshold 3 needs three probes", Options{SuccessThreshold: 3},
			cat(tripped, []step{
				with(advance(5*time.Second), HalfOpen),
				with(ok(true), HalfOpen), with(ok(true), HalfOpen), with(ok(true), Closed),
			})},
		{"custom consecutive threshold", Options{ConsecutiveFailures: 2},
			[]step{with(fail(true), Closed), with(fail(true), Open)}},
		{"consecutive rule disabled: the rate rule still trips", Options{ConsecutiveFailures: -1, MinCalls: 6},
			cat(repeat(5, fail(true), Closed), []step{with(fail(true), Open)})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.opt)
			for i, s := range tt.steps {
				switch s.do {
				case "advance":
					h.clk.Advance(s.d)
				case "ok", "fail":
					assert.Equal(t, s.admitted, h.call("k", s.do == "ok"), "step %d admitted", i)
				}
				require.Equal(t, s.wantState, h.s.State("k"), "step %d (%s)", i, s.do)
			}
		})
	}
}

func TestFailureRateWindow(t *testing.T) {
	h := newHarness(t, Options{}) // 50 % of ≥ 20 calls in 10 s, 10 buckets
	// Alternate so the consecutive rule never fires: 19 calls, 9 failures.
	for i := range 19 {
		h.call("k", i%2 == 0)
	}
	require.Equal(t, Closed, h.s.State("k"))
	h.call("k", false) // 20 calls, 10 failures: 50 %
	assert.Equal(t, Open, h.s.State("k"))

	// Calls age out of the window bucket by bucket.
	h = newHarness(t, Options{})
	for i := range 19 {
		h.call("k", i%2 == 0) // 9 failures, 10 successes at t=0
	}
	h.clk.Advance(10 * time.Second) // the t=0 bucket has left the window
	h.call("k", false)
	assert.Equal(t, Closed, h.s.State("k"), "old calls no longer count")
	ks := h.s.Keys()
	require.Len(t, ks, 1)
	assert.Equal(t, 1, ks[0].Calls)
	assert.Equal(t, 1, ks[0].Failures)

	// A rate below the threshold does not trip.
	h = newHarness(t, Options{})
	for i := range 100 {
		h.call("k", i%3 != 0) // one in three fails
	}
	assert.Equal(t, Closed, h.s.State("k"))

	// Disabled rate rule.
	h = newHarness(t, Options{FailureRate: -1, ConsecutiveFailures: 1000})
	for i := range 100 {
		h.call("k", i%2 == 0)
	}
	assert.Equal(t, Closed, h.s.State("k"))
	ks = h.s.Keys()
	require.Len(t, ks, 1)
	assert.Zero(t, ks[0].Calls, "no window is kept when the rate rule is off")
}

func TestOpenTimeoutGrowth(t *testing.T) {
	h := newHarness(t, Options{ConsecutiveFailures: 1})
	trip := func() time.Duration {
		start := h.clk.Now()
		// A closed breaker trips on one failure; a half-open one on a
		// failed probe.
		require.True(t, h.call("k", false))
		require.Equal(t, Open, h.s.State("k"))
		return h.s.ReadyAt("k").Sub(start)
	}
	toHalfOpen := func() { h.clk.Set(h.s.ReadyAt("k")) }

	want := []time.Duration{5, 10, 20, 40, 60, 60}
	for i, w := range want {
		if i > 0 {
			toHalfOpen()
		}
		assert.Equal(t, w*time.Second, trip(), "trip %d", i+1)
	}
	toHalfOpen()
	require.True(t, h.call("k", true))
	require.Equal(t, Closed, h.s.State("k"))
	assert.Equal(t, 5*time.Second, trip(), "a successful close resets the growth")
	assert.Equal(t, uint64(7), h.s.Trips())
}

func TestOpenTimeoutOptions(t *testing.T) {
	o := Options{OpenTimeout: time.Second, MaxOpenTimeout: 3 * time.Second}.withDefaults()
	got := []time.Duration{o.openTimeout(1), o.openTimeout(2), o.openTimeout(3), o.openTimeout(50)}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second}, got)
	o = Options{OpenTimeout: time.Minute, MaxOpenTimeout: time.Second}.withDefaults()
	assert.Equal(t, time.Minute, o.openTimeout(5), "MaxOpenTimeout below OpenTimeout: no growth")
}

func TestGenerations(t *testing.T) {
	h := newHarness(t, Options{ConsecutiveFailures: 2})
	old, ok := h.s.Allow("k") // admitted while closed, reports late
	require.True(t, ok)
	h.call("k", false)
	h.call("k", false)
	require.Equal(t, Open, h.s.State("k"))
	h.clk.Advance(5 * time.Second)

	probe, ok := h.s.Allow("k")
	require.True(t, ok)
	h.s.Done(old, false) // stale: must not re-open the half-open breaker
	assert.Equal(t, HalfOpen, h.s.State("k"))
	h.s.Done(probe, true)
	assert.Equal(t, Closed, h.s.State("k"))
	h.s.Done(probe, false) // stale now too
	assert.Equal(t, Closed, h.s.State("k"))
	assert.Zero(t, h.s.Keys()[0].ConsecutiveFailures)
}

func TestHalfOpenProbeLimit(t *testing.T) {
	for _, probes := range []int{1, 3} {
		t.Run(fmt.Sprint(probes), func(t *testing.T) {
			h := newHarness(t, Options{MaxProbes: probes, SuccessThreshold: 10})
			for range 5 {
				h.call("k", false)
			}
			h.clk.Advance(5 * time.Second)
			var ts []Ticket
			for range probes {
				tk, ok := h.s.Allow("k")
				require.True(t, ok)
				ts = append(ts, tk)
			}
			_, ok := h.s.Allow("k")
			assert.False(t, ok, "probes full")
			h.s.Release(ts[0])
			tk, ok := h.s.Allow("k")
			assert.True(t, ok, "Release frees a probe slot")
			h.s.Done(tk, true)
			tk, ok = h.s.Allow("k")
			assert.True(t, ok, "Done frees a probe slot")
			assert.Equal(t, HalfOpen, h.s.State("k"))
			h.s.Done(tk, false)
			assert.Equal(t, Open, h.s.State("k"))
		})
	}
}

// TestHalfOpenRace has many goroutines hit a breaker right as it turns
// half-open: at most MaxProbes are admitted, and none while the probes
// are out.
func TestHalfOpenRace(t *testing.T) {
	for _, probes := range []int{1, 2, 5} {
		t.Run(fmt.Sprint(probes), func(t *testing.T) {
			for round := range 20 {
				h := newHarness(t, Options{MaxProbes: probes})
				for range 5 {
					h.call("k", false)
				}
				h.clk.Advance(5 * time.Second)
				var (
					wg       sync.WaitGroup
					start    = make(chan struct{})
					mu       sync.Mutex
					admitted []Ticket
				)
				for range 64 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						for range 10 {
							if tk, ok := h.s.Allow("k"); ok {
								mu.Lock()
								admitted = append(admitted, tk)
								mu.Unlock()
							}
						}
					}()
				}
				close(start)
				wg.Wait()
				require.Len(t, admitted, probes, "round %d", round)
				for _, tk := range admitted {
					wg.Add(1)
					go func() { defer wg.Done(); h.s.Done(tk, true) }()
				}
				wg.Wait()
				assert.Equal(t, Closed, h.s.State("k"))
				assert.Equal(t, []string{"k:closed->open", "k:open->half-open", "k:half-open->closed"}, h.takeEvents())
			}
		})
	}
}

// TestConcurrentProbesInFlight hammers Allow and Done through many
// trips: in each half-open generation, probes in flight never exceed
// MaxProbes. (A probe of an older generation may still be out when the
// next half-open period admits new ones: its result will be ignored.)
func TestConcurrentProbesInFlight(t *testing.T) {
	const probes = 2
	h := newHarness(t, Options{MaxProbes: probes, ConsecutiveFailures: 3, FailureRate: -1})
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		inFlight = map[uint64]int{} // per half-open generation
		maxSeen  int
	)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				tk, ok := h.s.Allow("k")
				if !ok {
					if i%50 == 0 {
						h.clk.Advance(time.Second)
					}
					continue
				}
				probe := stateOf(tk.sg) == HalfOpen
				if probe {
					mu.Lock()
					inFlight[tk.sg]++
					maxSeen = max(maxSeen, inFlight[tk.sg])
					mu.Unlock()
				}
				runtime.Gosched() // let others try to sneak a probe in
				success := (g+i)%4 == 0
				if probe {
					mu.Lock()
					inFlight[tk.sg]--
					mu.Unlock()
				}
				h.s.Done(tk, success)
			}
		}()
	}
	wg.Wait()
	assert.LessOrEqual(t, maxSeen, probes)
	assert.Positive(t, maxSeen, "probes were admitted")
	assert.Positive(t, h.s.Trips())
}

func TestOnStateChange(t *testing.T) {
	h := newHarness(t, Options{ConsecutiveFailures: 1})
	h.call("a", false)
	h.call("b", true)
	h.clk.Advance(5 * time.Second)
	require.True(t, h.call("a", false), "the probe")
	assert.Equal(t, []string{"a:closed->open", "a:open->half-open", "a:half-open->open"}, h.takeEvents())

	// A callback may call back into the Set, even causing a transition.
	clk := clock.NewFake(time.Time{})
	var s *Set
	var got []string
	s = New(Options{Clock: clk, ConsecutiveFailures: 1, OnStateChange: func(key string, from, to State) {
		got = append(got, fmt.Sprintf("%s->%s (State says %s)", from, to, s.State(key)))
		if to == Open && key == "x" {
			s.Reset(key) // re-entrant transition: delivered after this call returns
		}
	}})
	tk, _ := s.Allow("x")
	s.Done(tk, false)
	assert.Equal(t, []string{"closed->open (State says open)", "open->closed (State says closed)"}, got)
}

func TestOnStateChangePanicDoesNotWedge(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	calls := 0
	s := New(Options{Clock: clk, ConsecutiveFailures: 1, OnStateChange: func(string, State, State) {
		calls++
		if calls == 1 {
			panic("callback bug")
		}
	}})
	tk, _ := s.Allow("x")
	assert.Panics(t, func() { s.Done(tk, false) })
	s.Reset("x")
	assert.Equal(t, 2, calls, "later transitions are still delivered")
}

func TestEmptyKey(t *testing.T) {
	h := newHarness(t, Options{ConsecutiveFailures: 1})
	for range 10 {
		tk, ok := h.s.Allow("")
		require.True(t, ok)
		assert.Equal(t, Ticket{}, tk)
		h.s.Done(tk, false)
		h.s.Release(tk)
	}
	assert.Equal(t, Closed, h.s.State(""))
	assert.Empty(t, h.s.Keys())
	assert.Zero(t, h.s.Trips())
	assert.True(t, h.s.ReadyAt("").IsZero())
}

func TestKeysReadyAtReset(t *testing.T) {
	h := newHarness(t, Options{ConsecutiveFailures: 2})
	h.call("b", false)
	h.call("a", false)
	h.call("a", false)
	ks := h.s.Keys()
	require.Len(t, ks, 2)
	assert.Equal(t, "a", ks[0].Key)
	assert.Equal(t, Open, ks[0].State)
	assert.Equal(t, uint64(1), ks[0].Trips)
	assert.Equal(t, h.clk.Now().Add(5*time.Second), ks[0].ReadyAt)
	assert.Equal(t, h.s.ReadyAt("a"), ks[0].ReadyAt)
	assert.Equal(t, KeyState{Key: "b", State: Closed, ConsecutiveFailures: 1, Calls: 1, Failures: 1}, ks[1])
	assert.True(t, h.s.ReadyAt("b").IsZero(), "closed: zero")
	assert.True(t, h.s.ReadyAt("nope").IsZero(), "unknown: zero")
	assert.Equal(t, Closed, h.s.State("nope"))

	h.clk.Advance(5 * time.Second)
	assert.Equal(t, HalfOpen, h.s.Keys()[0].State, "the effective state")

	h.s.Reset("a")
	assert.Equal(t, Closed, h.s.State("a"))
	assert.True(t, h.call("a", true))
	h.s.Reset("b") // closed: no-op
	h.s.Reset("nope")
	assert.Equal(t, []string{"a:closed->open", "a:open->closed"}, h.takeEvents())
}

func TestIdleEviction(t *testing.T) {
	h := newHarness(t, Options{ConsecutiveFailures: 1})
	h.call("idle", true)
	h.call("open", false)
	stale, _ := h.s.Allow("idle")
	h.clk.Advance(10*time.Minute - 1)
	assert.Empty(t, h.s.Sweep(h.clk.Now()), "not idle long enough")
	h.clk.Advance(1)
	assert.Equal(t, []string{"idle"}, h.s.Sweep(h.clk.Now()), "open breakers are kept")
	assert.Equal(t, []string{"open"}, keys(h.s))

	h.s.Done(stale, false) // in flight across the eviction: ignored
	assert.Equal(t, []string{"open"}, keys(h.s))
	assert.True(t, h.call("idle", true), "an evicted key starts afresh")
	assert.Equal(t, []string{"idle", "open"}, keys(h.s))

	// Creating a key sweeps by itself, at most every IdleTTL/2.
	h.clk.Advance(6 * time.Minute)
	h.call("new1", true)
	h.clk.Advance(6 * time.Minute)
	h.call("new2", true)
	assert.Equal(t, []string{"new1", "new2", "open"}, keys(h.s), "idle swept when new2 arrived")

	never := newHarness(t, Options{IdleTTL: -1})
	never.call("k", true)
	never.clk.Advance(1000 * time.Hour)
	assert.Empty(t, never.s.Sweep(never.clk.Now()))
	never.call("k2", true)
	assert.Len(t, never.s.Keys(), 2)
}

// TestEvictedBreakerSeenByAllow covers an Allow that loaded a breaker just
// before a sweep evicted it: it looks the key up again.
func TestEvictedBreakerSeenByAllow(t *testing.T) {
	h := newHarness(t, Options{})
	h.call("k", true)
	v, _ := h.s.m.Load("k")
	old := v.(*keyBreaker)
	old.mu.Lock()
	h.s.setState(old, evicted) // evicted, not yet deleted from the map
	old.mu.Unlock()
	tk, ok := h.s.Allow("k")
	require.True(t, ok)
	assert.NotSame(t, old, tk.b, "a fresh breaker")
	assert.Equal(t, Closed, h.s.State("k"))
}

func keys(s *Set) []string {
	var out []string
	for _, k := range s.Keys() {
		out = append(out, k.Key)
	}
	return out
}

func TestAllowClosedDoesNotAllocate(t *testing.T) {
	s := New(Options{})
	tk, _ := s.Allow("api.example.com")
	s.Done(tk, true)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { _, _ = s.Allow("api.example.com") }))
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		tk, _ := s.Allow("api.example.com")
		s.Done(tk, true)
	}), "Done does not allocate either")
}

func TestStateString(t *testing.T) {
	assert.Equal(t, "closed", Closed.String())
	assert.Equal(t, "open", Open.String())
	assert.Equal(t, "half-open", HalfOpen.String())
	assert.Equal(t, "state(9)", State(9).String())
	b, err := HalfOpen.MarshalText()
	require.NoError(t, err)
	assert.Equal(t, "half-open", string(b))
}

func TestWindowBuckets(t *testing.T) {
	w := newWindow(int64(10*time.Second), 10)
	w.add(0, false)
	w.add(int64(999*time.Millisecond), true)
	w.add(int64(5*time.Second), true)
	c, f := w.sum(int64(9 * time.Second))
	assert.Equal(t, [2]int{3, 2}, [2]int{c, f})
	c, f = w.sum(int64(10 * time.Second))
	assert.Equal(t, [2]int{1, 1}, [2]int{c, f}, "the first bucket left")
	c, _ = w.sum(int64(16 * time.Second))
	assert.Zero(t, c)
	w.reset()
	c, _ = w.sum(0)
	assert.Zero(t, c)

	o := Options{Window: 5, Buckets: 100}.withDefaults()
	assert.Equal(t, 5, o.Buckets, "buckets at least 1ns wide")
}
