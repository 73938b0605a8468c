package ringwal

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/internal/sched"
)

// This file owns what the engine does per Key (the downstream target)
// beyond the breaker. It holds the key registry and KeyPolicy: order,
// in-flight cap, rate, queued cap. It holds pauses (an operator's, a
// Retry-After's, all delivery's) and the set-aside queue of messages that
// wait on their key.
//
// A message that waits on its key never blocks its tier. The consumer
// that pops it from the ring sets it aside in its key's queue (state
// stWaiting) and moves on. The key puts it back in its tier when it can
// take one: a lease of the key ended, a token is due, the pause ended.
// Messages of an ordered key wait in that queue from their enqueue on, in
// enqueue order, and only the head is ever out of it.
//
// Cost: a key without a policy has no per-key state on the hot path; the
// engine looks it up only while some key is paused. A key with a policy
// counts an enqueue with one CAS (its mutex too if it is ordered), and
// takes its mutex when a message of it is leased or its lease ends.

// WaitReason says why a pending message is kept aside by its key instead of
// waiting in its tier (Info.Waiting, Stats.WaitingByReason).
type WaitReason uint8

// Why a message waits on its key.
const (
	NotWaiting   WaitReason = iota // in its tier, or not pending
	WaitOrdered                    // behind the head of its ordered key
	WaitInFlight                   // its key has KeyPolicy.MaxInFlight leased
	WaitRate                       // its key is out of tokens (KeyPolicy.Rate)
	WaitPaused                     // its key is paused (PauseKey, a Retry-After)
)

// String returns the lower-case name of w.
func (w WaitReason) String() string {
	switch w {
	case NotWaiting:
		return "none"
	case WaitOrdered:
		return "ordered"
	case WaitInFlight:
		return "in-flight"
	case WaitRate:
		return "rate"
	case WaitPaused:
		return "paused"
	}
	return fmt.Sprintf("wait(%d)", uint8(w))
}

// KeyPolicy limits how the messages of one Key are delivered. The zero
// policy has none of these limits. Options.KeyPolicy returns it per key;
// it is consulted when a key is first seen, and again after a reopen.
//
// Isolation holds without a policy: while a key's breaker is open its held
// messages fill at most a quarter of Options.MaxMessages, past which
// enqueues for that key fail fast with an error wrapping ErrFull that
// names the key. A RateLimited nack whose cause carries a Retry-After hint
// (classify.RetryAfter) pauses its whole key until then.
type KeyPolicy struct {
	// Ordered delivers the key's messages one at a time in enqueue order. A
	// nacked message keeps the head of its key until it is retried and
	// settled, or dead-lettered; then the next one goes. Across priorities
	// within one ordered key, enqueue order wins: a Critical message waits
	// behind an earlier Low one of the same key.
	Ordered bool
	// MaxInFlight caps the key's messages leased at once; 0 = no cap.
	MaxInFlight int
	// Rate is the key's deliveries per second (a token bucket,
	// golang.org/x/time/rate); 0 = no limit.
	Rate float64
	// Burst is the token bucket's size; 0 = 1.
	Burst int
	// MaxQueued caps the key's live messages in any state; past it Enqueue
	// waits and TryEnqueue fails with an error wrapping ErrFull that names
	// the key. 0 = no cap.
	MaxQueued int
	// MaxHold dead-letters a message held behind the key's open breaker
	// longer than this, with the category of the failures that opened it.
	// Options.MaxHold says how the time counts. 0 = Options.MaxHold,
	// which defaults to 15m and may hold forever. A negative MaxHold is
	// not a valid policy.
	MaxHold time.Duration
}

func (p KeyPolicy) validate() error {
	switch {
	case p.MaxInFlight < 0, p.Burst < 0, p.MaxQueued < 0, p.MaxHold < 0:
		return invalidf("KeyPolicy %+v: negative limit", p)
	case p.Rate < 0 || math.IsNaN(p.Rate) || math.IsInf(p.Rate, 0):
		return invalidf("KeyPolicy Rate %v: must be a finite number >= 0", p.Rate)
	}
	return nil
}

