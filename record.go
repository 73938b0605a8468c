package ringwal

import (
	"context"
	"maps"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/internal/sched"
)

// This file owns a record's life. It holds the record's state word and
// the closed set of verbs that move it: claim, own, put back, keep,
// publish, commit, free. It holds how the fields are filled, and the one
// mapping from internal states to the public State. No other file reads or writes a record's word directly.
//
// The protocol: every change goes through stBusy. A goroutine owns a
// record once it has moved the word to stBusy with a CAS (claim, own,
// ownAny); while it owns it, it alone writes the record's plain fields.
// It gives the record up in one of three ways. Publish stores a new state
// at the next generation. Every ring entry, timer entry or Lease taken at
// the old generation is stale from then on, recognised in O(1) without a
// map. Keep stores a state at the same generation, as an Extend or
// installing a Run handler's cancel func does; the lease the caller holds
// stays valid. PutBack restores the word exactly as it was, after a read
// such as Get, Peek or a snapshot.
//
// Readers that must not miss a record in some state wait out stBusy
// (stable, ownAny); nobody else spins on it.

// Internal record states. Dead messages leave the slab for the dead-letter
// store, so there is no slot state for them.
const (
	stFree       uint32 = iota
	stBusy              // one goroutine owns the record; others wait or skip
	stCommitting        // fields complete, waiting for its enqueue record to be durable
	stPending
	stDelayed
	stLeased
	stHeld
	stWaiting // pending, but kept aside by its key (keys.go)
)

// liveStates is the set (1<<state) of states a published message can be in.
const liveStates = 1<<stPending | 1<<stDelayed | 1<<stLeased | 1<<stHeld | 1<<stWaiting

// publicStates maps the internal states of a published message to State.
var publicStates = [...]State{stPending: Pending, stDelayed: Delayed, stLeased: Leased, stHeld: Held, stWaiting: Pending}

// publicState is the State of a message whose record is in st; a
// committing record counts as Pending (its enqueue is being logged), so
// does one waiting on its key, and ok is false for a free or busy slot.
func publicState(st uint32) (s State, ok bool) {
	switch st {
	case stCommitting:
		return Pending, true
	case stPending, stDelayed, stLeased, stHeld, stWaiting:
		return publicStates[st], true
	}
	return 0, false
}

// word is a record's packed state: a generation (high 32 bits), the
// message's attempts (bits 8-31) and a state (low 8 bits). Keeping
// attempts in the word saves the hot path an atomic of its own.
type word uint64

func makeWord(gen, attempts, state uint32) word {
	return word(uint64(gen)<<32 | uint64(min(attempts, maxAttempts))<<8 | uint64(state))
}
func (w word) gen() uint32               { return uint32(w >> 32) }
func (w word) state() uint32             { return uint32(w & 0xff) }
func (w word) attempts() uint32          { return uint32(w>>8) & maxAttempts }
func (w word) with(state uint32) word    { return w&^0xff | word(state) }
func (w word) allowed(set uint32) bool   { return set&(1<<w.state()) != 0 }
func (w word) names(gen, st uint32) bool { return w.gen() == gen && w.state() == st }

// nextGen is the generation after g. It skips 0, which only a record
// never published has: the zero Lease (and a zero ref) then never names a
// live generation, however often a slot's generation wraps.
func nextGen(g uint32) uint32 {
	if g == ^uint32(0) {
		return 1
	}
	return g + 1
}

// maxAttempts is the most attempts the word counts (it saturates there).
const maxAttempts = 1<<24 - 1

// ref names a record at a generation: what the tier rings, the deadline heap
// and the timing wheel hold.
type ref struct {
	slot uint32
	gen  uint32
}

