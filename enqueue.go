package ringwal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ringwal/ringwal/internal/wal"
)

// maxKeyLen bounds Key and DedupID, which are kept in memory indexes.
const maxKeyLen = 4096

// claimAttempts bounds how many tries a claim makes before it treats the
// slab as full (and waits, or returns ErrFull). The slab has a quarter more
// slots than MaxMessages and each try probes up to probeLimit of them, so
// one try almost always wins; the tries jump ever further (see claim), so
// that these cover any slab.
const claimAttempts = 24

// errNoSlot is claim's "no free slot found": like a full tier, Enqueue
// waits it out and TryEnqueue reports ErrFull.
var errNoSlot = fmt.Errorf("%w: no free slot", ErrFull)

func (e *Engine) validate(m *Message) error {
	if len(m.Payload) > e.opts.MaxPayload {
		return invalidf("payload of %d bytes exceeds MaxPayload %d", len(m.Payload), e.opts.MaxPayload)
	}
	if err := validFields(m); err != nil {
		return err
	}
	if len(m.Headers) != 0 {
		if err := validHeaders(m.Headers); err != nil {
			return err
		}
	}
	return e.checkTimes(m)
}

// validFields is validate's part that holds whatever the engine's
// options and clock: what a message read back from the log (a
// schedule's) must hold too. Its payload size and headers' bounds may
// have changed since it was logged, and its spans count from a now to
// come.
func validFields(m *Message) error {
	switch {
	case m.Priority < Background || m.Priority > Critical:
		return invalidf("priority %d out of range [%d, %d]", m.Priority, Background, Critical)
	case m.Delay < 0:
		return invalidf("negative Delay %v", m.Delay)
	case m.TTL < 0:
		return invalidf("negative TTL %v", m.TTL)
	case m.MaxAttempts < 0:
		return invalidf("negative MaxAttempts %d", m.MaxAttempts)
	case len(m.Key) > maxKeyLen:
		return invalidf("Key of %d bytes exceeds %d", len(m.Key), maxKeyLen)
	case len(m.DedupID) > maxKeyLen:
		return invalidf("DedupID of %d bytes exceeds %d", len(m.DedupID), maxKeyLen)
	case m.Unique != UniqueWindow || m.Replace:
		if err := validUnique(m); err != nil {
			return err
		}
	}
	return checkDeadline(m)
}

// Enqueue adds m and returns its ID. It waits while m's tier or the engine
// (Options.MaxMessages) is full, until ctx ends (ctx.Err()) or Close
// starts (ErrClosed). In Write and Fsync modes it
// returns once m's record is as durable as the mode promises, and m is not
// handed out before that.
//
// A repeat of a DedupID within DedupWindow returns the first message's ID
// and ErrDuplicate, once the first is durable. With m.Unique, so does a
// repeat while the first is queued or live. With m.Replace, a repeat that
// finds the first queued replaces it and returns its ID without an error
// (see Message.Replace).
//
// An invalid m returns ErrInvalid; Message says what is valid. That covers
// a priority out of range, a payload over MaxPayload, a negative Delay,
// TTL or MaxAttempts, and a Key or DedupID over 4096 bytes. It covers
// Headers past their bounds, and a Deadline, Delay or TTL out of range. It
// covers Unique without a DedupID, and Replace without UniqueQueued or
// UniqueLive. Safe for concurrent use.
func (e *Engine) Enqueue(ctx context.Context, m Message) (ID, error) {
	return e.enqueue(ctx, m, true, nil)
}

// TryEnqueue is Enqueue that returns ErrFull instead of waiting for space.
// It still waits for the log as the durability mode promises. Safe for
// concurrent use.
func (e *Engine) TryEnqueue(m Message) (ID, error) {
	return e.enqueue(context.Background(), m, false, nil)
}

// enqueue is Enqueue (wait) or TryEnqueue; tick, when set, is the
// schedule run m is: its record is that run's (journal_schedule.go).
func (e *Engine) enqueue(ctx context.Context, m Message, wait bool, tick *scheduleTick) (ID, error) {
	if err := e.errIfClosing(); err != nil {
		return 0, err
	}
	if e.opts.OnEnqueue != nil && tick == nil { // a schedule's run is hooked by its runner (without its lock)
		m = e.onEnqueue(ctx, m)
	}
	if err := e.validate(&m); err != nil {
		return 0, err
	}
	if m.Unique != UniqueWindow {
		if err := e.requireUnique(); err != nil {
			return 0, err
		}
	}
	q := &e.defaultQueue
	if m.Queue != "" {
		var err error
		if q, err = e.queueNamed(m.Queue, true); err != nil {
			return 0, err
		}
		q.run() // set up before a record of its queue exists (runOf)
	}
	for n := 0; ; n++ {
		id, again, err := e.enqueueOnce(ctx, &m, q, enqueueTry{wait: wait, retry: n > 0, tick: tick})
		// errors.Is is a call the hot path (err == nil) need not make.
		if err != nil && errors.Is(err, errQueueGone) {
			if q, err = e.queueAgain(ctx, m.Queue); err != nil {
				return 0, err
			}
			continue
		}
		if !again {
			return id, err
		}
	}
}

