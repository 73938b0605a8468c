package wal

import (
	"fmt"
	"time"
)

// Checkpoint writes the caller's live state as a snapshot and truncates the
// log before it, so disk use stays proportional to live data.
//
// It flushes and fsyncs what was appended before the call and takes I =
// the index of the last batch written; then fn streams the state through
// emit (emit must not be used after fn returns). The records go,
// zstd-compressed, to a temporary file that is fsynced and renamed to a
// name carrying I; the directory is fsynced, older snapshots are deleted,
// and the writer truncates the log before batch I+1.
//
// Appends may continue while fn runs: their records land after I and are
// replayed on top of the snapshot, so the state fn emits must include the
// effect of every record appended before Checkpoint was called, and may
// include later ones (records must be absolute and idempotent). If fn
// fails, nothing changes on disk. Only one Checkpoint runs at a time; Close
// waits for it. Safe for concurrent use with everything but Replay.
func (l *Log) Checkpoint(fn func(emit func(*Record) error) error) (CheckpointInfo, error) {
	l.ckMu.Lock()
	defer l.ckMu.Unlock()
	start := time.Now()
	// Fsync first: the snapshot must never be durable while the log up to
	// I is not, or a power loss could leave the log behind the snapshot.
	res, err := l.syncResult()
	if err != nil {
		return CheckpointInfo{}, err
	}
	index := res.index
	info, err := writeSnapshot(l.dir, index, fn)
	if err != nil {
		return info, fmt.Errorf("ringwal/wal: checkpoint at batch %d: %w", index, err)
	}
	if err := removeSnapshotsBefore(l.dir, index); err != nil {
		// Harmless for recovery (the newest valid snapshot wins); the next
		// checkpoint tries again.
		l.opt.Logger.Warn("ringwal/wal: removing old snapshots", "err", err)
	}
	if err := l.control(func() error { return l.truncateFront(index + 1) }); err != nil {
		return info, err
	}
	l.snap = &chosenSnapshot{
		snapFile: snapFile{path: info.Path, index: index},
		header:   snapHeader{version: snapVersion, index: index, records: info.Records},
	}
	l.ckBase.Store(res.total)
	l.ckIndex.Store(index)
	l.ckTime.Store(time.Now().UnixNano())
	info.Duration = time.Since(start)
	return info, nil
}
