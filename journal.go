package ringwal

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
	"github.com/ringwal/ringwal/internal/wal"
)

// This file is the engine's journal: for each kind of log record, the
// constructor the engine logs beside the replay case that applies it, the
// one mapping between a Message and a record, and the helpers that append
// records. Every record states an absolute fact, such as the attempts so
// far or the new state. So replaying a record whose effect a snapshot
// already holds is harmless. A failure adds to a failure list, so it says
// the attempt it ended: one the snapshot holds is not added again
// (newFailure). Replay (replay.go) feeds records to apply, which checks
// each first (checkRecord); restore.go then places what apply rebuilt.

// logRecord appends rec without waiting and returns what to wait for. The
// caller's mutation logs its record first, then makes its change visible,
// then waits (logged.wait). Another goroutine may act on the change, as a
// Redrive of a fresh dead letter or a Dequeue of a requeued message does.
// It then logs its record after this one, so replay sees them in the
// order they happened. wait=false (the housekeeper's records, leases,
// extends) never waits, so that timers do not stall on the disk.
func (e *Engine) logRecord(rec *wal.Record, wait bool) (logged, error) {
	if e.log == nil {
		return logged{}, nil
	}
	lg := logged{kind: rec.Kind, id: rec.ID}
	var err error
	if wait {
		lg.commit, err = e.log.AppendCommit(rec)
	} else {
		err = e.log.AppendNoWait(rec)
	}
	if err != nil {
		return logged{}, lg.wrap(err)
	}
	return lg, nil
}

// appendRecord is logRecord then wait, for a mutation already visible.
func (e *Engine) appendRecord(rec *wal.Record, wait bool) error {
	lg, err := e.logRecord(rec, wait)
	if err != nil {
		return err
	}
	return lg.wait()
}

// logLater appends rec to be durable with the next group commit, without
// waiting for it. It serves Run's acks, whose workers go on to the next
// message while the log catches up. A crash before the commit loses the
// record, which for an ack means the message is delivered again. In Write
// and Buffered modes that is AppendNoWait: the batch is written at once
// (Write) or within FlushInterval (Buffered). A write failure is returned
// by the log's next Flush, Sync or Close. In Fsync mode AppendNoWait would
// write the record but leave it unsynced until some other caller wanted
// an fsync. So the record is appended as a waiter's, with AppendCommit,
// which has its batch fsynced, and nobody waits. A failure of that batch
// reaches the waiters that share it and the log's own error log. A failed
// fsync makes the log unusable, which every later call reports.
func (e *Engine) logLater(rec *wal.Record) error {
	if e.log == nil {
		return nil
	}
	if e.opts.Durability == Fsync {
		_, err := e.log.AppendCommit(rec)
		return err
	}
	return e.log.AppendNoWait(rec)
}

// pendingOp is a verb whose record has its place in the log. Its finish
// waits for the log as the mode promises, then runs then (if set) with
// the outcome. That call finishes the verb's work, or undoes it, and
// returns the verb's error. A bulk verb starts a page of them and finishes them in
// order, waiting for the log once for the page instead of once per
// message (bulk.go).
type pendingOp struct {
	// logged is what to wait for; with a kind it wraps a log error as the
	// single verb does, without one (only a commit) then wraps it.
	logged logged
	then   func(error) error
}

func (op pendingOp) finish() error {
	err := op.logged.commit.Wait()
	if err != nil && op.logged.kind != 0 {
		err = op.logged.wrap(err)
	}
	if op.then != nil {
		return op.then(err)
	}
	return err
}

// logged is a record appended by logRecord, not yet waited for.
type logged struct {
	commit wal.Commit
	kind   wal.Kind
	id     uint64
}

func (lg logged) wait() error {
	if err := lg.commit.Wait(); err != nil {
		return lg.wrap(err)
	}
	return nil
}