// enqueueTry says how one try of enqueue goes.
type enqueueTry struct {
	// wait: block for room (a key's, a tier's, a queue's) rather than
	// refuse with ErrFull.
	wait bool
	// retry: an earlier try gave its claim back (enqueueOnce's again);
	// this one judges m's unique mode before it claims.
	retry bool
	// tick, when set, is the schedule run m is.
	tick *scheduleTick
}

// enqueueOnce is one try of enqueue. Its again reports that m's DedupID
// was being logged by another enqueue when m reserved it. Under a unique
// mode, it also reports that m's entry was not the one judged. Then the
// claim is given back. The next try (try.retry) waits for that enqueue,
// or judges m, before it claims again. A unique mode's first try judges
// nothing: it expects no entry, and reserve sends it back to judge if
// there is one. So the common case, a DedupID not seen before, costs the
// index one lock.
func (e *Engine) enqueueOnce(ctx context.Context, m *Message, q *queue, try enqueueTry) (_ ID, again bool, _ error) {
	dedup := e.dedups(m)
	unique := dedup && m.Unique != UniqueWindow
	var seen uint64
	if unique && try.retry {
		// Judged before anything is held (unique.go).
		first, v, s, err := e.awaitUnique(ctx, m)
		switch v {
		case uniqueRefused:
			return first, false, ErrDuplicate
		case uniqueReplaced:
			return first, false, err
		case uniqueAgain:
			return 0, false, err
		}
		seen = s
	} else if dedup && !unique && e.log != nil {
		// Nothing is held yet: wait here for a first enqueue of this
		// DedupID being logged, not while holding a claimed record.
		if err := e.dedup.awaitLogged(ctx, m.DedupID, e.done); err != nil {
			return 0, false, err
		}
	}
	var ks *keyState
	if m.Key != "" {
		var err error
		if ks, err = e.keyForEnqueue(ctx, m.Key, try.wait); err != nil {
			return 0, false, err
		}
	}
	if tier := m.Priority.tier(); !e.hasSpace(q, tier, 1) {
		// A repeat needs no room: answer it rather than wait or refuse.
		if unique && !try.retry {
			ks.unenter()
			return 0, true, nil // judged first (holding nothing)
		}
		if first, dup := e.knownDuplicate(m); dup {
			ks.unenter()
			e.ctr.duplicates.Add(1)
			return first, false, ErrDuplicate
		}
		if err := e.awaitSpaceSlow(ctx, q, tier, 1, try.wait); err != nil { // hasSpace just said no
			ks.unenter()
			return 0, false, err
		}
	}
	now, slot, id, err := e.claimWaiting(ctx, m, q, ks, try.wait)
	if err != nil {
		ks.unenter()
		return 0, false, err
	}
	// One message in 64 (by ID) times what follows its claim: chiefly the
	// wait for the log in Write and Fsync modes (Stats.EnqueueLatency).
	var sampledAt int64
	if sampled(id) {
		sampledAt = e.preciseNow()
	}
	var mine *dedupLogging
	if dedup {
		if e.log != nil {
			mine = newDedupLogging()
		}
		if first, dup, again := e.reserveDedup(m, slot, id, now, seen, mine); again {
			return 0, true, nil
		} else if dup {
			return first, false, ErrDuplicate
		}
	}
	if e.log != nil {
		r := e.slab.at(slot)
		r.commit(e.counts)
		var rec wal.Record
		enqueueRecord(&rec, r, id)
		if try.tick != nil {
			try.tick.stamp(&rec)
		}
		if err := e.log.Append(&rec); err != nil {
			e.abortClaim(slot, mine)
			return 0, false, fmt.Errorf("ringwal: enqueue: %w", mapWALError(err))
		}
		if mine != nil {
			e.dedupLogged(m.DedupID, id, mine)
		}
	}
	e.publish(slot, now)
	if q.num != 0 {
		q.enqueued.Add(1)
	}
	if sampledAt != 0 {
		e.metrics.enqueue.observe(e.preciseNow() - sampledAt)
	}
	return id, false, nil
}

