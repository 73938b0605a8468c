package wal

import (
	"errors"
	"fmt"
)

// ErrFenced is wrapped by the error of every append whose batch
// Options.Fence refused: before the write (the batch is not written) or
// after it, before its waiters were told (the batch is in the log, but
// nobody was told it is: a later owner replays it, at least once).
var ErrFenced = errors.New("ringwal/wal: fenced: batch not acknowledged")

// fenced asks Options.Fence whether batches may be acknowledged now. Nil
// Fence costs one comparison: the log is then as it was without fencing.
func (l *Log) fenced() error {
	if l.opt.Fence == nil {
		return nil
	}
	if err := l.opt.Fence(); err != nil {
		return fmt.Errorf("%w: %w", ErrFenced, err)
	}
	return nil
}

// fenceBeforeWrite is writeBatch's check: a batch the fence refuses is not
// written at all, so that what its callers are told failed is, as far as
// the fence can tell, not in the log either. It counts as a failed write
// (writeFails), so that a Checkpoint running meanwhile fails as after any
// lost batch: the in-memory state it snapshots may hold changes that
// were refused.
func (l *Log) fenceBeforeWrite(idx uint64, n int) error {
	err := l.fenced()
	if err != nil {
		l.writeFails.Add(1)
		err = fmt.Errorf("ringwal/wal: batch %d (%d records) not written: %w", idx, n, err)
	}
	return err
}
