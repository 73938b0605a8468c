package wal

// The appends of many records at once: each puts them in one batch,
// under one lock, so that a crash leaves all of them or none.

import "fmt"

// AppendBatch adds all of rs to one batch, in order, and waits once as
// Append does. On a crash the batch is either entirely in the log or
// entirely absent. Safe for concurrent use.
func (l *Log) AppendBatch(rs []Record) error { return l.appendBatch(rs, false) }

// AppendBatchCommit is AppendBatch that returns without waiting, as
// AppendCommit is Append's: the records' place in the log is fixed, all
// in one batch, and Commit.Wait waits as AppendBatch would have. Safe for
// concurrent use.
func (l *Log) AppendBatchCommit(rs []Record) (Commit, error) {
	return l.appendBatchCommit(rs, false, nil)
}

// AppendBatchCommitLocated is AppendBatchCommit that also fills offs (as
// long as rs) with each record's place in its batch, which
// Commit.LocationAt turns into the record's Location once the batch is
// written. Safe for concurrent use.
func (l *Log) AppendBatchCommitLocated(rs []Record, offs []uint32) (Commit, error) {
	if len(offs) != len(rs) {
		return Commit{}, fmt.Errorf("ringwal/wal: append: %d offsets for %d records", len(offs), len(rs))
	}
	return l.appendBatchCommit(rs, false, offs)
}

// AppendBatchNoWait is AppendNoWait for many records, in one batch and
// under one lock (a DequeueBatch's leases). Safe for concurrent use.
func (l *Log) AppendBatchNoWait(rs []Record) error { return l.appendBatch(rs, true) }

// appendBatch is appendOne for many records.
func (l *Log) appendBatch(rs []Record, noWait bool) error {
	c, err := l.appendBatchCommit(rs, noWait, nil)
	if err != nil {
		return err
	}
	return c.Wait()
}

// appendBatchCommit encodes rs into the current batch, all or none (each
// is checked first); noWait as in commitLocked. It is appendCommit for
// many records.
//
// offs, when not nil, must be as long as rs: it receives each record's
// offset in its batch's body, for Commit.LocationAt.
func (l *Log) appendBatchCommit(rs []Record, noWait bool, offs []uint32) (Commit, error) {
	for i := range rs {
		if err := l.checkAppend(&rs[i]); err != nil {
			return Commit{}, fmt.Errorf("ringwal/wal: append: record %d: %w", i, err)
		}
	}
	if len(rs) == 0 {
		return Commit{}, nil
	}
	p, err := l.lockUsable()
	if err != nil {
		return Commit{}, err
	}
	for i := range rs {
		if offs != nil {
			offs[i] = uint32(len(p.buf) - batchHeaderSize)
		}
		p.buf = AppendRecord(p.buf, &rs[i])
	}
	p.n += len(rs)
	return l.commitLocked(p, noWait), nil
}