// claimWaiting claims a slot for m at the engine's current time, which it
// returns; when wait is set it waits, until ctx ends, while no slot is free
// (see claim), else it reports ErrFull.
func (e *Engine) claimWaiting(ctx context.Context, m *Message, q *queue, ks *keyState, wait bool) (now int64, slot uint32, id uint64, err error) {
	for {
		now = e.now()
		slot, id, err = e.claim(now, m, q, ks)
		if err == nil || !wait || err == errQueueGone {
			return now, slot, id, err
		}
		if err := e.pause(ctx); err != nil {
			return 0, 0, 0, err
		}
	}
}

// dedups reports whether m's DedupID is checked for repeats: within the
// window when there is one, always under a unique mode.
func (e *Engine) dedups(m *Message) bool {
	return m.DedupID != "" && (e.opts.DedupWindow > 0 || m.Unique != UniqueWindow)
}

// reserveDedup reserves m's DedupID for id, claimed in slot, under mine
// (see dedupIndex.reserve; seen is the entry a unique mode judged). A
// repeat of a durable first gives the claim back, is counted, and gets
// the first's ID (dup). A repeat whose first is still being logged by
// another enqueue gives the claim back and asks for another try (again).
// So does one whose entry changed since it was judged.
func (e *Engine) reserveDedup(m *Message, slot uint32, id uint64, now int64, seen uint64, mine *dedupLogging) (first ID, dup, again bool) {
	f, dup, busy := e.dedup.reserve(m.DedupID, id, now, int64(e.opts.DedupWindow), m.Unique, seen, mine)
	if busy == nil && !dup {
		return 0, false, false
	}
	e.unclaim(slot)
	if busy != nil {
		return 0, false, true
	}
	e.ctr.duplicates.Add(1)
	return f, true, false
}

// dedupLogged marks the DedupID that mine reserved for id durable, and
// wakes the repeats waiting for it.
func (e *Engine) dedupLogged(dedupID string, id uint64, mine *dedupLogging) {
	e.dedup.logged(dedupID, id)
	close(mine.done)
}

// knownDuplicate reports whether m repeats a DedupID still in its window,
// and the first message's ID; the caller counts it if it refuses m. Only
// for the slow path (no room): it takes the dedup index's lock.
func (e *Engine) knownDuplicate(m *Message) (ID, bool) {
	if m.DedupID == "" || e.opts.DedupWindow <= 0 || m.Unique != UniqueWindow {
		// A unique mode was judged before (judgeUnique).
		return 0, false
	}
	first, dup := e.dedup.lookup(m.DedupID, e.now(), int64(e.opts.DedupWindow))
	return first, dup
}

// pause sleeps briefly before another claim, until ctx ends or Close.
func (e *Engine) pause(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	t := time.NewTimer(time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-e.done:
		return ErrClosed
	}
}

// awaitSpace waits until n more messages fit (in tier, when tier >= 0,
// in q's MaxMessages and in the engine's), or reports ErrFull (naming q
// when q is the one full) when wait is false.
func (e *Engine) awaitSpace(ctx context.Context, q *queue, tier, n int, wait bool) error {
	if e.hasSpace(q, tier, n) {
		return nil // the hot path: one call, no defer
	}
	return e.awaitSpaceSlow(ctx, q, tier, n, wait)
}

// awaitSpaceSlow is awaitSpace once the engine, q or the tier was full.
func (e *Engine) awaitSpaceSlow(ctx context.Context, q *queue, tier, n int, wait bool) error {
	// Pooled, as a parked consumer's: a producer that keeps finding the
	// engine full (one faster than its consumers) waits once per
	// message, and a timer each time was 5 % of W1 1P1C's CPU and its
	// only garbage.
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timerPool.Put(timer)
		}
	}()
	// Both a wait and an ErrFull count: each is an enqueue that found no
	// room (ringwal_backpressure_waits_total).
	e.ctr.backpressure.Add(1)
	for {
		w := &e.space
		if q.full(n) {
			w = &q.space
		}
		if !wait {
			if w == &q.space {
				return fmt.Errorf("%w: queue %q at MaxMessages %d", ErrFull, q.name, q.eff.Load().maxMessages)
			}
			return ErrFull
		}
		if timer == nil {
			timer = timerPool.Get().(*time.Timer)
		}
		w.n.Add(1)
		if e.hasSpace(q, tier, n) {
			w.n.Add(-1)
			return nil
		}
		if ctx == nil {
			ctx = context.Background()
		}
		err := sleep(ctx, w.c, e.done, timer)
		w.n.Add(-1)
		if err != nil {
			return err
		}
	}
}