func (lg logged) wrap(err error) error {
	return fmt.Errorf("ringwal: logging %v of %d: %w", lg.kind, lg.id, mapWALError(err))
}

// apply replays one record into rs and into the engine's dead-letter
// store and dedup index. The live messages in rs are each in the slab
// record they will have, owned by replay. The m below is the message's
// record (nil when replay holds none for r.ID), slot its slot.
func (e *Engine) apply(rs *replayState, r *wal.Record) {
	if err := checkRecord(r); err != nil {
		if rs.err == nil {
			rs.err = err
		}
		return
	}
	if r.ID > rs.maxID && namesMessage(r) { // another kind's ID is none (a checkpoint's, the next one)
		rs.maxID = r.ID
	}
	slot, m := rs.get(r.ID)
	switch r.Kind {
	case wal.KindEnqueue:
		if r.Unique > uint8(UniqueLive) {
			rs.refuse(r) // a mode this build does not know
			return
		}
		if r.Queue != 0 && e.queues.at(uint16(r.Queue)) == nil {
			if rs.err == nil {
				rs.err = fmt.Errorf("%w: message %d names queue %d, which the log never declared", wal.ErrCorrupt, r.ID, r.Queue)
			}
			return
		}
		e.applyEnqueue(rs, r, slot, m)
	case wal.KindPublish:
		e.applyPublish(rs, r)
	case wal.KindSchedule:
		e.applySchedule(rs, r)
	case wal.KindScheduleRemove:
		e.applyScheduleRemove(r)
	case wal.KindScheduleTick:
		e.applyScheduleTick(rs, r)
	case wal.KindQueue:
		e.applyQueue(rs, r)
	case wal.KindQueuePause:
		e.applyQueuePause(rs, r, r.Until)
	case wal.KindQueueResume:
		e.applyQueuePause(rs, r, 0)
	case wal.KindQueueDelete:
		e.applyQueueDelete(rs, r)
	case wal.KindLease:
		rs.moved(m, r.ID)
		applyLease(rs, r, slot, m)
	case wal.KindExtend:
		// A lease is not durable: after a restart the message is pending.
	case wal.KindAck:
		rs.gone(e, m, r.ID)
		rs.remove(r.ID)
	case wal.KindNack:
		rs.moved(m, r.ID)
		applyNack(rs, r, slot, m)
	case wal.KindRequeue:
		rs.moved(m, r.ID)
		applyRequeue(rs, r, slot, m)
	case wal.KindFailure:
		applyFailure(rs, r, m)
	case wal.KindDeadLetter:
		e.applyDeadLetter(rs, r, m)
	case wal.KindRedrive:
		rs.inOrder = false
		e.applyRedrive(rs, r, m)
	case wal.KindPurge:
		e.applyPurge(rs, r, m)
	case wal.KindReview:
		e.applyReview(rs, r, m)
	case wal.KindDedup:
		e.dedup.restore(r.DedupID, r.ID, r.Time)
	case wal.KindCheckpoint:
		applyCheckpoint(rs, r)
	case wal.KindPause:
		rs.setPause(r.Key, r.Until)
	case wal.KindResume:
		rs.setPause(r.Key, 0)
	case wal.KindCancel:
		rs.gone(e, m, r.ID)
		rs.remove(r.ID)
		delete(rs.late, r.ID)
	default:
		rs.refuse(r)
	}
}

// gone forgets the unique DedupID entry of m (message id, nil when replay
// holds none), which the log says left the slab.
func (rs *replayState) gone(e *Engine, m *rec, id uint64) {
	if m != nil {
		e.uniqueGone(m, id)
	}
}

// refuse stops the replay at a record this engine cannot apply (written
// by a newer one, or a message of a queue the log never declared):
// replaying around it would put messages where they do not belong.
func (rs *replayState) refuse(r *wal.Record) {
	if rs.err == nil {
		rs.err = fmt.Errorf("%w: a %v record (queue %d) needs a newer ringwal", ErrVersion, r.Kind, r.Queue)
	}
}

