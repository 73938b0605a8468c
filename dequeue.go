package ringwal

import (
	"context"
	"math/bits"
	"runtime"
	"sync"
	"time"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/internal/sched"
	"github.com/ringwal/ringwal/internal/wal"
)

// Dequeue leases the next message in scheduling order, blocking until one
// is ready, ctx ends (ctx.Err()), or Close starts (ErrClosed). A ctx that
// has already ended gets its error before anything is taken, even when a
// message is ready, as Go APIs do (a consumer's loop that stops on an
// error then stops). The lease lasts
// Options.LeaseTimeout unless extended; settle it with Ack or Nack. A nil
// ctx is ErrInvalid. Safe for concurrent use.
func (e *Engine) Dequeue(ctx context.Context) (Delivery, error) {
	return e.dequeue(ctx, &e.defaultDelivery)
}

// dequeue is Dequeue from rt's queue.
func (e *Engine) dequeue(ctx context.Context, rt *queueDelivery) (Delivery, error) {
	if err := e.errIfClosing(); err != nil {
		return Delivery{}, err
	}
	if ctx == nil {
		return Delivery{}, invalidf("Dequeue with a nil ctx")
	}
	// One interface call and an atomic load (context.Background's returns
	// nil at once): BenchmarkHotPathSerialDequeue measured no difference
	// beyond its noise (8 interleaved runs each way, 2-core machine).
	if err := ctx.Err(); err != nil {
		return Delivery{}, err
	}
	if d, ok := e.tryDequeue(rt); ok {
		return d, nil
	}
	// Yield a few times before parking. A message that is on its way is
	// then picked up in a microsecond or two, instead of after a park and
	// a wake-up. That is what a consumer waiting on a trickle mostly sees.
	for i := 0; i < dequeueSpins; i++ {
		runtime.Gosched()
		if d, ok := e.tryDequeue(rt); ok {
			return d, nil
		}
		if ctx.Err() != nil || e.errIfClosing() != nil {
			break
		}
	}
	timer := timerPool.Get().(*time.Timer)
	defer timerPool.Put(timer)
	for {
		rt.ready.n.Add(1)
		// Looked at once counted among the sleepers: a DeleteQueue that
		// marks the queue deleted after this sees the count and signals
		// (forget); one before it is seen here. Looked at only after a
		// wake-up, a deletion while this consumer was on its way to
		// sleep would be seen at the fallback wake only.
		if rt.q.state.Load() == queueDeleted {
			rt.ready.n.Add(-1)
			rt.ready.signal() // the next sleeper finds it too
			return Delivery{}, notFoundQueue(rt.q.name)
		}
		d, ok := e.tryDequeue(rt)
		if ok {
			rt.ready.n.Add(-1)
			rt.passBaton()
			return d, nil
		}
		err := sleep(ctx, rt.ready.c, e.done, timer)
		rt.ready.n.Add(-1)
		if err != nil {
			return Delivery{}, err
		}
		if err := e.errIfClosing(); err != nil {
			return Delivery{}, err
		}
		if d, ok := e.tryDequeue(rt); ok {
			rt.passBaton()
			return d, nil
		}
	}
}

// dequeueSpins is how many times Dequeue yields and looks again before it
// parks.
const dequeueSpins = 16

// timerPool recycles the fallback timers of parked consumers, so that a
// consumer that keeps waiting on a trickle does not allocate per message.
// Timers go back stopped (sleep stops them).
var timerPool = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}}

// passBaton wakes another sleeping consumer when more is ready, so that a
// signal dropped on a full channel is not lost.
func (rt *queueDelivery) passBaton() {
	if rt.ready.n.Load() > 0 && rt.tiers.NonEmpty()|uint8(rt.spilled.Load()) != 0 {
		rt.ready.signal()
	}
}

// TryDequeue leases the next ready message, or returns false at once when
// none is ready (or Close has started). It never blocks; under heavy
// contention it may also return false after losing many races to other
// consumers (Dequeue keeps trying). Safe for concurrent use.
func (e *Engine) TryDequeue() (Delivery, bool) {
	// tryDequeue's body, not a call to it: the call, though inlined,
	// copies the Delivery once more (HotPathSerial +5 %, n=8, p=0.03).
	var d Delivery
	if e.leaseNext(&e.defaultDelivery, &d, nil) {
		return d, true
	}
	return Delivery{}, false
}

