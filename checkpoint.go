package ringwal

import (
	"fmt"
	"time"

	"github.com/ringwal/ringwal/dlq"
	"github.com/ringwal/ringwal/internal/wal"
)

// Checkpoint writes a snapshot of the engine's live state and lets the log
// drop what the snapshot covers, so disk use follows live data. It runs
// automatically once the log passes Options.CheckpointBytes. Safe to call
// concurrently with everything else; a no-op for a memory-only engine.
func (e *Engine) Checkpoint() error {
	if err := e.errIfClosed(); err != nil {
		return err
	}
	if e.log == nil {
		return nil
	}
	// Deleted queues' numbers retired before the snapshot begins are in
	// none of its records: once it is in place they may be given again.
	retired := e.queues.takeRetired()
	_, err := e.log.Checkpoint(e.snapshot)
	e.queues.releaseRetired(retired, err == nil)
	if err != nil {
		return fmt.Errorf("ringwal: checkpoint: %w", err)
	}
	return nil
}

// snapshot streams the live state as records whose replay rebuilds it.
// The dedup index comes last, as dedup records of its window entries;
// its unique entries (unique.go) come with their live messages, whose
// enqueue records carry the mode.
func (e *Engine) snapshot(emit func(*wal.Record) error) error {
	now := e.preciseNow() // also runs on the timer goroutine (automatic checkpoints)
	ck := checkpointRecord(e.nextID.Load()+1, now, e.slab)
	if err := emit(&ck); err != nil {
		return err
	}
	// Queues before their messages. A queue declared while the walk runs
	// is declared (durably) before any message can name it: its
	// declaration goes right before its first message here.
	decls, err := e.declarations(now)
	if err != nil {
		return err
	}
	emitted := make(map[uint32]bool, len(decls))
	for i := range decls {
		if err := emit(&decls[i]); err != nil {
			return err
		}
		emitted[decls[i].Queue] = true
	}
	if err := e.emitSchedules(now, emit); err != nil {
		return err
	}
	var lr liveRecords
	for slot := 0; slot < e.slab.size(); slot++ {
		r := e.slab.lookup(uint32(slot))
		if r == nil { // a chunk never used: skip it whole
			slot |= slabChunkSlots - 1
			continue
		}
		if !e.snapshotRecord(r, &lr, now) {
			continue
		}
		if n := lr.enqueue.Queue; n != 0 && !emitted[n] {
			if err := e.emitDeclaration(uint16(n), now, emit); err != nil {
				return err
			}
			emitted[n] = true
		}
		if err := lr.emit(emit); err != nil {
			return err
		}
	}
	dead, err := e.dead.Query(dlq.Query{})
	if err != nil {
		return err
	}
	for i := range dead {
		num := uint16(0)
		if name := dead[i].Message.Queue; name != "" {
			q, err := e.queueNamed(name, false)
			if err != nil {
				return fmt.Errorf("ringwal: checkpoint: dead letter %d: %w", dead[i].ID, err)
			}
			num = q.num
			if !emitted[uint32(num)] {
				if err := e.emitDeclaration(num, now, emit); err != nil {
					return err
				}
				emitted[uint32(num)] = true
			}
		}
		if err := e.snapshotDead(&dead[i], num, emit); err != nil {
			return err
		}
	}
	if err := e.snapshotPauses(now, emit); err != nil {
		return err
	}
	if e.opts.DedupWindow > 0 {
		return e.dedup.each(now, int64(e.opts.DedupWindow), func(dedupID string, id uint64, at int64) error {
			rec := dedupRecord(dedupID, id, at)
			return emit(&rec)
		})
	}
	return nil
}

// emitDeclaration emits queue num's declaration.
func (e *Engine) emitDeclaration(num uint16, now int64, emit func(*wal.Record) error) error {
	q := e.queues.at(num)
	if q == nil {
		return fmt.Errorf("ringwal: checkpoint: a message names queue %d, which is not declared", num)
	}
	rec, err := q.declaration(now)
	if err != nil {
		return err
	}
	return emit(&rec)
}

// liveRecords are the records that rebuild one live message, in order:
// a redrive marker, its enqueue record, its failure list, then a
// requeue or lease record. Reused from message to message.
type liveRecords struct {
	marker, enqueue, then wal.Record
	hasMarker, hasThen    bool
	fails                 *failureState
	// failedThrough is the attempts fails accounts for (its last failure
	// record carries it): every attempt the message had, but a lease in
	// progress, which has not failed yet. A failure is in the failure list
	// before its record's message leaves its owner. The walk never reads
	// an owned record. So a nack of any attempt up to this one, if the log
	// holds one after the cut, is in fails.
	failedThrough uint32
}

func (lr *liveRecords) emit(emit func(*wal.Record) error) error {
	if lr.hasMarker {
		if err := emit(&lr.marker); err != nil {
			return err
		}
	}
	if err := emit(&lr.enqueue); err != nil {
		return err
	}
	if h := lr.fails; h != nil {
		if err := emitFailures(lr.enqueue.ID, h.failures, h.firstFailedAt, lr.failedThrough, emit); err != nil {
			return err
		}
	}
	if lr.hasThen {
		return emit(&lr.then)
	}
	return nil
}