// gated reports whether p limits delivery at all (the per-key mutex is
// taken only then).
func (p KeyPolicy) gated() bool { return p != KeyPolicy{} }

// untilResumed is a pause's end when it has none.
const untilResumed = math.MaxInt64

// keyState is one key's per-key state. The registry keeps it while the key
// has live messages, a pause, or held messages.
type keyState struct {
	key    string
	id     uint64 // names the key in timer entries
	policy KeyPolicy
	// live counts the key's messages in the slab (MaxQueued); retired
	// (math.MinInt64) once the registry dropped the state, so that a
	// racing enqueue looks it up again.
	live atomic.Int64

	mu          sync.Mutex
	limiter     *rate.Limiter // nil without Rate
	inFlight    int           // leases of the key (gated keys only)
	headOut     bool          // ordered: one message is out of the queue
	headID      uint64        // ordered: that message
	pausedUntil int64         // unix ns; 0 = not paused; untilResumed
	queue       []waitEntry   // set-aside messages, in the order they go back
	popped      uint64        // entries ever removed from the queue's front (Messages' cursor)
	recheckAt   int64         // a recheck timer is due then (0: none)
}

type waitEntry struct {
	rf     ref
	reason WaitReason
}

// keys is the engine's key registry.
type keys struct {
	policy func(string) KeyPolicy // nil: no key has a policy
	m      sync.Map               // string -> *keyState
	byID   sync.Map               // uint64 -> *keyState
	nextID atomic.Uint64
	// paused counts paused keys: while it is zero, a key without a policy
	// needs no look-up at all on the hot path.
	paused atomic.Int32
	// allUntil is the end of a Pause of all delivery (0: none).
	allUntil atomic.Int64
}

// lookup returns key's state if the registry has one.
func (k *keys) lookup(key string) *keyState {
	if v, ok := k.m.Load(key); ok {
		return v.(*keyState)
	}
	return nil
}

// get returns key's state, creating it (and consulting the policy) on first
// sight.
func (k *keys) get(key string) *keyState {
	if ks := k.lookup(key); ks != nil {
		return ks
	}
	// popped starts far from zero: a head going back to the queue's front
	// counts it down, and Messages compares cursors, which must not wrap.
	ks := &keyState{key: key, id: k.nextID.Add(1), popped: 1 << 32}
	if k.policy != nil {
		ks.policy = k.policy(key)
		if ks.policy.validate() != nil {
			ks.policy = KeyPolicy{} // Open validated none; a bad one limits nothing
		}
		if ks.policy.Rate > 0 {
			ks.limiter = rate.NewLimiter(rate.Limit(ks.policy.Rate), max(ks.policy.Burst, 1))
		}
	}
	v, loaded := k.m.LoadOrStore(key, ks)
	if !loaded {
		k.byID.Store(ks.id, ks)
	}
	return v.(*keyState)
}

// retired marks a keyState the registry dropped (keyState.live).
const retired = math.MinInt64

// sweep drops the state of keys that have nothing left to remember: no
// live message, lease, queue, pause or pending recheck. An enqueue racing
// the sweep finds its state retired and looks the key up again.
func (k *keys) sweep() (dropped int) {
	k.m.Range(func(key, v any) bool {
		ks := v.(*keyState)
		ks.mu.Lock()
		idle := ks.inFlight == 0 && !ks.headOut && len(ks.queue) == 0 && ks.pausedUntil == 0 && ks.recheckAt == 0
		if idle && ks.live.CompareAndSwap(0, retired) {
			k.m.CompareAndDelete(key, ks)
			k.byID.Delete(ks.id)
			dropped++
		}
		ks.mu.Unlock()
		return true
	})
	return dropped
}

// forID returns the state a timer entry names.
func (k *keys) forID(id uint64) *keyState {
	if v, ok := k.byID.Load(id); ok {
		return v.(*keyState)
	}
	return nil
}

