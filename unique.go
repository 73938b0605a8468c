package ringwal

import (
	"context"
	"fmt"

	"github.com/ringwal/ringwal/internal/wal"
)

// This file owns uniqueness that follows a message's life (UniqueQueued,
// UniqueLive) and Replace. The dedup index (dedup.go) names, for each
// DedupID, the last message accepted with it. A unique repeat reads that
// message's state from its record (the lifecycle's word, record.go) at
// the moment it is judged. So the verbs that move a message between
// Pending, Delayed and Leased need not touch the index, and the hot path
// pays nothing; those verbs are lease, nack, requeue and a retry coming
// due. The verbs that end a message's life remove its entry. Every one of
// them (ack and AckBatch, Cancel, dead-lettering, TTL expiry, MaxHold)
// frees the record through Engine.release. A message that comes back
// (Redrive, an ack that could not be logged) takes its entry back
// (uniqueBack). A logged ack's entry stays, marked, until the log answers
// (uniqueLeaving), so that no repeat is let in by an ack that then fails.
// Replay rebuilds the entries from enqueue records, which carry the mode
// (wal.Record.Unique). It forgets them at the ack, cancel and dead-letter
// records. A checkpoint carries them in its live messages' enqueue
// records.
//
// An enqueue under a unique mode first expects no entry for its DedupID:
// it claims and reserves at once, under one lock, as the window's enqueue
// takes. If reserve finds an entry, the enqueue gives everything back.
// The repeat is then judged holding nothing (judgeUnique, which may wait
// out the first's owner). It reserves its DedupID only if the entry it
// judged is still there (dedupIndex.reserve with its seq); otherwise it
// judges again. A repeat's answer waits, as the window's does, until the
// first's enqueue is durable (dedupLogging). EnqueueBatch judges its
// unique messages before it claims anything (judgeUniques).

// uniqueVerdict is what judgeUnique decided for a repeat.
type uniqueVerdict uint8

const (
	uniqueAccept   uniqueVerdict = iota // enqueue it as a new message (reserving against the seq judged)
	uniqueRefused                       // a repeat: the first's ID and ErrDuplicate
	uniqueReplaced                      // it replaced the first: the first's ID (and the log's error, if any)
	uniqueAgain                         // the first is being logged: wait for it, then judge again
)

// queuedStates are the states of a message waiting to be delivered:
// Pending (ready, or set aside by its key) and Delayed. A repeat under
// UniqueQueued is refused, and Replace replaces, only in these.
const queuedStates = 1<<stPending | 1<<stDelayed | 1<<stWaiting

// uniqueBlocks is the set of states of the first in which a repeat of
// mode u is refused (or replaces it).
func uniqueBlocks(u Unique) uint32 {
	if u == UniqueLive {
		return liveStates
	}
	return queuedStates
}

// validUnique checks m's Unique and Replace.
func validUnique(m *Message) error {
	switch {
	case m.Unique > UniqueLive:
		return invalidf("unknown Unique mode %d", m.Unique)
	case m.Unique != UniqueWindow && m.DedupID == "":
		return invalidf("Unique %v without a DedupID: uniqueness is by DedupID", m.Unique)
	case m.Replace && m.Unique == UniqueWindow:
		return invalidf("Replace needs Unique set to UniqueQueued or UniqueLive (it is %v)", m.Unique)
	}
	return nil
}

// requireUnique raises the log's format version before the first record
// that carries a uniqueness mode (as logQueue does for a named queue):
// at once, without I/O, once it has been raised.
func (e *Engine) requireUnique() error {
	if e.log == nil {
		return nil
	}
	if err := e.log.RequireFormat(2); err != nil {
		return fmt.Errorf("ringwal: a message with Unique needs the log's format version 2: %w", mapWALError(err))
	}
	return nil
}

// judgeUnique decides a repeat of m's DedupID under m's unique mode,
// holding nothing. A first still being logged is waited for by the
// caller (uniqueAgain). A first in a state that refuses m makes m a
// repeat. With Replace and the first still queued, m replaces it instead.
// Otherwise m is accepted, and seen is the seq of the entry judged (0:
// none).
func (e *Engine) judgeUnique(m *Message) (first ID, v uniqueVerdict, seen uint64, err error) {
	ent, ok := e.dedup.peek(m.DedupID)
	if !ok {
		return 0, uniqueAccept, 0, nil
	}
	if ent.logging != nil {
		return 0, uniqueAgain, 0, nil
	}
	// Owned for a moment (a read, as Get's): the first's state is its
	// word's, and an owner or a commit under way is waited out.
	slot, prev, _, ok := e.slab.ownID(ent.id, uniqueBlocks(m.Unique))
	if !ok {
		return 0, uniqueAccept, ent.seq, nil // gone, or in a state that lets m in
	}
	if m.Replace && prev.allowed(queuedStates) {
		return ent.id, uniqueReplaced, 0, e.replaceFirst(slot, prev, m)
	}
	e.slab.at(slot).putBack(prev)
	e.ctr.duplicates.Add(1)
	return ent.id, uniqueRefused, 0, nil
}