// tryDequeue is TryDequeue from rt's queue.
func (e *Engine) tryDequeue(rt *queueDelivery) (Delivery, bool) {
	var d Delivery
	if e.leaseNext(rt, &d, nil) {
		return d, true
	}
	return Delivery{}, false
}

// leaseNext leases the next ready message of rt's queue into d (which
// must be zero), or reports false (TryDequeue's contract). With b set,
// the lease is left to b to log and publish (leaseBatch).
func (e *Engine) leaseNext(rt *queueDelivery, d *Delivery, b *leaseBatch) bool {
	if e.closing.Load() {
		return false
	}
	// Only lost races count against the bound: a stale entry popped, or a
	// message that went elsewhere (held, expired), is progress, and a
	// ready message may wait behind any number of them.
	for spins := 0; spins < 64; {
		slot, r, ok, retry := e.take(rt, b)
		if !ok {
			switch retry {
			case takeContended:
				spins++
				continue
			case takeStale:
				continue
			}
			return false
		}
		if e.lease(rt, slot, r, d, b) {
			return true
		}
	}
	return false
}

// Why take found nothing to lease.
const (
	takeEmpty     = iota // nothing ready
	takeContended        // lost a race with another consumer: try again
	takeStale            // removed a stale entry: try again
)

// DequeueBatch leases up to max ready messages (max > 0 and a non-nil
// ctx, else ErrInvalid). It blocks as Dequeue does until the first is ready, ctx
// ends or Close starts, then takes what else is ready without waiting. A
// ctx that has already ended gets its error, and nothing is taken.
// Safe for concurrent use.
func (e *Engine) DequeueBatch(ctx context.Context, max int) ([]Delivery, error) {
	return e.dequeueBatch(ctx, &e.defaultDelivery, max)
}

// dequeueBatch is DequeueBatch from rt's queue.
func (e *Engine) dequeueBatch(ctx context.Context, rt *queueDelivery, max int) ([]Delivery, error) {
	if err := e.errIfClosing(); err != nil {
		return nil, err
	}
	if max <= 0 {
		return nil, invalidf("DequeueBatch max %d must be positive", max)
	}
	first, err := e.dequeue(ctx, rt)
	if err != nil {
		return nil, err
	}
	// Sized by what is ready now, not by max: a Delivery is ~190 bytes,
	// and a consumer of a trickle asking for 64 would allocate 12 KiB a
	// call for the one or two it gets. More arriving meanwhile grows it.
	out := make([]Delivery, 1, min(max, 64, 1+rt.tiers.Len()))
	out[0] = first
	// The rest are leased in place, with no Delivery copied through a
	// return. In a durable engine their lease records are logged together.
	// The records stay ours, unpublished, until their batch is appended,
	// so that whatever settles a lease is logged after it, as Dequeue's is.
	var b *leaseBatch
	var beforeWait func()
	if e.log != nil {
		b = leaseBatches.Get().(*leaseBatch)
		b.e, b.out = e, &out
		beforeWait = b.flushFn
		defer b.put()
	}
	var refs [64]ref
	for len(out) < max {
		if n := e.takeBatch(rt, refs[:min(max-len(out), len(refs))]); n > 0 {
			for _, rf := range refs[:n] {
				r := e.slab.at(rf.slot)
				if !r.ownWaiting(rf.gen, stPending, beforeWait) {
					continue // stale: taken by its deadline, expired, requeued
				}
				out = append(out, Delivery{})
				if !e.lease(rt, rf.slot, r, &out[len(out)-1], b) {
					out = out[:len(out)-1] // set aside by its key, held, expired
				}
				b.flushIfFull()
			}
			continue
		}
		out = append(out, Delivery{})
		if !e.leaseNext(rt, &out[len(out)-1], b) {
			out = out[:len(out)-1]
			break
		}
		b.flushIfFull()
	}
	if b != nil {
		b.flush()
	}
	return out, nil
}