// enter counts one more live message of the key, waiting while the key is
// at MaxQueued (or failing with ErrFull when wait is false). It returns
// false when ks was retired meanwhile: look it up again.
func (ks *keyState) enter(e *Engine, wait bool, pause func() error) (bool, error) {
	counted := false
	for {
		v := ks.live.Load()
		if v < 0 {
			return false, nil
		}
		if c := ks.policy.MaxQueued; c > 0 && v >= int64(c) {
			if !counted {
				e.ctr.backpressure.Add(1)
				counted = true
			}
			if !wait {
				return true, fmt.Errorf("%w: key %q has MaxQueued %d live messages", ErrFull, ks.key, c)
			}
			if err := pause(); err != nil {
				return true, err
			}
			continue
		}
		if ks.live.CompareAndSwap(v, v+1) {
			return true, nil
		}
	}
}

// keyForEnqueue admits a new message of key m.Key: isolation (a key whose
// breaker is open and whose held messages fill a quarter of MaxMessages is
// refused) and MaxQueued. It returns the key's state when the message
// must carry it (the key has a policy), nil otherwise.
func (e *Engine) keyForEnqueue(ctx context.Context, key string, wait bool) (*keyState, error) {
	if e.held.cappedKeys.Load() > 0 {
		if n, capped := e.held.capped(key); capped {
			e.ctr.backpressure.Add(1)
			return nil, fmt.Errorf("%w: key %q: its breaker is open and %d of its messages are held (a quarter of MaxMessages)", ErrFull, key, n)
		}
	}
	if e.keys.policy == nil {
		return nil, nil
	}
	for {
		ks := e.keys.get(key)
		if !ks.policy.gated() {
			return nil, nil
		}
		ok, err := ks.enter(e, wait, func() error { return e.pause(ctx) })
		if err != nil {
			return nil, err
		}
		if ok {
			return ks, nil
		}
	}
}

// keyForPlacement counts a message that re-enters the slab (a redrive, a
// recovered message) against its key without waiting on MaxQueued: it is
// not new. It returns the state the record carries (nil without a policy).
func (e *Engine) keyForPlacement(key string) *keyState {
	if key == "" || e.keys.policy == nil {
		return nil
	}
	for {
		ks := e.keys.get(key)
		if !ks.policy.gated() {
			return nil
		}
		if v := ks.live.Load(); v >= 0 && ks.live.CompareAndSwap(v, v+1) {
			return ks
		}
	}
}

// unenter undoes enter for a message that was not added after all.
func (ks *keyState) unenter() {
	if ks != nil {
		ks.live.Add(-1)
	}
}

// keyOrdered reports whether key has an ordered policy.
func (e *Engine) keyOrdered(key string) bool {
	return key != "" && e.keys.policy != nil && e.keys.get(key).policy.Ordered
}

// setAside publishes an owned record as waiting on its key, at the back of
// the queue (or the front: an ordered key's head going back). ks.mu held.
func (ks *keyState) setAside(c *liveCounts, slot uint32, r *rec, why WaitReason, front bool) {
	r.setWait(why)
	we := waitEntry{rf: r.publish(c, slot, stWaiting), reason: why}
	if front {
		ks.queue = append(ks.queue, waitEntry{})
		copy(ks.queue[1:], ks.queue)
		ks.queue[0] = we
		ks.popped-- // the cursor of Messages counts it as not yet popped
		return
	}
	ks.queue = append(ks.queue, we)
}

// admit decides, at lease time, whether a popped message of a key may go
// out now; it counts the lease when it may. It returns why not otherwise.
// Called without ks.mu.
func (e *Engine) admit(ks *keyState, slot uint32, r *rec, now int64) bool {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	why := NotWaiting
	switch {
	case ks.pausedAt(now):
		why = WaitPaused
	case ks.policy.MaxInFlight > 0 && ks.inFlight >= ks.policy.MaxInFlight:
		why = WaitInFlight
	case ks.limiter != nil && !ks.limiter.AllowN(time.Unix(0, now), 1):
		why = WaitRate
	}
	if why == NotWaiting {
		if ks.policy.gated() {
			ks.inFlight++
		}
		return true
	}
	// An ordered key's head goes back to the front, no longer out.
	front := ks.policy.Ordered && ks.headID == r.id.Load()
	if front {
		ks.headOut, ks.headID = false, 0
	}
	ks.setAside(e.counts, slot, r, why, front)
	e.scheduleKeyRecheck(ks, now)
	return false
}