// entryFor is the timer or deadline-heap entry of kind naming rf, the
// record of message id. Beside the slot (low 32 bits of ID) it keeps id's
// low 32 bits. A long timer outlives any number of the slot's messages.
// Once the slot's generation has wrapped, 2^32 publishes later, the
// generation alone would name whichever message then holds the slot.
func entryFor(rf ref, id uint64, kind uint8) sched.Entry {
	return sched.Entry{ID: uint64(rf.slot) | uint64(uint32(id))<<32, Gen: rf.gen, Kind: kind}
}

// names reports whether en (made by entryFor) still names r's message at
// r's current generation. A look that takes nothing, as load is.
func (r *rec) names(en sched.Entry) bool {
	return r.load().gen() == en.Gen && uint32(r.id.Load()) == uint32(en.ID>>32)
}

// rec is one live message: 120 bytes, so that a queued message costs the
// engine little more than its record (a benchmark reports B/msg). The
// message is kept compact: Key and Payload inline, the options a message
// rarely sets in more (nil when it sets none). Fields without atomics are
// written only while the writer owns the record (stBusy, or before it is
// published) and read under ownership too.
type rec struct {
	word atomic.Uint64 // a word; only this file touches it
	id   atomic.Uint64 // kept after free: check the state too (find does)

	// The payload as pointer and length: its capacity is not the
	// engine's to keep (a delivery's Payload has cap == len), and the
	// eight bytes saved are paid by every queued message.
	payPtr     *byte
	payLen     int32      // a record body is at most 1 GiB
	counted    countClass // where counts.go counts it; only its owner reads or writes it
	queue      uint16     // the queue's number (queue.go), fixed from fill to free; read by its owner
	key        string
	more       *msgMore
	enqueuedAt int64 // unix ns

	// at is a time whose meaning follows the state: Pending, when it
	// became ready (Peek order, wait time); Delayed and Waiting, when it
	// is due; Leased, when the lease ends.
	at int64

	meta    atomic.Uint32 // tier (bits 0-7), WaitReason (8-15), metaExtended; readable by scans
	crashes atomic.Int32  // consecutive crashes while leased

	ks *keyState // the key's state when it has a policy (keys.go); set by fill

	// Written by the goroutine that leased the record, read by whoever
	// settles that lease (ordered by the word's CAS).
	ticket breaker.Ticket
	cancel atomic.Pointer[context.CancelFunc] // Run's handler context
	fails  atomic.Pointer[failureState]
}

// msgMore holds the Message fields a message rarely sets.
type msgMore struct {
	dedupID     string
	headers     map[string]string
	delay, ttl  time.Duration
	deadline    time.Time
	maxAttempts int
	unique      Unique
}

// metaExtended marks a lease that Extend moved: its start can no longer be
// derived from its end (leasedAt).
const metaExtended = 1 << 16

func needsMore(m *Message) bool {
	return m.DedupID != "" || m.Headers != nil || m.Delay != 0 || m.TTL != 0 || !m.Deadline.IsZero() || m.MaxAttempts != 0 || m.Unique != 0
}

// message rebuilds the record's Message; the caller owns the record.
func (r *rec) message() Message {
	var m Message
	r.messageInto(&m)
	return m
}

// sharedMessage is message sharing the record's Headers, for the engine's
// own moves of a message (logging it, rebuilding its record), which never
// write to them.
func (r *rec) sharedMessage() Message {
	var m Message
	r.fieldsInto(&m)
	if x := r.more; x != nil {
		m.Headers = x.headers
	}
	return m
}

// messageInto writes the record's Message into m, which must be zero (the
// hot path fills a Delivery in place rather than copy a Message twice).
// Headers are a copy: a handler may write to its delivery's, while Get,
// the console or another queue's copy of a published message reads the
// record's.
func (r *rec) messageInto(m *Message) {
	r.fieldsInto(m)
	if x := r.more; x != nil {
		m.Headers = maps.Clone(x.headers)
	}
}

