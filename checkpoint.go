package ringwal

import (
	"fmt"

	"github.com/ringwal/ringwal/dlq"
	"github.com/ringwal/ringwal/wal"
)

// Checkpoint writes a snapshot of the engine's live state and lets the log
// drop what the snapshot covers, so disk use follows live data. It runs
// automatically once the log passes Options.CheckpointBytes. Safe to call
// concurrently with everything else; a no-op for a memory-only engine.
func (e *Engine) Checkpoint() error {
	if err := e.usable(); err != nil {
		return err
	}
	if e.log == nil {
		return nil
	}
	_, err := e.log.Checkpoint(e.snapshot)
	if err != nil {
		return fmt.Errorf("ringwal: checkpoint: %w", err)
	}
	return nil
}

// snapshot streams the live state as records whose replay rebuilds it.
func (e *Engine) snapshot(emit func(*wal.Record) error) error {
	now := e.preciseNow() // also runs on the timer goroutine (automatic checkpoints)
	ck := checkpointRecord(e.nextID.Load()+1, now, e.slab)
	if err := emit(&ck); err != nil {
		return err
	}
	var rec wal.Record
	for slot := 0; slot < e.slab.size(); slot++ {
		r := e.slab.lookup(uint32(slot))
		if r == nil { // a chunk never used: skip it whole
			slot |= slabChunkSlots - 1
			continue
		}
		state, leaseExpiry, ok := e.snapshotRecord(r, &rec)
		if !ok {
			continue
		}
		if err := emit(&rec); err != nil {
			return err
		}
		if h := r.hist.Load(); h != nil {
			if err := emitFailures(rec.ID, h.failures, emit); err != nil {
				return err
			}
		}
		if state == stLeased {
			lease := leaseRecord(rec.ID, now, uint32(rec.Attempt), leaseExpiry)
			if err := emit(&lease); err != nil {
				return err
			}
		}
	}
	dead, err := e.dead.Query(dlq.Query{})
	if err != nil {
		return err
	}
	for i := range dead {
		if err := e.snapshotDead(&dead[i], emit); err != nil {
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

// snapshotRecord fills rec with a live record's enqueue record and reports
// its state (and lease expiry, when leased); ok is false for a free slot.
// A committing record is not ours to read: once its enqueue record is
// written it is published, and may be leased, settled and reused while we
// read; ownAny waits for it (the log writer runs on while a checkpoint
// does, so the commit ends).
func (e *Engine) snapshotRecord(r *rec, rec *wal.Record) (state uint32, leaseExpiry int64, ok bool) {
	prev, ok := r.ownAny(liveStates)
	if !ok {
		return 0, 0, false
	}
	enqueueRecord(rec, r, r.id.Load())
	rec.Crashes = r.crashes.Load()
	switch state = prev.state(); state {
	case stDelayed:
		rec.Until = r.nextAt.Load()
	case stLeased:
		leaseExpiry = r.leaseExpiry
	}
	r.putBack(prev)
	return state, leaseExpiry, true
}

// snapshotDead emits the records that rebuild dead letter d: its message
// (enqueue), failure history, verdict and review.
func (e *Engine) snapshotDead(d *DeadLetter, emit func(*wal.Record) error) error {
	at := d.DeadAt.UnixNano()
	rec := wal.Record{Kind: wal.KindEnqueue, ID: d.ID, Time: at}
	putMessage(&rec, &d.Message, at)
	// The enqueue record carries no DedupID: replaying it would restore the
	// dedup entry as first seen at DeadAt. The dead-letter record carries
	// it instead; a fresh dedup entry has a record of its own.
	rec.DedupID = ""
	if err := emit(&rec); err != nil {
		return err
	}
	if err := emitFailures(d.ID, d.Failures, emit); err != nil {
		return err
	}
	var last dlq.Failure
	if n := len(d.Failures); n > 0 {
		last = d.Failures[n-1]
	}
	last.At, last.Category = d.DeadAt, d.Category
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

func emitFailures(id uint64, fs []dlq.Failure, emit func(*wal.Record) error) error {
	for _, f := range fs {
		rec := failureRecord(id, f)
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