// --- the Message mapping

// putMessage writes m into dst's message fields; Delay and TTL become
// absolute times counted from at (the record's Time), which messageOf
// reads back.
func putMessage(dst *wal.Record, m *Message, at int64) {
	dst.Priority = int8(m.Priority)
	dst.Key = m.Key
	dst.DedupID = m.DedupID
	dst.Payload = m.Payload
	// A limit past int32 ("as many as it takes") is as good as the
	// largest int32; truncated, it would be another (messageOf).
	dst.MaxAttempts = int32(min(m.MaxAttempts, math.MaxInt32))
	dst.Unique = uint8(m.Unique)
	dst.Headers = nil
	if len(m.Headers) > 0 {
		dst.Headers = flattenHeaders(m.Headers)
	}
	dst.Deadline = 0
	if !m.Deadline.IsZero() {
		dst.Deadline = m.Deadline.UnixNano()
	}
	dst.NotBefore = 0
	if m.Delay > 0 {
		dst.NotBefore = addSat(at, int64(m.Delay))
	}
	dst.ExpiresAt = 0
	if m.TTL > 0 {
		dst.ExpiresAt = addSat(at, int64(m.TTL))
	}
}

// messageOf is putMessage's inverse. The Message keeps r's Payload: the
// caller makes sure it owns those bytes (replay's prepareRecord copies
// them out of the log's buffers).
func messageOf(r *wal.Record) Message {
	m := Message{
		DedupID:     r.DedupID,
		Key:         r.Key,
		Priority:    Priority(r.Priority),
		MaxAttempts: recordMaxAttempts(r.MaxAttempts),
		Unique:      Unique(r.Unique),
	}
	if len(r.Payload) > 0 {
		m.Payload = r.Payload
	}
	if len(r.Headers) > 0 {
		m.Headers = make(map[string]string, len(r.Headers)/2)
		for i := 0; i+1 < len(r.Headers); i += 2 {
			m.Headers[r.Headers[i]] = r.Headers[i+1]
		}
	}
	if r.NotBefore > 0 {
		m.Delay = time.Duration(r.NotBefore - r.Time)
	}
	if r.Deadline != 0 {
		m.Deadline = time.Unix(0, r.Deadline)
	}
	if r.ExpiresAt != 0 {
		m.TTL = time.Duration(r.ExpiresAt - r.Time)
	}
	return m
}

// recordMaxAttempts reads a record's MaxAttempts. The API takes no
// negative limit, but engines before putMessage's clamp truncated one
// past int32 to 32 bits, which made math.MaxInt -1: a negative limit is
// one of those, and as good as the largest.
func recordMaxAttempts(n int32) int {
	if n < 0 {
		return math.MaxInt32
	}
	return int(n)
}

// plainRecord says whether an enqueue record's message sets none of the
// options a msgMore holds (needsMore of its messageOf is false).
func plainRecord(r *wal.Record) bool {
	return r.DedupID == "" && len(r.Headers) == 0 && r.NotBefore <= 0 && r.Deadline == 0 && r.ExpiresAt == 0 && r.MaxAttempts == 0 && r.Unique == 0
}

func flattenHeaders(h map[string]string) []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, 2*len(h))
	for _, k := range keys {
		out = append(out, k, h[k])
	}
	return out
}

// --- KindEnqueue: a message entered the slab (in a snapshot: every live
// message, with its state).

// enqueueRecord fills dst with r's full state: the enqueue record of the
// log, and the record a snapshot carries for a live message. The caller
// owns r.
func enqueueRecord(dst *wal.Record, r *rec, id uint64) {
	*dst = wal.Record{Kind: wal.KindEnqueue, ID: id, Queue: uint32(r.queue), Time: r.enqueuedAt, Attempt: int32(r.attempts())}
	m := r.sharedMessage()
	putMessage(dst, &m, r.enqueuedAt) // the TTL counts from enqueuedAt, as r.expiresAt does
}