// fieldsInto writes every field of the record's Message but Headers.
func (r *rec) fieldsInto(m *Message) {
	m.Key, m.Payload, m.Priority = r.key, unsafe.Slice(r.payPtr, int(r.payLen)), r.priority()
	if x := r.more; x != nil {
		m.DedupID, m.Delay, m.TTL, m.Deadline, m.MaxAttempts = x.dedupID, x.delay, x.ttl, x.deadline, x.maxAttempts
		m.Unique = x.unique
	}
}

func (r *rec) tierIndex() int { return int(r.meta.Load() & 0xff) }

// class is the count class (counts.go) of the record in state: its tier
// and wait reason read with one load of meta.
func (r *rec) class(state uint32) countClass {
	m := r.meta.Load()
	return classOf(state, int(m&0xff), WaitReason(m>>8&0xff))
}

func (r *rec) priority() Priority     { return priorityOfTier(r.tierIndex()) }
func (r *rec) waitReason() WaitReason { return WaitReason(r.meta.Load() >> 8 & 0xff) }

// setWait records why a record the caller owns waits on its key.
func (r *rec) setWait(w WaitReason) {
	storeIfChanged32(&r.meta, r.meta.Load()&^0xff00|uint32(w)<<8)
}

// setExtended marks (or clears) a lease moved by Extend; the caller owns
// the record.
func (r *rec) setExtended(on bool) {
	m := r.meta.Load() &^ metaExtended
	if on {
		m |= metaExtended
	}
	storeIfChanged32(&r.meta, m)
}

func (r *rec) extended() bool { return r.meta.Load()&metaExtended != 0 }

func (r *rec) dedupID() string {
	if r.more == nil {
		return ""
	}
	return r.more.dedupID
}

// unique is the message's uniqueness mode.
func (r *rec) unique() Unique {
	if r.more == nil {
		return UniqueWindow
	}
	return r.more.unique
}

func (r *rec) delay() time.Duration {
	if r.more == nil {
		return 0
	}
	return r.more.delay
}

func (r *rec) ttl() time.Duration {
	if r.more == nil {
		return 0
	}
	return r.more.ttl
}

func (r *rec) maxAttempts() int {
	if r.more == nil {
		return 0
	}
	return r.more.maxAttempts
}

// deadline is the message's Deadline in unix ns, 0 for none.
func (r *rec) deadline() int64 {
	if r.more == nil || r.more.deadline.IsZero() {
		return 0
	}
	return r.more.deadline.UnixNano()
}

// expiresAt is the end of the message's TTL in unix ns, 0 for none: it
// counts from enqueuedAt (the enqueue, or the last redrive).
func (r *rec) expiresAt() int64 {
	if r.more == nil || r.more.ttl == 0 {
		return 0
	}
	return addSat(r.enqueuedAt, int64(r.more.ttl))
}

// load returns the record's word for a look that takes nothing: whether a
// ring or timer entry is still current, a scan's first filter.
func (r *rec) load() word { return word(r.word.Load()) }

// claim takes a free record for a new message with this id; the record is
// then owned (stBusy) and unpublished.
func (r *rec) claim(id uint64) bool {
	w := r.load()
	if w.state() != stFree || !r.word.CompareAndSwap(uint64(w), uint64(w.with(stBusy))) {
		return false
	}
	r.id.Store(id)
	return true
}

// own takes the record from state from at generation gen; false if it is
// elsewhere (the caller's reference is stale). A reader (Get, Peek, a
// checkpoint) may own the record for a moment without changing its
// generation, so own waits that out rather than take the reference for
// stale and drop it.
func (r *rec) own(gen, from uint32) bool { return r.ownWaiting(gen, from, nil) }