// awaitUnique judges m (judgeUnique) until the verdict needs no wait for
// a first being logged; ctx and Close end the wait.
func (e *Engine) awaitUnique(ctx context.Context, m *Message) (ID, uniqueVerdict, uint64, error) {
	for {
		first, v, seen, err := e.judgeUnique(m)
		if v != uniqueAgain {
			return first, v, seen, err
		}
		if err := e.dedup.awaitLogged(ctx, m.DedupID, e.done); err != nil {
			return 0, uniqueAgain, 0, err
		}
	}
}

// replaceFirst gives the owned record in slot (in prev, a queued state)
// m's Payload, Headers, Priority and Delay. As every mutation, it logs
// the record's new full state while it owns it. That state is an enqueue
// record for its ID, which replay applies over the old one with its
// failures, and a requeue record saying since when it is ready
// (liveRecordsOf). Then it places the record under a new generation, so
// its old ring or timer entry is stale. Then it waits for the log. A
// record that cannot be logged is put back as it was. A first waiting on
// its key stays in the key's line (same generation), its Delay not
// applied.
func (e *Engine) replaceFirst(slot uint32, prev word, m *Message) error {
	r := e.slab.at(slot)
	st := prev.state()
	now := e.now()
	if m.Delay > 0 {
		now = e.preciseNow() // a due time must not come early: see claim
	}
	next, at := st, r.at
	switch {
	case st == stWaiting:
	case m.Delay > 0:
		next, at = stDelayed, addSat(now, int64(m.Delay))
	default:
		next, at = stPending, now
	}
	undo := r.replace(m, at)
	id := r.id.Load()
	var c wal.Commit
	if e.log != nil {
		var lr liveRecords
		e.liveRecordsOf(r, next, &lr, now)
		recs := make([]wal.Record, 0, 4)
		_ = lr.emit(func(rec *wal.Record) error { recs = append(recs, *rec); return nil })
		var err error
		if c, err = e.log.AppendBatchCommit(recs); err != nil {
			r.undoReplace(undo)
			r.putBack(prev)
			return fmt.Errorf("ringwal: replacing message %d: %w", id, mapWALError(err))
		}
	}
	switch next {
	case stWaiting:
		r.keep(e.counts, stWaiting)
	case stDelayed:
		e.delay(slot, r, at)
	default:
		e.makeReadyAt(slot, r, at)
	}
	if err := c.Wait(); err != nil {
		e.unreplace(id, undo, st)
		return fmt.Errorf("ringwal: replacing message %d: %w", id, mapWALError(err))
	}
	return nil
}

// unreplace puts back the message a replacement replaced when the log
// refused the replacement's records after it was visible (log, make
// visible, then wait): memory then agrees with the log again. was is the
// state the message was in before. A replacement leased meanwhile has
// been delivered and cannot be taken back: a restart brings back the
// message it replaced, which the log still holds; that is logged.
func (e *Engine) unreplace(id uint64, u replaced, was uint32) {
	slot, prev, _, ok := e.ownIDSettled(id, 1<<stPending|1<<stDelayed|1<<stWaiting)
	if !ok {
		e.opts.Logger.Error("ringwal: a replacement the log refused was delivered before it could be undone; a restart brings back the message it replaced", "id", id)
		return
	}
	r := e.slab.at(slot)
	r.undoReplace(u)
	switch {
	case prev.state() == stWaiting:
		r.keep(e.counts, stWaiting)
	case was == stDelayed:
		e.delay(slot, r, u.at)
	default:
		e.makeReadyAt(slot, r, u.at)
	}
}

// uniqueGone forgets the unique entry of r's message (id), which leaves
// the slab; the caller owns r. A window entry stays for its window.
func (e *Engine) uniqueGone(r *rec, id uint64) {
	if x := r.more; x != nil && x.unique != UniqueWindow {
		e.dedup.forgetUnique(x.dedupID, id)
	}
}

// uniqueLeaving is uniqueGone for a message whose ack is on its way to
// the log; the caller owns r, then frees it. Its entry stays, marked as
// being logged, so that a repeat waits for the log's answer. Otherwise a
// repeat could be let in by an ack that may yet fail, leaving two live
// messages of one DedupID. It returns the mark, which the answer ends:
// dedupIndex.left once the ack is durable, stayed once the message is put
// back. It returns nil if there is nothing to wait for. That is when r
// has no unique entry, or one whose enqueue is still being logged. Such
// an entry goes at once, as before: its ack cannot be durable before its
// enqueue.
func (e *Engine) uniqueLeaving(r *rec, id uint64) *dedupLogging {
	x := r.more
	if x == nil || x.unique == UniqueWindow {
		return nil
	}
	if l := e.dedup.leaving(x.dedupID, id); l != nil {
		return l
	}
	e.uniqueGone(r, id)
	return nil
}

// uniqueBack gives the message of r (id), live again (Redrive, an ack
// put back), its DedupID's entry, unless another message took it
// meanwhile; the caller owns r.
func (e *Engine) uniqueBack(r *rec, id uint64) {
	if x := r.more; x != nil && x.unique != UniqueWindow {
		e.dedup.back(x.dedupID, id, r.enqueuedAt, x.unique)
	}
}

// --- the index's side (dedup.go keeps the map)