// takeBatch pops up to len(dst) entries of rt's queue in one pass: one
// scheduler decision and one claim on the ring for all of them. It does so
// when the scheduler could decide nothing else meanwhile. That is when one
// tier holds entries, no deadline is due within the slack, and nothing
// spilled; far deadlines and the heap's stale entries do not count
// (sched.Scheduler.DeadlineDue). Otherwise, and when nothing is ready, it
// takes nothing. DequeueBatch then goes message by message, a pick each,
// so that weights, aging and deadlines rule as for Dequeue. A
// message of another tier that arrives during the pass waits for the next
// pick, as it would behind a Dequeue in progress. The caller owns each
// entry it can (a stale one it skips) and leases it.
func (e *Engine) takeBatch(rt *queueDelivery, dst []ref) int {
	nonEmpty := rt.tiers.NonEmpty()
	if nonEmpty == 0 || nonEmpty&(nonEmpty-1) != 0 || rt.spilled.Load() != 0 || e.closing.Load() {
		return 0
	}
	now := e.now()
	if rt.sched.DeadlineDue(now) || e.pausedFor(rt, now) {
		return 0
	}
	tier := bits.TrailingZeros8(nonEmpty)
	n := rt.tiers.Tier(tier).PopBatch(dst)
	if n > 0 {
		rt.sched.Picker().Served(tier, now)
		e.space.signal()
	}
	return n
}

// leaseBatch holds a DequeueBatch's leases from their lease record to
// their publication. The records are owned and unpublished meanwhile, so
// it lets them go (flush) before anything else could wait on them for
// long. It flushes every maxHeldLeases leases. So a reader waiting out a
// busy record (Get, Stats, a checkpoint, the lease scan) waits for at
// most that many. It also flushes before the batch itself waits out a
// busy record (ownWaiting). That record may be one it holds, as a stale
// ring entry of a message it leased by its deadline is. Or it may be held
// by another batch that waits for one of its own.
type leaseBatch struct {
	e       *Engine
	out     *[]Delivery // the batch's result; held leases index it
	recs    []wal.Record
	held    []heldLease
	flushFn func() // flush, as a func value made once (no allocation per use)
}

// maxHeldLeases bounds the leases a batch holds unpublished.
const maxHeldLeases = 64

type heldLease struct {
	slot    uint32
	r       *rec
	attempt uint32
	at      int // its Delivery in *out
}

var leaseBatches = sync.Pool{New: func() any {
	b := new(leaseBatch)
	b.flushFn = b.flush
	return b
}}

// add holds a lease whose Delivery is the last of *b.out.
func (b *leaseBatch) add(rec wal.Record, slot uint32, r *rec, attempt uint32) {
	b.recs = append(b.recs, rec)
	b.held = append(b.held, heldLease{slot: slot, r: r, attempt: attempt, at: len(*b.out) - 1})
}

// flushIfFull flushes once the batch holds maxHeldLeases leases (a nil b,
// a memory-only engine's, holds none).
func (b *leaseBatch) flushIfFull() {
	if b != nil && len(b.held) >= maxHeldLeases {
		b.flush()
	}
}

// flush logs the held leases in one append (without waiting, as a single
// lease's AppendNoWait), then publishes each, giving its Delivery its
// Lease, and holds none after.
func (b *leaseBatch) flush() {
	if len(b.held) == 0 {
		return
	}
	e := b.e
	_ = e.log.AppendBatchNoWait(b.recs)
	out := *b.out
	for _, h := range b.held {
		rf := h.r.publishAttempts(e.counts, h.slot, stLeased, h.attempt)
		out[h.at].Lease = e.leaseKey.lease(rf)
	}
	clear(b.held) // no record pointers kept
	clear(b.recs)
	b.recs, b.held = b.recs[:0], b.held[:0]
}

func (b *leaseBatch) put() {
	b.flush()
	b.e, b.out = nil, nil
	leaseBatches.Put(b)
}