// pausedAt reports whether the key is paused at now. ks.mu held.
func (ks *keyState) pausedAt(now int64) bool {
	return ks.pausedUntil != 0 && now < ks.pausedUntil
}

// unadmit takes back a lease counted by admit that did not happen (the
// breaker refused it). Called without ks.mu.
func (e *Engine) unadmit(ks *keyState) {
	if ks == nil || !ks.policy.gated() {
		return
	}
	ks.mu.Lock()
	ks.inFlight--
	ks.mu.Unlock()
}

// keyLeaseEnded tells a gated key that one of its leases ended (settled,
// expired, requeued, cancelled) and lets the next message go.
func (e *Engine) keyLeaseEnded(ks *keyState, now int64) {
	if ks == nil {
		return
	}
	ks.mu.Lock()
	ks.inFlight--
	e.releaseWaiting(ks, now)
	ks.mu.Unlock()
}

// keyGone tells the key that its message id left the slab (acked,
// dead-lettered, cancelled): an ordered key's next message becomes the
// head.
func (e *Engine) keyGone(ks *keyState, id uint64, now int64) {
	if ks == nil {
		return
	}
	ks.live.Add(-1)
	if !ks.policy.Ordered {
		return
	}
	ks.mu.Lock()
	if ks.headID == id {
		ks.headOut, ks.headID = false, 0
		e.releaseWaiting(ks, now)
	}
	ks.mu.Unlock()
}

// releaseWaiting puts back in their tiers as many set-aside messages as
// the key can take now, in queue order; a time-bound wait gets a recheck
// timer. Called with ks.mu held, which it drops while it takes each
// record: the lock order is record, then key (an owner of a queued record
// - Cancel, a TTL expiry - may be waiting for ks.mu).
func (e *Engine) releaseWaiting(ks *keyState, now int64) {
	budget := e.releasable(ks, now)
	for budget > 0 && len(ks.queue) > 0 && !(ks.policy.Ordered && ks.headOut) {
		we := ks.queue[0]
		ks.queue[0] = waitEntry{}
		ks.queue = ks.queue[1:]
		ks.popped++
		if ks.policy.Ordered {
			ks.headOut, ks.headID = true, 0 // reserved while unlocked
		}
		ks.mu.Unlock()
		r := e.slab.at(we.rf.slot)
		ok := r.own(we.rf.gen, stWaiting)
		id := uint64(0)
		if ok {
			id = r.id.Load()
			r.setWait(NotWaiting)
		}
		ks.mu.Lock()
		if !ok {
			if ks.policy.Ordered {
				ks.headOut = false // moved on meanwhile: expired, cancelled
			}
			continue
		}
		budget--
		if ks.policy.Ordered {
			ks.headID = id
		}
		if due := r.at; due > now {
			e.delay(we.rf.slot, r, due)
		} else {
			e.makeReady(we.rf.slot, r, now)
		}
	}
	if len(ks.queue) == 0 {
		ks.queue = nil
	}
	e.scheduleKeyRecheck(ks, now)
}

// releasable is how many set-aside messages the key can take now.
// ks.mu held.
func (e *Engine) releasable(ks *keyState, now int64) int {
	n := len(ks.queue)
	switch {
	case n == 0, ks.pausedAt(now):
		return 0 // a pause's end rechecks
	case ks.policy.Ordered:
		if ks.headOut {
			return 0
		}
		n = 1
	case ks.policy.MaxInFlight > 0:
		n = min(n, ks.policy.MaxInFlight-ks.inFlight)
	}
	if ks.limiter != nil {
		if tokens := int(ks.limiter.TokensAt(time.Unix(0, now))); tokens < n {
			n = tokens
			if n == 0 {
				e.markFront(ks, WaitRate) // no longer behind a head: behind a token
			}
		}
	}
	return n
}

