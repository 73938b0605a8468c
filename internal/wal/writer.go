package wal

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"time"
)

// The hand-off between producers and the writer is a mutex and two
// buffers (pebble's LogWriter does the same): producers encode straight
// into the current batch's buffer under l.mu, which takes well under a
// microsecond; the writer swaps buffers under l.mu and then writes and
// fsyncs without holding it, so the next batch forms while the previous
// one is on its way to disk (group commit). A lock-free queue would save
// little: the critical section is a memcpy, and waiting producers sleep on
// one channel per batch, not per record.

// result is the outcome of one batch, shared by every producer waiting for
// it. The writer sets the fields, then closes done (which orders them
// before the waiters read them). A result is never reused.
type result struct {
	done  chan struct{}
	err   error
	index uint64 // last batch index written when this batch completed
	total int64  // Log.written at that moment
	// Where the batch's entry was written (locate.go): its segment's
	// first index and the entry's byte offset in that file. Set with
	// index once the write succeeded.
	segment uint64
	entry   uint32
}

func newResult() *result { return &result{done: make(chan struct{})} }

// request is work the writer runs between batches (it owns tidwall/wal),
// e.g. the TruncateFront of a checkpoint.
type request struct {
	fn   func() error
	done chan error // buffered: the writer never blocks on it
}

// pending is a batch being filled by producers.
type pending struct {
	buf      []byte // batchHeaderSize reserved bytes, then encoded records
	n        int
	needSync bool      // a waiter wants this batch fsynced
	urgent   bool      // write without waiting for FlushInterval (Buffered)
	noWait   bool      // holds records nobody waits for: report failures later
	waiters  int       // producers blocked on res
	first    time.Time // when the first record arrived (Buffered)
	reqs     []*request
	res      *result
}

func newPending() *pending {
	return &pending{buf: make([]byte, batchHeaderSize, 64<<10), res: newResult()}
}

func (p *pending) reset() {
	if cap(p.buf) > 4*maxPendingBytes {
		p.buf = make([]byte, batchHeaderSize, 64<<10) // don't pin a burst's memory
	}
	*p = pending{buf: p.buf[:batchHeaderSize], reqs: p.reqs[:0], res: newResult()}
}

func (p *pending) empty() bool { return p.n == 0 && !p.needSync && len(p.reqs) == 0 }

// Writer states, for deciding whether a producer must wake it.
const (
	writerBusy  = iota // working or about to look for work: no wake needed
	writerIdle         // waiting for any work
	writerTimed        // Buffered: waiting out FlushInterval; wake only if urgent
)