func (e *Engine) applyEnqueue(rs *replayState, r *wal.Record, slot uint32, m *rec) {
	// A snapshot newer than this record may have had it dead; the
	// records that follow this one say what became of it. (Only replay
	// adds dead letters before Open returns; asking rs rather than
	// e.dead.Len spares every enqueue record a lock.)
	if rs.deadAdded {
		e.dead.Remove(r.ID)
	}
	fresh := m == nil
	if fresh {
		if slot, m = rs.add(r.ID); m == nil {
			return // no room: rs.err stops the replay
		}
	} else {
		rs.forgetFailures(r.ID) // the fill below starts its failures again
	}
	// The record's key state is restore's to set (keyForPlacement counts
	// the message against its key), once replay is sure the message lives.
	if plainRecord(r) {
		// Most of a backlog: no Message to build and take apart again.
		var payload []byte
		if len(r.Payload) > 0 {
			payload = r.Payload
		}
		m.fillFields(payload, r.Key, Priority(r.Priority), nil, uint16(r.Queue), r.Time, uint32(r.Attempt), r.Crashes, nil, nil)
	} else {
		msg := messageOf(r)
		m.fill(&msg, uint16(r.Queue), r.Time, uint32(r.Attempt), r.Crashes, nil, nil)
	}
	// at follows the state, as a published record's does: stDelayed, when
	// due; stPending, since when it is ready (Stats.OldestPending, Peek
	// order). Every record that sets one of these states sets it.
	st, at := stPending, r.Time
	switch {
	case r.Until > 0:
		st, at = stDelayed, r.Until
	case r.NotBefore > 0:
		st, at = stDelayed, r.NotBefore
	}
	m.at = at
	rs.setState(slot, st)
	rs.noteEnqueue(r.ID, slot, fresh, st == stDelayed, at)
	if st != stDelayed && r.Queue == 0 {
		rs.useTier(Priority(r.Priority).tier())
	}
	// A redrive record right before says this is not the DedupID's first
	// enqueue: its window stays where the log (or, in a snapshot, the
	// dedup records) put it. A unique mode's entry is the live message's
	// whichever enqueue record says so (a snapshot's carries the mode).
	switch {
	case r.DedupID == "":
	case r.Unique != 0:
		e.dedup.restoreUnique(r.DedupID, r.ID, r.Time, Unique(r.Unique))
	case rs.redriven != r.ID:
		e.dedup.restore(r.DedupID, r.ID, r.Time)
	}
	rs.redriven = 0
}

// --- KindLease: a delivery began; Attempt counts it.

func leaseRecord(id uint64, now int64, attempt uint32, until int64) wal.Record {
	return wal.Record{Kind: wal.KindLease, ID: id, Time: now, Attempt: int32(attempt), Until: until}
}

func applyLease(rs *replayState, r *wal.Record, slot uint32, m *rec) {
	if m != nil {
		m.setAttempts(uint32(r.Attempt))
		rs.setState(slot, stLeased)
		rs.useTier(m.tierIndex()) // restore makes it pending
	}
}

// --- KindExtend: a lease ends later. Never durable; replay ignores it.

func extendRecord(id uint64, now, until int64) wal.Record {
	return wal.Record{Kind: wal.KindExtend, ID: id, Time: now, Until: until}
}

// --- KindAck: the message is done and forgotten.

func ackRecord(id uint64, now int64) wal.Record {
	return wal.Record{Kind: wal.KindAck, ID: id, Time: now}
}

// --- KindNack: a delivery failed and will be retried at until.

func nackRecord(id uint64, f dlq.Failure, attempts uint32, until int64) wal.Record {
	return wal.Record{Kind: wal.KindNack, ID: id, Time: f.At.UnixNano(), Attempt: int32(attempts),
		Category: uint8(f.Category), Text: f.Error, Until: until}
}