// markFront records why the front of the key's queue waits now. ks.mu
// held.
func (e *Engine) markFront(ks *keyState, why WaitReason) {
	we := &ks.queue[0]
	if we.reason == why {
		return
	}
	r := e.slab.at(we.rf.slot)
	if r.tryOwn(we.rf.gen, stWaiting) { // cosmetic: never wait with ks.mu held
		r.setWait(why)
		we.reason = why
		r.keep(e.counts, stWaiting)
	}
}

// scheduleKeyRecheck arms a timer for when a key that is out of tokens, or
// paused until a time, can take a message again. ks.mu held.
func (e *Engine) scheduleKeyRecheck(ks *keyState, now int64) {
	if len(ks.queue) == 0 {
		return
	}
	at := int64(0)
	switch {
	case ks.pausedAt(now):
		if ks.pausedUntil == untilResumed {
			return // ResumeKey rechecks
		}
		at = ks.pausedUntil
	case ks.limiter != nil:
		tokens := ks.limiter.TokensAt(time.Unix(0, now))
		if tokens >= 1 {
			return
		}
		wait := time.Duration((1 - tokens) / float64(ks.limiter.Limit()) * float64(time.Second))
		at = now + max(int64(wait), int64(time.Microsecond))
	default:
		return // a lease ending or the head leaving releases
	}
	if ks.recheckAt != 0 && ks.recheckAt <= at {
		return
	}
	ks.recheckAt = at
	e.hk.schedule(at, sched.Entry{ID: ks.id, Kind: timerKey})
}

// recheckKey is the housekeeper's handling of a key's recheck timer.
func (e *Engine) recheckKey(id uint64, now int64) {
	ks := e.keys.forID(id)
	if ks == nil {
		return
	}
	ks.mu.Lock()
	if ks.recheckAt <= now {
		ks.recheckAt = 0
	}
	if ks.pausedUntil != 0 && ks.pausedUntil != untilResumed && now >= ks.pausedUntil {
		ks.pausedUntil = 0
		e.keys.paused.Add(-1)
	}
	e.releaseWaiting(ks, now)
	ks.mu.Unlock()
}

// keyGate is the lease path's check of a popped message's key. It returns
// false when the message was set aside instead; ks is the state whose
// lease was counted (nil when none was).
func (e *Engine) keyGate(slot uint32, r *rec, now int64) (ks *keyState, ok bool) {
	ks = r.ks
	if ks == nil {
		if e.keys.paused.Load() == 0 {
			return nil, true
		}
		if ks = e.keys.lookup(r.key); ks == nil {
			return nil, true
		}
	}
	return ks, e.admit(ks, slot, r, now)
}

// pauseKey pauses delivery of key's messages until until (unix ns;
// untilResumed: until ResumeKey); a pause never shortens one in force. It
// reports whether the pause changed, and refuses a new pause while
// Options.MaxPausedKeys keys are paused already (ErrFull). The cap is
// exact: a new pause takes its place in keys.paused by compare-and-swap.
func (e *Engine) pauseKey(key string, until, now int64) (bool, error) {
	if until <= now {
		return false, nil
	}
	limit := int32(min(e.opts.MaxPausedKeys, math.MaxInt32))
	if e.keys.paused.Load() >= limit {
		// At the cap: refuse before the registry learns a new key, unless
		// this key's pause is in force already (a longer one is fine).
		if ks := e.keys.lookup(key); ks == nil || !ks.isPaused() {
			return false, pausedKeysFull(key, limit)
		}
	}
	ks := e.keys.get(key)
	ks.mu.Lock()
	for ks.live.Load() == retired { // swept meanwhile: pause the key's new state
		ks.mu.Unlock()
		ks = e.keys.get(key)
		ks.mu.Lock()
	}
	defer ks.mu.Unlock()
	if ks.pausedAt(now) && ks.pausedUntil >= until {
		return false, nil
	}
	if ks.pausedUntil == 0 {
		for {
			n := e.keys.paused.Load()
			if n >= limit {
				return false, pausedKeysFull(key, limit)
			}
			if e.keys.paused.CompareAndSwap(n, n+1) {
				break
			}
		}
	}
	ks.pausedUntil = until
	if until != untilResumed {
		ks.recheckAt = until
		e.hk.schedule(until, sched.Entry{ID: ks.id, Kind: timerKey})
	}
	return true, nil
}