// kickLocked wakes the writer if it sleeps and this work cannot wait.
// l.mu must be held.
func (l *Log) kickLocked(urgent bool) {
	if l.wstate == writerIdle || (urgent && l.wstate == writerTimed) {
		l.wstate = writerBusy
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

// lockUsable locks l.mu and returns the batch being filled, or, if the log
// is closing or failed, returns the error with l.mu unlocked.
func (l *Log) lockUsable() (*pending, error) {
	l.mu.Lock()
	err := l.failed
	if l.closing {
		err = ErrClosed
	}
	if err != nil {
		l.mu.Unlock()
		return nil, err
	}
	return l.cur, nil
}

// Append adds r to the next batch and waits as Options.Mode promises:
// Write until the batch reached write(2), Fsync until it was fsynced,
// Buffered not at all (unless more than 4 MiB wait to be written, then
// until its batch is written). It returns the batch's write or fsync error
// if the batch failed: a record is never acknowledged unless written.
// r is encoded before Append returns and may be reused at once. It
// refuses what checkAppend does, as the other appends do for every record
// of a batch. Safe for concurrent use.
func (l *Log) Append(r *Record) error { return l.appendOne(r, false) }

// AppendNoWait adds r to the next batch and returns without waiting for
// I/O whatever the Mode (for lease and extend records, which a crash may
// lose). It fails only if the log is closed or unusable; a later write
// failure of its batch is returned by the next Flush, Sync or Close.
// Safe for concurrent use.
func (l *Log) AppendNoWait(r *Record) error { return l.appendOne(r, true) }

// appendOne encodes r into the current batch and waits; noWait as in
// commitLocked.
func (l *Log) appendOne(r *Record, noWait bool) error {
	c, err := l.appendCommit(r, noWait)
	if err != nil {
		return err
	}
	return c.Wait()
}

// appendCommit encodes r into the current batch; noWait as in commitLocked.
func (l *Log) appendCommit(r *Record, noWait bool) (Commit, error) {
	if err := l.checkAppend(r); err != nil {
		return Commit{}, fmt.Errorf("ringwal/wal: append: %w", err)
	}
	p, err := l.lockUsable()
	if err != nil {
		return Commit{}, err
	}
	off := uint32(len(p.buf) - batchHeaderSize)
	p.buf = AppendRecord(p.buf, r)
	p.n++
	c := l.commitLocked(p, noWait)
	c.off = off
	return c, nil
}

// Commit is an appended record's pending outcome (see AppendCommit).
type Commit struct {
	res *result
	// noWait: res is kept only for Location; Wait returns at once, as
	// the append's Mode promises.
	noWait bool
	off    uint32 // the record's offset in its batch's body (one-record appends)
}

// Wait waits as Append would have after adding the record, and returns
// what Append would have returned. The zero Commit has nothing to wait for.
func (c Commit) Wait() error {
	if c.res == nil || c.noWait {
		return nil
	}
	<-c.res.done
	return c.res.err
}

// AppendCommit adds r to the next batch like Append but returns without
// waiting; Commit.Wait then waits as Append would have. It lets a caller
// fix a record's place in the log before it makes the change the record
// describes visible to other goroutines (whose records must come after),
// and wait for durability once it has. Safe for concurrent use.
func (l *Log) AppendCommit(r *Record) (Commit, error) { return l.appendCommit(r, false) }

// commitLocked finishes an append into p: wakes the writer as needed,
// unlocks l.mu, writes the batch itself if the writer is in an fsync
// (standIn), and returns what the appender must wait for as the mode says
// (noWait: nothing, unless the writer is far behind).
func (l *Log) commitLocked(p *pending, noWait bool) Commit {
	c, standIn := l.finishAppendLocked(p, noWait)
	if standIn {
		l.standIn()
	}
	return c
}

func (l *Log) finishAppendLocked(p *pending, noWait bool) (Commit, bool) {
	l.appended = true
	if noWait || l.opt.Mode == Buffered {
		p.noWait = true
		if p.first.IsZero() {
			p.first = time.Now()
		}
		big := len(p.buf) >= bufferedFlushBytes
		if big {
			p.urgent = true
		}
		// In Write and Fsync modes the writer does not wait out an
		// interval, so any kick is enough.
		l.kickLocked(big || l.opt.Mode != Buffered)
		if noWait || len(p.buf) < maxPendingBytes {
			res := p.res
			standIn := l.standInLocked()
			l.mu.Unlock()
			return Commit{res: res, noWait: true}, standIn
		}
		// Back-pressure: the writer is far behind; wait for this batch.
		p.waiters++
		res := p.res
		standIn := l.standInLocked()
		l.mu.Unlock()
		return Commit{res: res}, standIn
	}
	if l.opt.Mode == Fsync {
		p.needSync = true
	}
	p.urgent = true
	p.waiters++
	res := p.res
	l.kickLocked(true)
	standIn := l.standInLocked()
	l.mu.Unlock()
	return Commit{res: res}, standIn
}

// Flush returns once everything appended before the call reached write(2)
// (in any Mode). It returns the error of that write, or an earlier write
// failure no waiter has seen (Buffered or AppendNoWait records).
// Safe for concurrent use.
func (l *Log) Flush() error {
	p, err := l.lockUsable()
	if err != nil {
		return err
	}
	res := l.inflight
	if !p.empty() {
		p.urgent = true
		res = p.res
		l.kickLocked(true)
	}
	l.mu.Unlock()
	if res != nil {
		<-res.done
		if res.err != nil {
			return res.err
		}
	}
	return l.takeAsyncErr()
}

// Sync returns once everything appended before the call is fsynced (in any
// Mode). Errors as Flush. Safe for concurrent use.
func (l *Log) Sync() error {
	_, err := l.syncResult()
	return err
}

// syncResult is Sync, also returning the result (its index and total
// say how far the log was written and synced).
func (l *Log) syncResult() (*result, error) {
	p, err := l.lockUsable()
	if err != nil {
		return nil, err
	}
	p.needSync, p.urgent = true, true
	res := p.res
	l.kickLocked(true)
	l.mu.Unlock()
	<-res.done
	if res.err != nil {
		return res, res.err
	}
	return res, l.takeAsyncErr()
}

func (l *Log) takeAsyncErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.asyncErr
	l.asyncErr = nil
	return err
}

// control runs fn on the writer goroutine after the current batch and
// returns its error.
func (l *Log) control(fn func() error) error {
	rq := &request{fn: fn, done: make(chan error, 1)}
	p, err := l.lockUsable()
	if err != nil {
		return err
	}
	p.reqs = append(p.reqs, rq)
	p.urgent = true
	l.kickLocked(true)
	l.mu.Unlock()
	return <-rq.done
}

// run is the writer goroutine: it owns l.tw and everything the Log struct
// marks as the writer's. Open starts it; it returns after Close asked it to
// and everything appended before was written.
func (l *Log) run() {
	defer close(l.stopped)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		l.mu.Lock()
		for {
			p := l.cur
			if p.empty() {
				if l.closing {
					l.mu.Unlock()
					l.shutdown()
					return
				}
				l.wstate = writerIdle
				l.mu.Unlock()
				<-l.wake
				l.mu.Lock()
				l.wstate = writerBusy
				l.wakeups++
				continue
			}
			if l.opt.Mode == Buffered && !p.urgent && !l.closing {
				if wait := l.opt.FlushInterval - time.Since(p.first); wait > 0 {
					l.wstate = writerTimed
					l.mu.Unlock()
					timer.Reset(wait)
					select {
					case <-timer.C:
					case <-l.wake:
					}
					timer.Stop()
					l.mu.Lock()
					l.wstate = writerBusy
					l.wakeups++
					continue
				}
			}
			break
		}
		b := l.cur
		l.cur = l.takePendingLocked()
		l.inflight = b.res
		// An fsync follows the write: appenders write in the writer's
		// place meanwhile (fsync.go), once the writer's write is done.
		l.syncing, l.wwriting = b.needSync, b.needSync
		failed := l.failed
		l.mu.Unlock()

		others := l.commit(b, failed)

		l.mu.Lock()
		l.inflight = nil
		released := b.waiters > 0 || others
		l.putPendingLocked(b)
		if len(l.syncWaits) > 0 {
			// Batches written in the writer's place during the fsync wait
			// for the next one: at once, sharing it with what came since.
			l.cur.needSync, l.cur.urgent = true, true
		}
		l.mu.Unlock()
		if released {
			// The producers just released are runnable but not running yet;
			// if the writer went straight on, it would find only the one
			// that ran first (Go hands the CPU to the last goroutine woken)
			// and write batches of one. Yielding lets them all append, so
			// the next batch holds everyone's record: group commit.
			runtime.Gosched()
		}
	}
}

