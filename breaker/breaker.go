package breaker

import (
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Set is a collection of circuit breakers, one per key, created on first
// use. All methods are safe for concurrent use. Create it with New.
type Set struct {
	o    Options
	base time.Time // times inside are nanoseconds since base
	m    sync.Map  // key -> *keyBreaker
	n    notifier

	trips     atomic.Uint64
	lastSweep atomic.Int64
}

// keyBreaker is the breaker of one key. sg and readyAt are read without
// the lock by the fast paths and written only with it held.
type keyBreaker struct {
	sg      atomic.Uint64 // generation<<2 | State
	readyAt atomic.Int64  // when Open ends, ns since Set.base

	key string

	mu       sync.Mutex
	consec   int    // consecutive failures (closed)
	win      window // calls and failures (closed)
	probes   int    // probes in flight (half-open)
	succ     int    // probe successes (half-open)
	trips    uint64 // lifetime trips of this key
	cause    uint8  // the cause given with the failure that last tripped it (Fail)
	tripped  bool   // it tripped at least once: cause means something
	streak   int    // trips since the last successful close: grows the open timeout
	lastUsed int64  // last Done, or creation
}

const stateMask = 3

func stateOf(sg uint64) State { return State(sg & stateMask) }

// Ticket is what Allow hands out: the breaker and the generation it was
// admitted in. It is an opaque, comparable value; the zero Ticket (from
// the empty key) is valid and Done ignores it. Pass every admitted ticket
// to Done or Release exactly once: a half-open breaker counts its probes
// in flight until they come back.
type Ticket struct {
	b  *keyBreaker
	sg uint64
}

// KeyState is a snapshot of one key's breaker, for metrics and the admin
// API.
type KeyState struct {
	Key   string
	State State
	// Trips is how many times this key's breaker opened since it was
	// created (an evicted key starts again at 0).
	Trips uint64
	// ConsecutiveFailures is the current run of failures while closed.
	ConsecutiveFailures int
	// Calls and Failures are the rolling window's counts while closed.
	Calls, Failures int
	// Probes is the number of half-open probes in flight.
	Probes int
	// ReadyAt is when an open breaker turns half-open; zero otherwise.
	ReadyAt time.Time
}

// New returns an empty Set configured by o (zero fields take defaults).
func New(o Options) *Set {
	o = o.withDefaults()
	return &Set{o: o, base: o.Clock.Now(), n: notifier{fn: o.OnStateChange}}
}

// now returns the clock as nanoseconds since s.base.
func (s *Set) now() int64 { return int64(s.o.Clock.Now().Sub(s.base)) }

// Allow asks whether a call to key may go ahead. On true the caller makes
// the call and reports its outcome with Done(ticket, success). On false
// the breaker is open (until ReadyAt) or half-open with its probes out.
// The empty key has no breaker: Allow returns the zero Ticket and true.
//
// On a closed breaker Allow only reads atomics (a sync.Map load and the
// state word): no lock, no allocation. Creating a key's breaker, and the
// open and half-open states, take the key's mutex.
func (s *Set) Allow(key string) (Ticket, bool) {
	if key == "" {
		return Ticket{}, true
	}
	if v, ok := s.m.Load(key); ok {
		b := v.(*keyBreaker)
		if sg := b.sg.Load(); stateOf(sg) == Closed {
			return Ticket{b: b, sg: sg}, true
		}
		return s.allowSlow(b)
	}
	return s.allowNew(key)
}

// allowNew creates key's breaker (or finds the one a racing call made),
// sweeping idle keys first if one is due, since new keys are what makes
// the set grow.
func (s *Set) allowNew(key string) (Ticket, bool) {
	now := s.now()
	s.maybeSweep(now)
	// Clone: the caller's key may be a slice of a larger string (a parsed
	// header, say) that the map would otherwise keep alive.
	b := &keyBreaker{key: strings.Clone(key), lastUsed: now}
	if s.o.FailureRate > 0 {
		b.win = newWindow(int64(s.o.Window), s.o.Buckets)
	}
	v, _ := s.m.LoadOrStore(b.key, b)
	b = v.(*keyBreaker)
	if sg := b.sg.Load(); stateOf(sg) == Closed {
		return Ticket{b: b, sg: sg}, true
	}
	return s.allowSlow(b)
}

// allowSlow handles a breaker that was not closed at the fast path's look.
func (s *Set) allowSlow(b *keyBreaker) (Ticket, bool) {
	now := s.now()
	if stateOf(b.sg.Load()) == Open && now < b.readyAt.Load() {
		return Ticket{}, false // still open: no lock needed to say no
	}
	b.mu.Lock()
	sg := b.sg.Load()
	switch stateOf(sg) {
	case evicted:
		b.mu.Unlock()
		s.m.CompareAndDelete(b.key, b) // the sweep may not have got there yet
		return s.allowNew(b.key)
	case Closed:
		b.mu.Unlock()
		return Ticket{b: b, sg: sg}, true
	case Open:
		if now < b.readyAt.Load() {
			b.mu.Unlock()
			return Ticket{}, false
		}
		s.setState(b, HalfOpen)
	}
	// Half-open: admit a probe if one is free.
	t, ok := Ticket{}, false
	if b.probes < s.o.MaxProbes {
		b.probes++
		t, ok = Ticket{b: b, sg: b.sg.Load()}, true
	}
	b.mu.Unlock()
	s.n.flush()
	return t, ok
}

// Done reports the outcome of a call admitted by Allow. A ticket from an
// older generation (the breaker changed state since Allow, or its key was
// evicted) is ignored, as in gobreaker: its result describes a target
// state that no longer applies. Done takes the key's mutex, and the
// Set-wide notification mutex only when the result changed the state.
//
// Closed: a failure extends the consecutive run and counts in the window,
// and may trip the breaker; a success ends the run. Half-open: a failure
// re-opens the breaker (with a longer timeout); SuccessThreshold successes
// close it.
func (s *Set) Done(t Ticket, success bool) {
	s.done(t, success, 0)
}

// Fail reports a failed call as Done(t, false) does, with cause. The cause
// is a code of the caller's own that the breaker keeps for TripCause if
// this failure opens it. The engine passes the failure's category, so
// that what it held behind the open breaker can later be dead-lettered
// under it.
func (s *Set) Fail(t Ticket, cause uint8) {
	s.done(t, false, cause)
}

// TripCause returns the cause given (by Fail; 0 by Done) with the failure
// that last opened key's breaker. ok is false when that breaker never
// opened, or its key is unknown (never seen, or evicted: only closed
// breakers are).
func (s *Set) TripCause(key string) (cause uint8, ok bool) {
	v, found := s.m.Load(key)
	if !found {
		return 0, false
	}
	b := v.(*keyBreaker)
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cause, b.tripped
}

// IsProbe reports whether t was admitted by a half-open breaker: a probe
// of a target that was failing, rather than a call through a closed one.
func (t Ticket) IsProbe() bool { return t.b != nil && stateOf(t.sg) == HalfOpen }

func (s *Set) done(t Ticket, success bool, cause uint8) {
	b := t.b
	if b == nil {
		return
	}
	now := s.now()
	b.mu.Lock()
	if b.sg.Load() != t.sg {
		b.mu.Unlock()
		return
	}
	b.lastUsed = now
	switch stateOf(t.sg) {
	case Closed:
		b.win.add(now, !success)
		if success {
			b.consec = 0
		} else {
			b.consec++
			if s.shouldTrip(b, now) {
				s.trip(b, now, cause)
			}
		}
	case HalfOpen:
		b.probes = max(b.probes-1, 0)
		if !success {
			s.trip(b, now, cause)
		} else if b.succ++; b.succ >= s.o.SuccessThreshold {
			b.streak = 0
			s.setState(b, Closed)
		}
	}
	moved := b.sg.Load() != t.sg // a transition queued a notification
	b.mu.Unlock()
	if moved {
		// Only then: flush takes the Set-wide notifier mutex, which every
		// key's result would otherwise contend on.
		s.n.flush()
	}
}

// Release ends an admitted call without an outcome: the call said nothing
// about the target's health (the message was poison, or was cancelled
// before it reached the target). It frees a half-open probe slot and
// counts nothing.
func (s *Set) Release(t Ticket) {
	b := t.b
	if b == nil {
		return
	}
	now := s.now()
	b.mu.Lock()
	if b.sg.Load() == t.sg {
		b.lastUsed = now
		if stateOf(t.sg) == HalfOpen {
			b.probes = max(b.probes-1, 0)
		}
	}
	b.mu.Unlock()
}

// shouldTrip applies the trip rules to a closed breaker that just failed;
// b.mu is held.
func (s *Set) shouldTrip(b *keyBreaker, now int64) bool {
	if n := s.o.ConsecutiveFailures; n > 0 && b.consec >= n {
		return true
	}
	if s.o.FailureRate <= 0 {
		return false
	}
	calls, fail := b.win.sum(now)
	return calls >= s.o.MinCalls && float64(fail) >= s.o.FailureRate*float64(calls)
}

// trip opens b because of a failure given cause; b.mu is held.
func (s *Set) trip(b *keyBreaker, now int64, cause uint8) {
	b.trips++
	b.cause, b.tripped = cause, true
	b.streak++
	s.trips.Add(1)
	ready := now + int64(s.o.openTimeout(b.streak))
	if ready < now { // saturate: a huge timeout must not wrap into the past
		ready = math.MaxInt64
	}
	b.readyAt.Store(ready)
	s.setState(b, Open)
}

// setState moves b to a new generation in state to, clearing every count
// (gobreaker's toNewGeneration), and queues the notification; b.mu is
// held.
func (s *Set) setState(b *keyBreaker, to State) {
	old := b.sg.Load()
	b.sg.Store((old>>2+1)<<2 | uint64(to))
	b.consec, b.probes, b.succ = 0, 0, 0
	b.win.reset()
	if to != evicted {
		s.n.push(event{key: b.key, from: stateOf(old), to: to})
	}
}

// State returns key's state: Closed for a key without a breaker. An open
// breaker whose timeout has passed reports HalfOpen; the transition itself
// (and its OnStateChange call) happens on the next Allow.
func (s *Set) State(key string) State {
	v, ok := s.m.Load(key)
	if !ok {
		return Closed
	}
	b := v.(*keyBreaker)
	return s.effective(stateOf(b.sg.Load()), b.readyAt.Load())
}

func (s *Set) effective(st State, readyAt int64) State {
	switch {
	case st == evicted:
		return Closed
	case st == Open && s.now() >= readyAt:
		return HalfOpen
	}
	return st
}

// ReadyAt returns when key's open breaker turns half-open, so the caller
// can hold the key's work until then; it may be in the past if no Allow
// has come since. It is the zero time if the breaker is not open.
func (s *Set) ReadyAt(key string) time.Time {
	v, ok := s.m.Load(key)
	if !ok {
		return time.Time{}
	}
	b := v.(*keyBreaker)
	if stateOf(b.sg.Load()) != Open {
		return time.Time{}
	}
	return s.base.Add(time.Duration(b.readyAt.Load()))
}

// Reset closes key's breaker at once, as an operator override, and
// forgets its trip streak. It is a no-op for a closed or unknown key.
func (s *Set) Reset(key string) {
	v, ok := s.m.Load(key)
	if !ok {
		return
	}
	b := v.(*keyBreaker)
	b.mu.Lock()
	if st := stateOf(b.sg.Load()); st == Open || st == HalfOpen {
		b.streak = 0
		s.setState(b, Closed)
	}
	b.mu.Unlock()
	s.n.flush()
}

// Trips returns how many times any breaker of the set has opened.
func (s *Set) Trips() uint64 { return s.trips.Load() }

// Keys returns a snapshot of every key's breaker, sorted by key. Each
// entry is consistent; the set as a whole is not a point-in-time view.
func (s *Set) Keys() []KeyState {
	now := s.now()
	var out []KeyState
	s.m.Range(func(_, v any) bool {
		b := v.(*keyBreaker)
		b.mu.Lock()
		sg := b.sg.Load()
		if stateOf(sg) == evicted {
			b.mu.Unlock()
			return true
		}
		ks := KeyState{
			Key: b.key, State: s.effective(stateOf(sg), b.readyAt.Load()),
			Trips: b.trips, ConsecutiveFailures: b.consec, Probes: b.probes,
		}
		ks.Calls, ks.Failures = b.win.sum(now)
		if stateOf(sg) == Open {
			ks.ReadyAt = s.base.Add(time.Duration(b.readyAt.Load()))
		}
		b.mu.Unlock()
		out = append(out, ks)
		return true
	})
	slices.SortFunc(out, func(a, b KeyState) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// Sweep evicts the breakers that are closed and have recorded no result
// for IdleTTL as of now, and returns their keys (so the caller can drop
// per-key metric series). An evicted key starts afresh on its next Allow;
// a result still in flight for it is ignored. Sweep runs by itself, at
// most every IdleTTL/2, when Allow creates a new key; call it to sweep
// on a schedule of your own. It takes each key's mutex in turn.
func (s *Set) Sweep(now time.Time) []string {
	if s.o.IdleTTL < 0 {
		return nil
	}
	return s.sweep(int64(now.Sub(s.base)))
}

func (s *Set) maybeSweep(now int64) {
	if s.o.IdleTTL < 0 {
		return
	}
	last := s.lastSweep.Load()
	if now-last < int64(s.o.IdleTTL/2) || !s.lastSweep.CompareAndSwap(last, now) {
		return
	}
	s.sweep(now)
}

func (s *Set) sweep(now int64) []string {
	var gone []string
	ttl := int64(s.o.IdleTTL)
	s.m.Range(func(k, v any) bool {
		b := v.(*keyBreaker)
		b.mu.Lock()
		idle := stateOf(b.sg.Load()) == Closed && now-b.lastUsed >= ttl
		if idle {
			s.setState(b, evicted) // stales its tickets; racing Allows look again
		}
		b.mu.Unlock()
		if idle {
			s.m.CompareAndDelete(k, b)
			gone = append(gone, b.key)
		}
		return true
	})
	return gone
}