// ownWaiting is own that calls beforeWait (when set) the first time it
// would wait out a concurrent owner. A caller that holds records of its
// own busy (a DequeueBatch's unpublished leases) lets them go there: the
// owner it would wait for may be itself, or another holder waiting for
// one of its records.
func (r *rec) ownWaiting(gen, from uint32, beforeWait func()) bool {
	for spins := 0; ; spins++ {
		w := r.load()
		if w.gen() != gen {
			if st := w.state(); nextGen(w.gen()) == gen && (st == stBusy || st == stCommitting) {
				// Named by nextRef: its owner (holding it busy, or
				// committing its enqueue) is on its way to publish it.
				beforeWait = awaitOwner(beforeWait, spins)
				continue
			}
			return false
		}
		switch w.state() {
		case from:
			if r.word.CompareAndSwap(uint64(w), uint64(w.with(stBusy))) {
				return true
			}
		case stBusy:
			beforeWait = awaitOwner(beforeWait, spins)
		default:
			return false
		}
	}
}

// awaitOwner is one step of waiting out a concurrent owner: beforeWait's call
// (once: it returns nil after), or a backoff.
func awaitOwner(beforeWait func(), spins int) func() {
	if beforeWait != nil {
		beforeWait()
		return nil
	}
	backoff(spins)
	return nil
}

// tryOwn is own without waiting out a concurrent owner: false if the
// record is owned at this instant. For callers that hold a lock an owner
// may be waiting for.
func (r *rec) tryOwn(gen, from uint32) bool {
	w := r.load()
	return w.names(gen, from) && r.word.CompareAndSwap(uint64(w), uint64(w.with(stBusy)))
}

// ownAny takes the record from any of the states in allowed (a set of
// 1<<state), waiting out a concurrent owner or commit. It returns the word
// it replaced (for putBack, and to tell which state it was in); ok is
// false when the record is in a state outside allowed.
func (r *rec) ownAny(allowed uint32) (prev word, ok bool) {
	for spins := 0; ; spins++ {
		w := r.load()
		st := w.state()
		if st == stBusy || st == stCommitting {
			backoff(spins)
			continue
		}
		if !w.allowed(allowed) {
			return w, false
		}
		if r.word.CompareAndSwap(uint64(w), uint64(w.with(stBusy))) {
			return w, true
		}
	}
}

// stable returns the record's word once no one owns it. Scans that must
// not miss a record in a given state (lease expiry, Stats) use it instead
// of load, since readers own records for a moment.
func (r *rec) stable() word {
	for spins := 0; ; spins++ {
		w := r.load()
		if w.state() != stBusy {
			return w
		}
		backoff(spins)
	}
}

func backoff(spins int) {
	if spins > 100 {
		runtime.Gosched()
	}
}

// putBack gives an owned record back exactly as ownAny found it: a read,
// or a change that did not happen (its count has not moved either).
func (r *rec) putBack(prev word) { r.word.Store(uint64(prev)) }

// recount moves the record's count to the class of state, once counting
// is on (counts.go); the caller owns the record. Most moves change
// nothing, or one class for another.
func (r *rec) recount(c *liveCounts, state uint32) {
	if !c.on.Load() {
		return
	}
	if to := r.class(state); to != r.counted {
		c.move(r, r.counted, to)
		r.counted = to
	}
}

// keep gives an owned record back in state at the same generation, so
// that the caller's lease (or entry) stays valid: an Extend, a lease found
// not yet due, a Run handler's cancel func installed.
func (r *rec) keep(c *liveCounts, state uint32) {
	r.recount(c, state)
	r.word.Store(uint64(r.load().with(state)))
}

// publish gives an owned record back in state at the next generation and
// returns the ref naming that generation.
func (r *rec) publish(c *liveCounts, slot uint32, state uint32) ref {
	return r.publishAttempts(c, slot, state, r.attempts())
}

// nextRef is the ref publish will return: for a caller that must make a
// record findable (push it to its tier) before it publishes it, so that
// whoever sees it published finds it there. An own of that ref waits for
// the publish.
func (r *rec) nextRef(slot uint32) ref { return ref{slot: slot, gen: nextGen(r.load().gen())} }