// commit writes (and fsyncs, if asked) one batch, releases its waiters and
// runs its requests. failed, if set, fails the batch without touching disk.
// A batch that is fsynced is reported to OnBatch twice: its write before
// the fsync (fsyncBeside), the fsync (Records 0) after. It reports whether
// it released batches written in its place (l.syncWaits).
func (l *Log) commit(b *pending, failed error) (others bool) {
	info := BatchInfo{Records: b.n}
	err := failed
	if err == nil && b.n > 0 {
		err = l.writeBatch(b, &info, true)
	}
	b.res.index, b.res.total = l.last, l.written
	report := b.n > 0
	if b.needSync {
		serr := l.fsyncBeside(err, &info)
		if ferr := l.failedErr(); ferr != nil {
			others = l.releaseSynced(0, ferr)
		} else if serr == nil {
			others = l.releaseSynced(l.synced, nil)
		}
		if err == nil {
			err = serr
		}
		info, report = BatchInfo{Sync: info.Sync, Err: serr}, true
	} else {
		info.Err = err
	}
	l.finish(b, err)
	for _, rq := range b.reqs {
		if err := l.failedErr(); err != nil {
			rq.done <- err
			continue
		}
		rq.done <- rq.fn()
	}
	if report && l.opt.OnBatch != nil {
		l.opt.OnBatch(info)
	}
	return others
}