// snapshotRecord fills lr with the records of a live record; false for a
// free slot. A committing record is not ours to read. Once its enqueue
// record is written it is published, and it may be leased, settled and
// reused while we read. So ownAny waits for it. The log writer runs on
// while a checkpoint does, so the commit ends.
//
// An enqueue record replays as a first enqueue: its Time would restart
// the DedupID's window, and a Delay would make the message delayed again.
// Neither must happen to a live message. So:
//   - A message with a DedupID is preceded by a redrive record. It tells
//     replay that its enqueue record is not the DedupID's first. The dedup
//     records at the snapshot's end carry the window exactly.
//   - A pending or held message is followed by a requeue record saying
//     since when it is ready. Its enqueue record may already say so (no
//     Delay, ready since its enqueue); then there is none.
func (e *Engine) snapshotRecord(r *rec, lr *liveRecords, now int64) bool {
	prev, ok := r.ownAny(liveStates)
	if !ok {
		return false
	}
	e.liveRecordsOf(r, prev.state(), lr, now)
	r.putBack(prev)
	return true
}

// liveRecordsOf fills lr with the records that rebuild the owned record r
// as it is in state st, as of now. It serves a snapshot. It also serves a
// message put back whose removal could not be logged (unack), which the
// log alone must be able to bring back.
func (e *Engine) liveRecordsOf(r *rec, st uint32, lr *liveRecords, now int64) {
	id := r.id.Load()
	enqueueRecord(&lr.enqueue, r, id)
	lr.enqueue.Crashes = r.crashes.Load()
	lr.fails = r.fails.Load()
	// (A unique mode's entry needs no marker: replay gives it to the live
	// message whichever enqueue record says so.)
	lr.hasMarker = r.dedupID() != "" && e.opts.DedupWindow > 0 && r.unique() == UniqueWindow
	if lr.hasMarker {
		lr.marker = redriveRecord(id, r.enqueuedAt)
	}
	lr.hasThen = false
	lr.failedThrough = uint32(lr.enqueue.Attempt)
	if st == stLeased && lr.failedThrough > 0 {
		lr.failedThrough--
	}
	switch st {
	case stDelayed:
		lr.enqueue.Until = r.at
	case stLeased:
		lr.then, lr.hasThen = leaseRecord(id, now, uint32(lr.enqueue.Attempt), r.at), true
	default: // pending (committing: published as pending) or held
		if lr.enqueue.NotBefore != 0 || r.at != r.enqueuedAt {
			lr.then, lr.hasThen = requeueRecord(id, r.at, uint32(lr.enqueue.Attempt), lr.enqueue.Crashes), true
		}
	}
}

// snapshotDead emits the records that rebuild dead letter d: its message
// (enqueue), failure list, verdict and review. The dead-letter record
// carries the last failure (its time, category and text are the
// verdict's), so the failure list is written without it.
func (e *Engine) snapshotDead(d *DeadLetter, queue uint16, emit func(*wal.Record) error) error {
	at := d.DeadAt.UnixNano()
	rec := wal.Record{Kind: wal.KindEnqueue, ID: d.ID, Queue: uint32(queue), Time: at}
	putMessage(&rec, &d.Message, at)
	// The enqueue record carries no DedupID: replaying it would restore the
	// dedup entry as first seen at DeadAt. The dead-letter record carries
	// it instead; a fresh dedup entry has a record of its own.
	rec.DedupID = ""
	if err := emit(&rec); err != nil {
		return err
	}
	last := dlq.Failure{At: d.DeadAt, Category: d.Category}
	fs := d.Failures
	if n := len(fs); n > 0 {
		last, fs = fs[n-1], fs[:n-1]
	}
	if err := emitFailures(d.ID, fs, d.FirstFailedAt.UnixNano(), 0, emit); err != nil {
		return err
	}
	dead := deadLetterRecord(d.ID, last, d.Attempts, d.Message.DedupID)
	if err := emit(&dead); err != nil {
		return err
	}
	if d.Reviewed {
		review := reviewRecord(d.ID, d.ReviewedAt.UnixNano(), d.Note)
		return emit(&review)
	}
	return nil
}

// emitFailures emits a failure list, its last entry saying the
// attempts it accounts for (failedThrough, 0: unknown). A list trimmed to
// its last dlq.DefaultMaxFailures entries no longer holds its first
// failure. It keeps that failure's time (FirstFailedAt) apart. So a
// stand-in failure at that time goes first. Replay's trimming then drops
// it once the failure list is full again, leaving firstFailedAt where it
// was.
func emitFailures(id uint64, fs []dlq.Failure, firstFailedAt int64, failedThrough uint32, emit func(*wal.Record) error) error {
	if len(fs) > 0 && firstFailedAt != 0 && firstFailedAt < fs[0].At.UnixNano() {
		rec := failureRecord(id, dlq.Failure{At: time.Unix(0, firstFailedAt)})
		if err := emit(&rec); err != nil {
			return err
		}
	}
	for i, f := range fs {
		rec := failureRecord(id, f)
		if i == len(fs)-1 {
			rec.Attempt = int32(failedThrough)
		}
		if err := emit(&rec); err != nil {
			return err
		}
	}
	return nil
}

// snapshotPauses emits the pauses in force: every key's, and all
// delivery's.
func (e *Engine) snapshotPauses(now int64, emit func(*wal.Record) error) error {
	if until := e.keys.allUntil.Load(); until != 0 && now < until {
		rec := pauseRecord("", until, now)
		if err := emit(&rec); err != nil {
			return err
		}
	}
	var err error
	e.keys.m.Range(func(_, v any) bool {
		ks := v.(*keyState)
		ks.mu.Lock()
		until := ks.pausedUntil
		paused := ks.pausedAt(now)
		ks.mu.Unlock()
		if paused {
			rec := pauseRecord(ks.key, until, now)
			err = emit(&rec)
		}
		return err == nil
	})
	return err
}