// publishAttempts is publish with the attempts count set.
func (r *rec) publishAttempts(c *liveCounts, slot uint32, state, attempts uint32) ref {
	r.recount(c, state)
	gen := nextGen(r.load().gen())
	r.word.Store(uint64(makeWord(gen, attempts, state)))
	return ref{slot: slot, gen: gen}
}

// commit marks an owned, filled record as waiting for its enqueue record
// to be logged: readers may look at it but wait for it to be published.
// It counts as Pending from here.
func (r *rec) commit(c *liveCounts) { r.keep(c, stCommitting) }

// uncommit takes a committing record back, when its enqueue record could
// not be logged; it stays counted until it is freed or published.
func (r *rec) uncommit() { r.word.Store(uint64(r.load().with(stBusy))) }

// attempts is the message's delivery count; the caller owns the record.
func (r *rec) attempts() uint32 { return r.load().attempts() }

// setAttempts sets the count while the caller owns the record.
func (r *rec) setAttempts(n uint32) {
	r.word.Store(uint64(makeWord(r.load().gen(), n, stBusy)))
}

// free clears an owned record and returns its slot to the free pool.
// Message fields are cleared so the slab keeps no payload alive.
func (r *rec) free(c *liveCounts) {
	if r.counted != 0 {
		c.move(r, r.counted, 0)
		r.counted = 0
	}
	r.payPtr, r.payLen, r.key, r.more, r.ks, r.queue = nil, 0, "", nil, nil, 0
	// Most records never fail or run under Run: a load is cheaper than an
	// atomic pointer store with its write barrier.
	if r.fails.Load() != nil {
		r.fails.Store(nil)
	}
	if r.cancel.Load() != nil {
		r.cancel.Store(nil)
	}
	r.ticket = breaker.Ticket{}
	// id stays: find may still meet it, and every caller checks the state.
	r.word.Store(uint64(makeWord(nextGen(r.load().gen()), 0, stFree)))
}

// fill sets every field of an owned record for a message entering the
// slab: a new enqueue (enqueuedAt now, no attempts), a redrive, or a
// message recovered from the log. A TTL counts from enqueuedAt; ks is the
// key's state when the key has a policy, q the number of its queue.
func (r *rec) fill(m *Message, q uint16, enqueuedAt int64, attempts uint32, crashes int32, fails *failureState, ks *keyState) {
	var more *msgMore
	if needsMore(m) {
		more = &msgMore{dedupID: m.DedupID, headers: m.Headers, delay: m.Delay, ttl: m.TTL,
			deadline: m.Deadline, maxAttempts: m.MaxAttempts, unique: m.Unique}
	}
	r.fillFields(m.Payload, m.Key, m.Priority, more, q, enqueuedAt, attempts, crashes, fails, ks)
}

// fillFields is fill with the Message taken apart: replay fills a record
// whose message sets none of the rarely set options straight from its
// log record.
func (r *rec) fillFields(payload []byte, key string, p Priority, more *msgMore, q uint16, enqueuedAt int64, attempts uint32, crashes int32, fails *failureState, ks *keyState) {
	// SliceData keeps nil and empty apart: nil for a nil Payload, a
	// non-nil pointer for an empty one.
	r.payPtr, r.payLen, r.key, r.ks, r.queue = unsafe.SliceData(payload), int32(len(payload)), key, ks, q
	r.more = more
	r.enqueuedAt = enqueuedAt
	r.at = 0
	// Atomic stores are full barriers on amd64; on the enqueue path most
	// of these fields are already what they must be, and a load is a
	// plain move.
	storeIfChanged32(&r.meta, uint32(p.tier()))
	storeIfChangedI32(&r.crashes, crashes)
	if r.fails.Load() != fails {
		r.fails.Store(fails)
	}
	if attempts != r.attempts() {
		r.setAttempts(attempts)
	}
}