func (e *Engine) hasSpace(q *queue, tier, n int) bool {
	live := e.liveCount()
	if live+int64(n) > int64(e.opts.MaxMessages) {
		return false
	}
	if q != &e.defaultQueue {
		// A named queue's rings are small and spill (queue.go): only its
		// cap makes it wait.
		return !q.full(n)
	}
	if tier >= 0 {
		// Room when fewer live messages than the ring holds, whatever the
		// ring's own count says. Entries are dropped lazily: a message
		// that expired while pending, or went out early by its deadline,
		// leaves one behind until a consumer pops it. And pushTier spills
		// what the ring cannot take yet, in order. Checked first: it
		// reads nothing more, where the ring's count reads the consumers'
		// cache line (W1 1P1C: 6 % of the CPU).
		capacity := e.defaultDelivery.tiers.Cap(tier)
		return live+int64(n) <= int64(capacity) || e.defaultDelivery.tiers.LenOf(tier)+n <= capacity
	}
	return true
}

// claim takes a slot for a new message of queue q, fills it and counts
// it live; the record is left owned (unpublished). Its enqueue time is
// now, read again precisely for a message with a Delay or TTL.
func (e *Engine) claim(now int64, m *Message, q *queue, ks *keyState) (uint32, uint64, error) {
	if m.TTL > 0 || m.Delay > 0 {
		// Their due times count from here and must not come early:
		// read the clock rather than the cache, which may lag.
		now = e.preciseNow()
	}
	skip := uint64(probeLimit)
	for i := 0; i < claimAttempts; i++ {
		id := e.nextID.Add(1)
		// Home first, then the next free slot within find's probe range.
		// Messages that wait long (a downstream outage nacks everything,
		// and the retries sit delayed) leave runs of taken slots; when a
		// whole probe range is taken, jump past it, further each time.
		slot, ok := e.slab.claimNear(id)
		if !ok {
			e.nextID.Add(skip)
			e.ctr.unused.Add(1 + skip)
			skip = min(2*skip, e.slab.mask+1)
			continue
		}
		e.slab.at(slot).fill(m, q.num, now, 0, 0, nil, ks)
		if !q.enter() {
			e.ctr.unused.Add(1)
			e.slab.at(slot).free(e.counts)
			return 0, 0, errQueueGone
		}
		return slot, id, nil
	}
	return 0, 0, errNoSlot
}

// errQueueGone: the queue a claim was for is being deleted or was; the
// enqueue looks it up again (and declares it afresh once it is gone).
var errQueueGone = errors.New("ringwal: queue deleted")

// unclaim frees a claimed record that was never published.
func (e *Engine) unclaim(slot uint32) {
	e.ctr.unused.Add(1)
	r := e.slab.at(slot)
	r.ks.unenter()
	q := e.queueOf(r)
	r.free(e.counts)
	q.leave()
	e.space.signal() // after freed: a woken WaitIdle's Stats count it (waitidle.go)
}

// abortClaim undoes a claim whose enqueue record could not be written:
// its DedupID reservation is forgotten, and the repeats waiting on mine
// (when not nil) go on to enqueue themselves.
func (e *Engine) abortClaim(slot uint32, mine *dedupLogging) {
	r := e.slab.at(slot)
	r.uncommit()
	e.giveBack(slot, mine != nil)
	if mine != nil {
		close(mine.done)
	}
}

// giveBack frees a claimed, unpublished record, forgetting its DedupID
// reservation when it made one.
func (e *Engine) giveBack(slot uint32, reserved bool) {
	if reserved {
		r := e.slab.at(slot)
		if d := r.dedupID(); d != "" {
			e.dedup.forget(d, r.id.Load())
		}
	}
	e.unclaim(slot)
}

// publish makes a claimed record visible: delayed or pending, or waiting
// behind its ordered key's head.
func (e *Engine) publish(slot uint32, now int64) {
	r := e.slab.at(slot)
	if exp := r.expiresAt(); exp != 0 {
		e.hk.schedule(exp, schedTTL(r.id.Load()))
	}
	due := int64(0)
	if d := r.delay(); d > 0 {
		due = addSat(r.enqueuedAt, int64(d)) // from enqueue, not from publish
	}
	e.place(slot, r, due, 0, now)
}