func applyNack(rs *replayState, r *wal.Record, slot uint32, m *rec) {
	if m != nil {
		m.setAttempts(uint32(r.Attempt))
		rs.setState(slot, stDelayed)
		m.at = r.Until
		m.crashes.Store(0)
		if rs.newFailure(r) {
			m.fails.Store(m.fails.Load().with(failureOf(r)))
		}
	}
}

// --- KindRequeue: the message is pending since Time. It records an
// operator's Requeue, or a lease given back at Close or found at a crash.
// In a snapshot, it is a pending message whose enqueue record alone would
// not say when it became ready, or would make it delayed.

func requeueRecord(id uint64, now int64, attempts uint32, crashes int32) wal.Record {
	return wal.Record{Kind: wal.KindRequeue, ID: id, Time: now, Attempt: int32(attempts), Crashes: crashes}
}

func applyRequeue(rs *replayState, r *wal.Record, slot uint32, m *rec) {
	if m != nil {
		m.setAttempts(uint32(r.Attempt))
		rs.setState(slot, stPending)
		rs.useTier(m.tierIndex())
		m.crashes.Store(r.Crashes)
		m.at = r.Time
	}
}

// --- KindFailure: one entry of a message's failure list. A snapshot
// writes the failure list as these; the log has one where a failure has no
// record of its own (a nack that found the TTL ended, so that the
// dead-letter record says Expired). Attempt, when not 0, is the attempt
// the failure ended, in the log. In a snapshot's last entry it is the
// attempts the failure list accounts for (see liveRecordsOf). Replay then
// knows a nack or failure record of that attempt or an earlier one is in
// the failure list already (replayState.newFailure). Older engines wrote
// none.

func failureRecord(id uint64, f dlq.Failure) wal.Record {
	return wal.Record{Kind: wal.KindFailure, ID: id, Time: f.At.UnixNano(), Category: uint8(f.Category), Text: f.Error}
}

func failureOf(r *wal.Record) dlq.Failure {
	return dlq.Failure{At: time.Unix(0, r.Time), Category: recordCategory(r.Category), Error: r.Text}
}

// recordCategory reads a failure record's category. One past the last is
// Unknown, as the engine counts it (categoryIndex): a custom Classifier
// may return one, and engines logged it as is; the dead-letter store
// refuses it, which dropped such a dead letter at replay.
func recordCategory(c uint8) classify.Category {
	if cat := classify.Category(c); cat.Valid() {
		return cat
	}
	return classify.Unknown
}

func applyFailure(rs *replayState, r *wal.Record, m *rec) {
	if m != nil && rs.newFailure(r) {
		m.fails.Store(m.fails.Load().with(failureOf(r)))
	}
}

// --- KindDeadLetter: the message moved to the dead-letter store. Time,
// Category and Text are its last failure's (the verdict); a snapshot's
// record also carries the DedupID (its enqueue record does not, see
// snapshotDead).

func deadLetterRecord(id uint64, f dlq.Failure, attempts int, dedupID string) wal.Record {
	return wal.Record{Kind: wal.KindDeadLetter, ID: id, Time: f.At.UnixNano(), Attempt: int32(attempts),
		Category: uint8(f.Category), Text: f.Error, DedupID: dedupID}
}

func (e *Engine) applyDeadLetter(rs *replayState, r *wal.Record, m *rec) {
	if m == nil {
		return
	}
	l, isLate := rs.late[r.ID]
	if isLate {
		delete(rs.late, r.ID)
	}
	msg := m.message()
	msg.Queue = e.queueOf(m).name
	if r.DedupID != "" { // a snapshot's
		msg.DedupID = r.DedupID
	}
	// The record carries the last failure, which no record before it
	// logged (a snapshot writes the failure list but its last entry): append it
	// whatever its text.
	f := failureOf(r)
	h := m.fails.Load().with(f)
	entry := h.deadLetter(r.ID, f.Category, msg, int(r.Attempt), r.Time)
	if l.reviewed {
		entry.Reviewed, entry.Note, entry.ReviewedAt = true, l.note, time.Unix(0, l.reviewedAt)
	}
	rs.gone(e, m, r.ID)
	rs.remove(r.ID)
	_, _ = e.dead.Remove(r.ID)
	_ = e.dead.Add(entry)
	rs.deadAdded = true
}