// replaced is what a replace changed, for undoReplace.
type replaced struct {
	payPtr *byte
	payLen int32
	more   *msgMore
	meta   uint32
	at     int64
}

// replace gives an owned record the Payload, Headers, Priority and Delay
// of m, a repeat that replaces its message (Message.Replace), and at (the
// time its new state counts from); the rest of the message stays. The
// msgMore is copied, not changed: a Message built before shares its
// fields. It returns what undoReplace needs.
func (r *rec) replace(m *Message, at int64) replaced {
	old := replaced{payPtr: r.payPtr, payLen: r.payLen, more: r.more, meta: r.meta.Load(), at: r.at}
	more := msgMore{}
	if r.more != nil {
		more = *r.more
	}
	more.headers, more.delay = m.Headers, m.Delay
	r.payPtr, r.payLen = unsafe.SliceData(m.Payload), int32(len(m.Payload))
	r.more = &more
	storeIfChanged32(&r.meta, old.meta&^0xff|uint32(m.Priority.tier()))
	r.at = at
	return old
}

// undoReplace puts back what replace changed (its record could not be
// logged); the caller still owns the record.
func (r *rec) undoReplace(u replaced) {
	r.payPtr, r.payLen, r.more, r.at = u.payPtr, u.payLen, u.more, u.at
	storeIfChanged32(&r.meta, u.meta)
}

// unacked is what it takes to put back a message whose ack is on its way
// to the log. It holds the record's fields as they are, cheap to copy on
// every durable ack. The Message is built only if the ack fails
// (message).
type unacked struct {
	payPtr     *byte
	payLen     int32
	queue      uint16
	key        string
	more       *msgMore
	meta       uint32
	enqueuedAt int64
	attempts   uint32
	crashes    int32
	fails      *failureState
	// leaving, when not nil, marks the message's unique DedupID entry as
	// on its way out with the ack (uniqueLeaving): the log's answer ends
	// it (ackDurable, unack).
	leaving *dedupLogging
}

// keepFor copies into u what putting the message back takes; the caller
// owns the record.
func (r *rec) keepFor(u *unacked) {
	*u = unacked{payPtr: r.payPtr, payLen: r.payLen, queue: r.queue, key: r.key, more: r.more, meta: r.meta.Load(),
		enqueuedAt: r.enqueuedAt, attempts: r.attempts(), crashes: r.crashes.Load(), fails: r.fails.Load()}
}

// message rebuilds the kept Message, as rec.message would have.
func (u *unacked) message() Message {
	r := rec{payPtr: u.payPtr, payLen: u.payLen, key: u.key, more: u.more}
	r.meta.Store(u.meta & 0xff) // the tier; a put-back message waits on nothing
	return r.sharedMessage()
}

// expired reports whether the message's TTL has passed at now; the caller
// owns the record.
func (r *rec) expired(now int64) bool {
	exp := r.expiresAt()
	return exp != 0 && now >= exp
}

// info describes an owned record that was in state st.
func (r *rec) info(st uint32) Info {
	state, _ := publicState(st)
	info := Info{
		ID:         r.id.Load(),
		State:      state,
		Message:    r.message(),
		Attempts:   int(r.attempts()),
		EnqueuedAt: time.Unix(0, r.enqueuedAt),
	}
	switch st {
	case stDelayed:
		info.NextAt = time.Unix(0, r.at)
	case stWaiting:
		info.Waiting = r.waitReason()
	}
	info.LastError, info.LastCategory = r.fails.Load().last()
	return info
}

// storeIfChanged* skip the atomic store (a full barrier on amd64) when the
// field already holds v; only the record's owner writes these fields, so
// the load-compare cannot race with another writer.
func storeIfChanged32(a *atomic.Uint32, v uint32) {
	if a.Load() != v {
		a.Store(v)
	}
}

func storeIfChangedI32(a *atomic.Int32, v int32) {
	if a.Load() != v {
		a.Store(v)
	}
}