// take picks the next pending record of rt's queue and owns it. When it
// finds none, retry tells why (takeEmpty, takeContended, takeStale). b,
// when set, holds a DequeueBatch's unpublished leases, which take lets go
// before it waits out a busy record.
func (e *Engine) take(rt *queueDelivery, b *leaseBatch) (slot uint32, r *rec, ok bool, retry int) {
	nonEmpty := rt.tiers.NonEmpty() | uint8(rt.spilled.Load())
	if nonEmpty == 0 && rt.sched.Deadlines().Len() == 0 {
		return 0, nil, false, takeEmpty
	}
	now := e.now()
	if e.pausedFor(rt, now) {
		return 0, nil, false, takeEmpty
	}
	pick, ok := rt.sched.Next(nonEmpty, now, e.validEntry)
	if !ok {
		return 0, nil, false, takeEmpty
	}
	var rf ref
	if pick.EDF {
		rf = ref{slot: uint32(pick.Entry.ID), gen: pick.Entry.Gen}
	} else {
		var popped bool
		rf, popped = rt.tiers.TryPop(pick.Tier)
		if !popped {
			if rt.spilled.Load()&(1<<pick.Tier) != 0 {
				rt.refill(pick.Tier)
			}
			return 0, nil, false, takeContended
		}
		rt.sched.Picker().Served(pick.Tier, now)
		if rt.spilled.Load()&(1<<pick.Tier) != 0 {
			rt.refill(pick.Tier)
		}
		e.space.signal()
	}
	r = e.slab.at(rf.slot)
	var beforeWait func()
	if b != nil {
		beforeWait = b.flushFn
	}
	if !r.ownWaiting(rf.gen, stPending, beforeWait) {
		if pick.EDF {
			return 0, nil, false, takeContended // another consumer took it first
		}
		return 0, nil, false, takeStale // taken by EDF, requeued, expired
	}
	return rf.slot, r, true, takeEmpty
}

// pausedFor reports whether delivery from rt's queue is paused at now,
// engine-wide (Pause) or for the queue: two atomic loads when neither is.
func (e *Engine) pausedFor(rt *queueDelivery, now int64) bool {
	return e.deliveryPaused(now) || rt.q.paused(now)
}

// validEntry reports whether a deadline-heap entry may still name a
// pending record. A record a reader holds for a moment (Get, Peek,
// Messages, a snapshot, a scan) is busy at its generation. It goes back
// exactly as it was, so busy at the entry's generation counts as valid.
// Dropping the entry then would lose the message's deadline for good. If
// the owner was moving it on instead, the pick's own fails and the entry
// goes then.
func (e *Engine) validEntry(en sched.Entry) bool {
	r := e.slab.at(uint32(en.ID))
	st := r.load().state()
	return (st == stPending || st == stBusy) && r.names(en)
}

// lease hands out a busy record taken from its tier: it checks TTL and the
// key's breaker, counts the attempt and fills d. It returns false when the
// record went elsewhere instead (expired, held).
func (e *Engine) lease(rt *queueDelivery, slot uint32, r *rec, d *Delivery, b *leaseBatch) bool {
	now := e.now()
	if r.expired(now) {
		e.deadLetter(slot, r, classify.Expired, "ttl expired before delivery", now, false)
		return false
	}
	if key := r.key; key != "" {
		ks, ok := e.keyGate(slot, r, now)
		if !ok {
			return false // set aside by its key
		}
		t, ok := e.breakers.Allow(key)
		if !ok {
			e.unadmit(ks)
			e.hold(slot, r, now)
			return false
		}
		r.ticket = t
	}
	attempt := r.attempts() + 1
	id := r.id.Load()
	leasedAt := now
	if sampled(id) {
		// Measured from the clock itself; the lease's start is derived
		// from its end when it settles (handlingTime).
		leasedAt = e.preciseNow()
		e.metrics.observeWait(leasedAt - r.at) // at: when it became ready
		r.setExtended(false)
	}
	expiry := addSat(leasedAt, rt.q.leaseFor.Load())
	r.at = expiry
	// Fill d while the record is still ours: once published, a lease
	// expiry or a Requeue may move it on.
	*d = Delivery{
		ID:         id,
		Attempt:    int(attempt),
		EnqueuedAt: time.Unix(0, r.enqueuedAt),
	}
	r.messageInto(&d.Message)
	if rt != &e.defaultDelivery {
		d.Message.Queue = rt.q.name
	}
	// Logged while the record is still ours, so that whatever settles
	// this lease is logged after it (see logRecord).
	if e.log != nil {
		rec := leaseRecord(id, now, attempt, expiry)
		if b != nil {
			b.add(rec, slot, r, attempt)
			return true
		}
		_ = e.log.AppendNoWait(&rec)
	}
	rf := r.publishAttempts(e.counts, slot, stLeased, attempt)
	d.Lease = e.leaseKey.lease(rf)
	return true
}