func (l *Log) failedErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

func (l *Log) setFailed(err error) {
	l.mu.Lock()
	if l.failed == nil {
		l.failed = err
	}
	l.mu.Unlock()
	l.opt.Logger.Error("ringwal/wal: log unusable", "err", err)
}

// writeBatch frames b and writes it as the next tidwall/wal entry. On
// failure the file may hold part or all of it while tidwall/wal's
// in-memory tail no longer matches the file, so it repairs before
// returning: nothing else is written until that is done.
func (l *Log) writeBatch(b *pending, info *BatchInfo, repair bool) error {
	idx := l.last + 1
	info.Index = idx
	info.RawBytes = len(b.buf) - batchHeaderSize
	if err := l.fenceBeforeWrite(idx, b.n); err != nil {
		return err // nothing written: nothing to repair
	}
	if b.n > math.MaxUint32 || info.RawBytes > maxBatchBody {
		return fmt.Errorf("ringwal/wal: batch of %d records, %d bytes is too large (max %d bytes)", b.n, info.RawBytes, maxBatchBody)
	}
	entry, scratch, compressed := finishBatch(b.buf, b.n, l.opt.CompressAbove, l.scratch, min(l.synced, l.last))
	l.scratch = scratch
	info.Bytes, info.Compressed = len(entry), compressed
	t0 := time.Now()
	err := l.tw.Write(idx, entry)
	info.Write = time.Since(t0)
	if err != nil {
		l.writeFails.Add(1)
		err = fmt.Errorf("ringwal/wal: writing batch %d (%d records): %w", idx, b.n, err)
		l.opt.Logger.Error("ringwal/wal: write failed; repairing", "err", err)
		if repair {
			l.repairAfterFailure(err)
		}
		return err
	}
	n := framedLen(len(entry))
	l.last = idx
	l.claimed = max(l.claimed, min(l.synced, idx-1))
	b.res.segment, b.res.entry = l.noteEntry(idx, entry)
	l.noteWritten()
	l.written += int64(n)
	l.total.Store(l.written)
	l.lastIndex.Store(idx)
	l.nBatches.Add(1)
	l.nRecords.Add(uint64(b.n))
	l.nBytes.Add(int64(n))
	return nil
}

// syncLog fsyncs the tail segment (tidwall/wal fsyncs a segment before
// switching away from it) and, if a segment was created since, the log
// directory. A failed fsync makes the log unusable: the kernel may have
// dropped the dirty pages, and a later fsync could succeed without them.
func (l *Log) syncLog(info *BatchInfo) error {
	t0 := time.Now()
	err := l.tw.Sync()
	if err == nil {
		trace(ioEvent{op: opSync, path: l.tailPath()})
	}
	if err == nil && l.dirDirty {
		if err = syncDir(l.logDir); err == nil {
			l.dirDirty = false
		}
	}
	info.Sync = time.Since(t0)
	if err != nil {
		err = fmt.Errorf("ringwal/wal: fsync: %w", err)
		l.setFailed(err)
		return err
	}
	// Every batch up to l.last is on disk: the tail was just fsynced and
	// tidwall/wal fsynced each earlier segment when it switched away.
	l.synced = l.last
	return nil
}

