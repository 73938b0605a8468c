package wal

import (
	"fmt"
	"time"
)

// Checkpoint writes the caller's live state as a snapshot and truncates the
// log before it, so disk use stays proportional to live data.
//
// It flushes and fsyncs what was appended before the call and takes I =
// the index of the last batch the writer had taken before the call (so no
// record appended after the call is at or before I; records appended
// before it may be after I, and are replayed on top of the snapshot); then
// fn streams the state through emit (emit must not be used after fn
// returns). The records go,
// zstd-compressed, to a temporary file that is fsynced and renamed to a
// name carrying I; the directory is fsynced, older snapshots are deleted,
// and the writer truncates the log before batch I+1.
//
// Appends may continue while fn runs: their records land after I and are
// replayed on top of the snapshot, so the state fn emits must include the
// effect of every record appended before Checkpoint was called, and may
// include later ones (records must be absolute and idempotent). Once fn
// returned, Checkpoint waits until every record appended so far is written
// and fsynced, and fails if a batch write failed since the call: fn's
// state may then hold a change the log lost. If fn or that wait fails,
// nothing changes on disk. emit refuses what Append would (a record that
// needs a newer format version than the directory says, among others),
// since a snapshot is read by older builds too. Only one Checkpoint runs
// at a time; Close waits for it. Safe for concurrent use with everything
// but Replay.
func (l *Log) Checkpoint(fn func(emit func(*Record) error) error) (CheckpointInfo, error) {
	l.ckMu.Lock()
	defer l.ckMu.Unlock()
	start := time.Now()
	fails := l.writeFails.Load() // see walked below
	// I is the last batch the writer took before this call: every record in
	// it or before was appended before the call, so fn's state covers them.
	// The batch being filled now may also receive records appended after
	// the call, which fn may leave out; it must stay in the log. (A batch
	// being written is complete: its index and total come with its result.)
	l.mu.Lock()
	before := l.inflight
	index, total := l.lastIndex.Load(), l.total.Load()
	l.mu.Unlock()
	// Fsync first: the snapshot must never be durable while the log up to
	// I is not, or a power loss could leave the log behind the snapshot.
	if _, err := l.syncResult(); err != nil {
		return CheckpointInfo{}, err
	}
	if before != nil {
		<-before.done // written before the sync above completed
		index, total = before.index, before.total
	}
	// fn's state reflects every record appended before it returns,
	// written or not ("log, then make visible"). If one of those writes
	// fails, the state holds a change the log does not: the caller puts
	// it back, but if that cannot be logged either, only this snapshot
	// would say what happened, wrongly. So before the snapshot is put in
	// place, every record appended so far must be written: any failed
	// batch write since the cut fails the checkpoint.
	walked := func(emit func(*Record) error) error {
		if err := fn(func(r *Record) error {
			if usesQueues(r) {
				// As Append: a snapshot is read by older builds too.
				if err := l.checkFormat(r); err != nil {
					return fmt.Errorf("ringwal/wal: checkpoint: %w", err)
				}
			}
			return emit(r)
		}); err != nil {
			return err
		}
		if _, err := l.syncResult(); err != nil {
			return err
		}
		if n := l.writeFails.Load() - fails; n > 0 {
			return fmt.Errorf("ringwal/wal: %d log writes failed while the snapshot was taken; it may hold changes the log lost", n)
		}
		return nil
	}
	info, err := writeSnapshot(l.dir, l.opt.perms().file, index, walked)
	if err != nil {
		return info, fmt.Errorf("ringwal/wal: checkpoint at batch %d: %w", index, err)
	}
	if err := removeSnapshotsBefore(l.dir, index); err != nil {
		// Harmless for recovery (the newest valid snapshot wins); the next
		// checkpoint tries again.
		l.opt.Logger.Warn("ringwal/wal: removing old snapshots", "err", err)
	}
	fail("checkpoint-before-truncate")
	if err := l.control(func() error { return l.truncateFront(index + 1) }); err != nil {
		return info, err
	}
	l.snap = &chosenSnapshot{
		snapFile: snapFile{path: info.Path, index: index},
		header:   snapHeader{version: snapVersion, index: index, records: info.Records},
	}
	l.ckBase.Store(total)
	l.ckIndex.Store(index)
	l.ckTime.Store(time.Now().UnixNano())
	info.Duration = time.Since(start)
	return info, nil
}
