package ringwal

import (
	"sync"

	"github.com/ringwal/ringwal/classify"
)

// This file puts owned records where consumers or timers find them:
// Delayed in the timing wheel, Pending in their tier's ring (or the
// tier's spill queue when the ring is full).

// spillQueue holds ready messages of a tier whose ring was full (a retry,
// a recovered backlog): rare, so a mutex is fine. While it is not empty new
// messages of that tier go behind it, to keep FIFO order.
type spillQueue struct {
	mu   sync.Mutex
	refs []ref
	head int // refs[:head] have moved to the ring
}

// delay moves a busy record to Delayed until at.
func (e *Engine) delay(slot uint32, r *rec, at int64) {
	r.at = at
	id := r.id.Load()
	rf := r.publish(e.counts, slot, stDelayed)
	e.hk.schedule(at, entryFor(rf, id, timerDue))
}

// becomeDue makes a delayed record (its due timer fired) pending, or
// dead-letters it when its TTL ended meanwhile.
func (e *Engine) becomeDue(slot, gen uint32, now int64) {
	r := e.slab.at(slot)
	if !r.own(gen, stDelayed) {
		return // moved on: requeued, expired, cancelled
	}
	if r.expired(now) {
		_ = e.deadLetter(slot, r, classify.Expired, "ttl expired while delayed", now, false)
		return
	}
	// Ready since it came due, not since the housekeeper got to it: the
	// log says when it came due, and a reopen must find the same age.
	e.makeReadyAt(slot, r, r.at)
}

// makeReady moves a busy record to Pending and into its tier, ready now.
func (e *Engine) makeReady(slot uint32, r *rec, now int64) {
	if sampled(r.id.Load()) {
		now = e.preciseNow()
	}
	e.makeReadyAt(slot, r, now)
}

// makeReadyAt moves a busy record to Pending and into its tier, ready
// since readyAt (the wait Stats and Peek count from).
func (e *Engine) makeReadyAt(slot uint32, r *rec, readyAt int64) {
	r.at = readyAt
	// In its tier before it is published, so that whoever sees it Pending
	// (Get, then Stats' oldest pending) finds it there; a consumer that
	// pops it first waits for the publish. Read the fields before: once
	// published the record is not ours, and a TTL expiry or a consumer may
	// move it on (or free it) at once.
	tier, dl, rf := r.tierIndex(), r.deadline(), r.nextRef(slot)
	var id uint64
	if dl != 0 {
		id = r.id.Load()
	}
	rt := e.runOf(r)
	rt.pushTier(tier, rf)
	r.publish(e.counts, slot, stPending)
	if dl != 0 {
		rt.sched.Deadlines().Push(dl, entryFor(rf, id, 0))
	}
	rt.ready.signal()
}

// publishReady is makeReadyAt but for the push: it moves a busy record to
// Pending, ready since readyAt, and returns the tier and ref for the
// caller to push. Restore publishes a backlog's plain messages on several
// goroutines, then pushes their refs in order from its own (restore.go's
// publishPlain). It publishes before the push, which
// makeReadyAt must not: restore runs before Open returns, and pushes
// every ref before anyone can see the record. makeReadyAt, on the hot
// path, does not call it, to stay one function.
func (e *Engine) publishReady(slot uint32, r *rec, readyAt int64) (tier int, rf ref) {
	r.at = readyAt
	tier, dl, id := r.tierIndex(), r.deadline(), r.id.Load()
	rf = r.publish(e.counts, slot, stPending)
	if dl != 0 {
		e.runOf(r).sched.Deadlines().Push(dl, entryFor(rf, id, 0))
	}
	return tier, rf
}

// pushTier appends rf to its tier's ring, or to the tier's spill queue when
// the ring is full or the spill queue already holds older messages.
func (rt *queueDelivery) pushTier(tier int, rf ref) {
	if rt.spilled.Load()&(1<<tier) == 0 && rt.tiers.TryPush(tier, rf) {
		return
	}
	q := &rt.spill[tier]
	q.mu.Lock()
	if q.head == len(q.refs) && rt.tiers.TryPush(tier, rf) {
		q.mu.Unlock()
		return
	}
	if q.head > 0 && q.head == len(q.refs) {
		q.refs, q.head = q.refs[:0], 0
	}
	q.refs = append(q.refs, rf)
	rt.setSpilled(tier, true)
	q.mu.Unlock()
}

// pushTierBatch is pushTier for refs, in order: as many as fit go into the
// ring in one step (restore pushes a backlog).
func (rt *queueDelivery) pushTierBatch(tier int, refs []ref) {
	if rt.spilled.Load()&(1<<tier) == 0 {
		refs = refs[rt.tiers.Tier(tier).PushBatch(refs):]
	}
	for _, rf := range refs {
		rt.pushTier(tier, rf)
	}
}

func (rt *queueDelivery) setSpilled(tier int, on bool) {
	for {
		old := rt.spilled.Load()
		nw := old &^ (1 << tier)
		if on {
			nw = old | 1<<tier
		}
		if old == nw || rt.spilled.CompareAndSwap(old, nw) {
			return
		}
	}
}

// refill moves spilled refs of tier into its ring while there is room.
func (rt *queueDelivery) refill(tier int) {
	q := &rt.spill[tier]
	if !q.mu.TryLock() {
		return // someone else is refilling
	}
	// Advance a head index rather than shift the slice: a refill runs after
	// every pop from a spilled tier, and shifting would make draining a
	// large spill quadratic.
	for q.head < len(q.refs) && rt.tiers.TryPush(tier, q.refs[q.head]) {
		q.refs[q.head] = ref{}
		q.head++
	}
	switch {
	case q.head == len(q.refs):
		q.refs, q.head = nil, 0
		rt.setSpilled(tier, false)
	case q.head > len(q.refs)/2 && q.head >= 1024:
		// Reclaim the consumed half now and then.
		q.refs = append(q.refs[:0], q.refs[q.head:]...)
		q.head = 0
	}
	q.mu.Unlock()
}

// place publishes an owned record that enters the slab: at enqueue,
// redrive and restore. An ordered key's message joins its key's queue
// unless it is the head. Otherwise it is delayed until due, or made
// ready. It is ready since readyAt when that is not 0, so a restored
// message keeps its place in line.
func (e *Engine) place(slot uint32, r *rec, due, readyAt, now int64) {
	if ks := r.ks; ks != nil && ks.policy.Ordered {
		ks.mu.Lock()
		if ks.headOut || len(ks.queue) > 0 {
			// Waiting, at is when it is due: when it became ready if it
			// is (Stats' oldest pending counts from it).
			switch {
			case due != 0:
				r.at = due
			case readyAt != 0:
				r.at = readyAt
			default:
				r.at = now
			}
			ks.setAside(e.counts, slot, r, WaitOrdered, false)
			ks.mu.Unlock()
			return
		}
		ks.headOut, ks.headID = true, r.id.Load()
		ks.mu.Unlock()
	}
	switch {
	case due > now:
		e.delay(slot, r, due)
	case readyAt != 0:
		e.makeReadyAt(slot, r, readyAt)
	default:
		e.makeReady(slot, r, now)
	}
}