func pausedKeysFull(key string, limit int32) error {
	return fmt.Errorf("%w: pause of key %q: %d keys are paused already (Options.MaxPausedKeys)", ErrFull, key, limit)
}

// isPaused reports whether a pause of the key is recorded (in force, or
// ended but not yet cleared by its recheck): one that keys.paused counts.
func (ks *keyState) isPaused() bool {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	return ks.pausedUntil != 0
}

// resumeKey ends key's pause and lets its messages go; false if it was not
// paused.
func (e *Engine) resumeKey(key string, now int64) bool {
	ks := e.keys.lookup(key)
	if ks == nil {
		return false
	}
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if ks.pausedUntil == 0 {
		return false
	}
	ks.pausedUntil = 0
	e.keys.paused.Add(-1)
	e.releaseWaiting(ks, now)
	return true
}

// notePause sets Info.Waiting for a pending message still in its tier
// whose key (or all delivery) is paused: a consumer sets it aside only when
// it meets it, but a reader should see why it will not go out.
func (e *Engine) notePause(info *Info) {
	if info.State != Pending || info.Waiting == WaitPaused {
		return
	}
	if e.keys.allUntil.Load() == 0 && (info.Message.Key == "" || e.keys.paused.Load() == 0) {
		return
	}
	now := e.preciseNow()
	if e.deliveryPaused(now) {
		info.Waiting = WaitPaused
		return
	}
	if ks := e.keys.lookup(info.Message.Key); ks != nil {
		ks.mu.Lock()
		if ks.pausedAt(now) {
			info.Waiting = WaitPaused
		}
		ks.mu.Unlock()
	}
}

// KeyStats describes one key's per-key state (Stats.Keys).
type KeyStats struct {
	Key string
	// Paused is true while the key is paused (PauseKey, a Retry-After);
	// PausedUntil is when the pause ends, zero when it lasts until
	// ResumeKey.
	Paused      bool
	PausedUntil time.Time
	// Live counts the key's messages in any state (keys with a policy
	// only); InFlight its leases (likewise).
	Live, InFlight int
	// Waiting counts messages kept aside by the key; Held those held
	// behind its open breaker.
	Waiting, Held int
	// Throttled: out of tokens (KeyPolicy.Rate) with messages waiting.
	Throttled bool
	// AtCap: at KeyPolicy.MaxQueued, or at the isolation cap of held
	// messages (enqueues for the key fail fast).
	AtCap bool
	// Breaker is the key's circuit breaker, the same data as the key's
	// entry in Stats.Breakers (zero for a key whose breaker has seen no
	// call).
	Breaker breaker.KeyState
}

// keyStats lists the keys Stats reports.
func (e *Engine) keyStats() []KeyStats {
	now := e.preciseNow()
	var out []KeyStats
	e.keys.m.Range(func(_, v any) bool {
		ks := v.(*keyState)
		held, capped := e.held.capped(ks.key)
		ks.mu.Lock()
		st := KeyStats{Key: ks.key, Paused: ks.pausedAt(now), Waiting: len(ks.queue), Held: held, AtCap: capped}
		if st.Paused && ks.pausedUntil != untilResumed {
			st.PausedUntil = time.Unix(0, ks.pausedUntil)
		}
		if ks.policy.gated() {
			st.Live, st.InFlight = int(max(ks.live.Load(), 0)), ks.inFlight
			st.AtCap = st.AtCap || (ks.policy.MaxQueued > 0 && st.Live >= ks.policy.MaxQueued)
		}
		st.Throttled = ks.limiter != nil && st.Waiting > 0 && ks.limiter.TokensAt(time.Unix(0, now)) < 1
		ks.mu.Unlock()
		if st.Paused || st.Waiting > 0 || st.Held > 0 || st.Live > 0 || st.AtCap {
			out = append(out, st)
		}
		return true
	})
	slices.SortFunc(out, func(a, b KeyStats) int { return strings.Compare(a.Key, b.Key) })
	return out
}