// repairAfterFailure closes tidwall/wal, cuts the file back to the last
// batch known written (l.last) and reopens. If that fails the log becomes
// unusable.
func (l *Log) repairAfterFailure(cause error) {
	if l.tw != nil {
		_ = l.tw.Close() // its state is wrong anyway; the cut below fixes the file
		l.tw = nil
	}
	want := l.last
	err := normalizeLogDir(l.logDir)
	if err == nil {
		var kept []string
		var keepErr error
		kept, keepErr, err = cutAfter(l.logDir, want)
		if keepErr != nil {
			l.opt.Logger.Warn("ringwal/wal: could not keep a copy of the failed write's bytes; cutting them anyway",
				"err", keepErr, "kept", kept)
		} else if len(kept) > 0 {
			l.opt.Logger.Warn("ringwal/wal: cut the failed write's bytes", "after", want, "kept", kept)
		}
	}
	if err == nil {
		err = l.openTidwall(false)
	}
	if err == nil && l.last != want {
		err = fmt.Errorf("reopened log ends at batch %d, expected %d: %w", l.last, want, ErrCorrupt)
		l.tw.Close()
		l.tw = nil
	}
	if err != nil {
		l.setFailed(fmt.Errorf("ringwal/wal: repair after %v failed: %w", cause, err))
	}
}

// shutdown is the writer's last act: fsync, record the fsync in the log
// (writeCloseMarker), and close tidwall/wal.
func (l *Log) shutdown() {
	failed := l.failedErr()
	var err error
	if l.tw != nil {
		if failed == nil {
			err = l.syncLog(&BatchInfo{})
		}
		if err == nil && failed == nil && l.claimed < l.last {
			// Everything is fsynced already; the marker only helps a later
			// Open tell damage from a torn tail. A full disk must not make
			// Close fail for it: a partial marker is cut as a torn tail.
			if merr := l.writeCloseMarker(); merr != nil {
				l.opt.Logger.Warn("ringwal/wal: could not write the close marker", "err", merr)
			}
		}
		if cerr := l.tw.Close(); err == nil && failed == nil {
			err = cerr
		}
		l.tw = nil
	}
	l.closeSyncFile()
	l.stopWriteback()
	l.mu.Lock()
	if l.gatherTimer != nil {
		l.gatherTimer.Stop() // nothing to write any more: a late firing finds l.syncing clear
	}
	l.mu.Unlock()
	if failed != nil {
		err = failed
	}
	if aerr := l.takeAsyncErr(); err == nil {
		err = aerr
	}
	if err != nil && !errors.Is(err, ErrClosed) {
		l.closeErr = err
	}
}

// writeCloseMarker appends one empty batch whose durable index is the last
// batch, and fsyncs it: Close's final fsync is then recorded in the log,
// as every later sync point is recorded by the next batch. Without it, in
// Write and Buffered modes (which fsync only at Sync, Checkpoint and
// Close) nothing in a cleanly closed log would say its batches were
// fsynced, and damage in them would read as a power-loss tail and be cut
// instead of refused. Replay skips it (it holds no records). Only written
// when some batch is not yet claimed durable, so repeated Open and Close
// of an idle log add nothing.
func (l *Log) writeCloseMarker() error {
	entry, _, _ := finishBatch(make([]byte, batchHeaderSize), 0, -1, nil, l.last)
	idx := l.last + 1
	if err := l.tw.Write(idx, entry); err != nil {
		return fmt.Errorf("ringwal/wal: writing the close marker: %w", err)
	}
	l.claimed = l.last
	l.last = idx
	l.noteEntry(idx, entry)
	if err := l.syncLog(&BatchInfo{}); err != nil {
		return err
	}
	l.claimed = idx // a marker stands for itself: nothing left unclaimed
	return nil
}