// --- KindRedrive: a dead letter is live again; the enqueue record logged
// right after it re-creates the message.

func redriveRecord(id uint64, now int64) wal.Record {
	return wal.Record{Kind: wal.KindRedrive, ID: id, Time: now}
}

// A dead letter is logged before it is visible (moveToDeadLetters), so a
// Redrive's record always follows the dead-letter record it undoes. A
// Redrive of a message replay has live is one whose records landed after
// a checkpoint's cut, while the snapshot already saw it live again. The
// enqueue record after it refills the message. Whatever the log says
// next, another dead-lettering among it, applies as it comes.
func (e *Engine) applyRedrive(rs *replayState, r *wal.Record, m *rec) {
	rs.redriven = r.ID
	_, _ = e.dead.Remove(r.ID)
}

// --- KindPurge: a dead letter is gone for good.

func purgeRecord(id uint64, now int64) wal.Record {
	return wal.Record{Kind: wal.KindPurge, ID: id, Time: now}
}

func (e *Engine) applyPurge(rs *replayState, r *wal.Record, m *rec) {
	if _, ok := e.dead.Remove(r.ID); !ok && m != nil {
		// Purged before its dead-letter record was logged: gone for good.
		rs.remove(r.ID)
		delete(rs.late, r.ID)
	}
}

// --- KindReview: an operator marked a dead letter reviewed, with a note.

func reviewRecord(id uint64, at int64, note string) wal.Record {
	return wal.Record{Kind: wal.KindReview, ID: id, Time: at, Text: note}
}

func (e *Engine) applyReview(rs *replayState, r *wal.Record, m *rec) {
	if err := e.dead.MarkReviewed(r.ID, r.Text, time.Unix(0, r.Time)); err != nil && m != nil {
		rs.setLate(r.ID, lateDead{reviewed: true, note: r.Text, reviewedAt: r.Time})
	}
}

// --- KindDedup (snapshots only): a DedupID seen at Time names ID.

func dedupRecord(dedupID string, id uint64, at int64) wal.Record {
	return wal.Record{Kind: wal.KindDedup, ID: id, Time: at, DedupID: dedupID}
}

// --- KindCheckpoint: a snapshot's first record: the next ID to assign and
// the slab's size, so that a reopen places every message in a slab at
// least as large.

func checkpointRecord(nextID uint64, now int64, s *slab) wal.Record {
	return wal.CheckpointRecord(nextID, now, s.bits())
}

func applyCheckpoint(rs *replayState, r *wal.Record) {
	if r.ID > rs.maxID+1 {
		rs.maxID = r.ID - 1
	}
	rs.sizeFor(r.SlabBits())
}

// --- KindPause / KindResume: delivery of a key's messages (Key "" = all
// delivery) is paused until Until (untilResumed: until resumed), or no
// longer. Replay keeps the last word per key (replayState.pauses).

func pauseRecord(key string, until, now int64) wal.Record {
	return wal.Record{Kind: wal.KindPause, Key: key, Time: now, Until: until}
}

func resumeRecord(key string, now int64) wal.Record {
	return wal.Record{Kind: wal.KindResume, Key: key, Time: now}
}

// --- KindCancel: a live message removed for good. Replay forgets it, as
// for an ack.

func cancelRecord(id uint64, now int64) wal.Record {
	return wal.Record{Kind: wal.KindCancel, ID: id, Time: now}
}
