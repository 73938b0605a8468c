package wal

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// Writing while the writer fsyncs. The writer writes a batch and then
// fsyncs it; what is appended during that fsync must not wait for it to
// reach write(2), or a process kill loses records the OS would have kept
// (Run's acks above all). A second goroutine for the writing would cost a
// hand-off per batch, which on a busy machine is a wait in the run queue
// behind the very producers it serves. So, during an fsync, an appender
// whose append made the pending batch big enough writes it itself (it
// "stands in" for the writer), and a timer writes a smaller one once it
// waited a quarter of an fsync: a write(2) per append would cost more CPU
// than the fsync takes. The writer's fsync goes through a file descriptor
// of its own (tidwall/wal holds its lock through its Sync), so the two
// never wait for each other: fsync of any descriptor of a file makes all
// of its written data durable.
//
// Who owns the writer's state (tidwall/wal and the fields Log marks as the
// writer's) at any moment, all decided under l.mu:
//
//   - the writer, except while l.syncing;
//   - while l.syncing: the writer until its batch (and what was appended
//     meanwhile: writeMore) is written (l.wwriting), then a stand-in while
//     it writes a batch (l.standInBusy); the writer touches only its own
//     descriptor until its fsync returned and no stand-in is writing.
//
// A batch a stand-in writes is not covered by the fsync in progress: its
// waiters that need an fsync wait for the next one (l.syncWaits), which
// the writer starts as soon as this one ends.

// syncWait is a result to release once an fsync covers batch index.
type syncWait struct {
	index uint64
	res   *result
}

// syncJob is one fsync of the tail segment, fixed before it begins: it
// covers every batch up to target, the segment then holding size bytes.
type syncJob struct {
	f      *os.File
	path   string
	target uint64
	size   int64
	dirty  bool // a segment file was created since the last directory fsync
}

// standInLocked reports whether the caller, who just appended, must write
// the batch itself (standIn): the writer is in an fsync, nobody stands in
// for it yet, and the batch gathered enough bytes (gathered). A batch
// that has not is written by the gather timer unless it grows enough
// first. While the writer is still writing its own batch, it takes
// what is appended meanwhile itself (writeMore). Buffered mode gathers
// appends on purpose: never. l.mu must be held.
func (l *Log) standInLocked() bool {
	if !l.syncing || l.wwriting || l.standingIn || l.opt.Mode == Buffered || l.cur.n == 0 {
		return false
	}
	if !l.cur.gathered() {
		l.armGatherLocked()
		return false
	}
	l.standingIn = true
	return true
}

// A stand-in writes a batch at once if it gathered standInBytes bytes,
// otherwise the gather timer writes it once it waited gatherWait (a
// quarter of the last fsync, within [minGatherWait, maxGatherWait]). A
// write(2) per append would cost more CPU than the writer's fsync takes,
// and small batches go uncompressed (Options.CompressAbove): on 2 cores a
// write per append made W2 64P4C 1.5× slower, a write per 16 records
// 1.3×. So a record appended during an fsync reaches write(2) within
// about a quarter of that fsync, not at its end.
const (
	standInBytes  = 16 << 10
	minGatherWait = 100 * time.Microsecond
	maxGatherWait = 2 * time.Millisecond
)

func (p *pending) gathered() bool {
	return len(p.buf)-batchHeaderSize >= standInBytes
}

// gatherWaitLocked is how long what gathers during an fsync waits for a
// stand-in before the gather timer writes it. l.mu held.
func (l *Log) gatherWaitLocked() time.Duration {
	return min(max(l.lastSync/4, minGatherWait), maxGatherWait)
}

// armGatherLocked starts the gather timer unless it runs. l.mu held.
func (l *Log) armGatherLocked() {
	if l.gatherArmed {
		return
	}
	l.gatherArmed = true
	if l.gatherTimer == nil {
		l.gatherTimer = time.AfterFunc(l.gatherWaitLocked(), l.gatherExpired)
	} else {
		l.gatherTimer.Reset(l.gatherWaitLocked())
	}
}

// gatherExpired runs on the gather timer's goroutine: what was appended
// during the fsync waited long enough (gatherWaitLocked); it stands in and writes it, however
// little it is, if the fsync still runs and nobody else writes it.
func (l *Log) gatherExpired() {
	l.mu.Lock()
	l.gatherArmed = false
	if !l.syncing || l.wwriting || l.standingIn || l.cur.n == 0 {
		l.mu.Unlock()
		return
	}
	l.standingIn = true
	l.mu.Unlock()
	l.standIn()
}

// standInWrites bounds how many batches one stand-in writes: its caller
// (who may own a message's record while it appends) must not be kept for a
// whole fsync by others' appends. After it, the next appender stands in.
const standInWrites = 4

// standIn writes, in the writer's place, the batch pending now and those
// that gather enough while it writes, until none is left, the fsync ended
// or it wrote standInWrites batches (a batch that holds a request, which
// only the writer runs, or a failed log also stop it); what is left to
// write waits for the gather timer. The caller won the role (standingIn);
// it may run only later, in another fsync (it then stands in for that one)
// or none (it does nothing). The writer never waits for it to start, only
// for a write it began (standInBusy).
func (l *Log) standIn() {
	l.mu.Lock()
	for i := 0; i < standInWrites; i++ {
		p := l.cur
		if !l.syncing || l.wwriting || p.n == 0 || (i > 0 && !p.gathered()) ||
			len(p.reqs) > 0 || l.failed != nil || l.repairCause != nil {
			break
		}
		l.cur = l.takePendingLocked()
		l.standInBusy = true
		l.mu.Unlock()
		l.writeInPlace(p, false)
		l.mu.Lock()
		l.standInBusy = false
		l.wcond.Broadcast()
		l.putPendingLocked(p)
	}
	l.standingIn = false
	if l.syncing && !l.wwriting && l.cur.n > 0 && l.opt.Mode != Buffered {
		l.armGatherLocked()
	}
	l.mu.Unlock()
}

// writeInPlace writes p, taken from l.cur outside the writer's own loop
// (by a stand-in, or by the writer before its fsync: writeMore), as the
// next batch, and releases its waiters or, if they wait for an fsync,
// queues them (the fsync about to begin covers them if the writer wrote
// p; otherwise the next one). A stand-in does not repair a failed write
// (repair replaces files the writer's fsync may be using): the writer
// repairs once its fsync is over, and nothing is written before.
func (l *Log) writeInPlace(p *pending, writer bool) {
	info := BatchInfo{Records: p.n}
	err := l.writeBatch(p, &info, writer)
	res := p.res
	res.index, res.total = l.last, l.written
	if err != nil && !writer && !errors.Is(err, ErrFenced) { // a fenced batch was not written
		l.repairCause = err
	}
	if err == nil && p.needSync {
		l.syncWaits = append(l.syncWaits, syncWait{index: l.last, res: res})
	} else {
		l.finish(p, err)
	}
	if l.opt.OnBatch != nil {
		info.Err = err
		l.opt.OnBatch(info)
	}
}

// writeMore is the writer, its batch written and its fsync next, writing
// what was appended meanwhile (nobody stands in while it writes), so that
// the fsync covers it too.
func (l *Log) writeMore() {
	l.mu.Lock()
	p := l.cur
	if p.n == 0 || len(p.reqs) > 0 || l.failed != nil {
		l.mu.Unlock()
		return
	}
	l.cur = l.takePendingLocked()
	l.mu.Unlock()
	l.writeInPlace(p, true)
	l.mu.Lock()
	l.putPendingLocked(p)
	l.mu.Unlock()
}

// finish releases b's waiters with err, keeping err for the next Flush,
// Sync or Close if nobody waits for some of b's records.
func (l *Log) finish(b *pending, err error) {
	if err == nil && b.n > 0 {
		err = l.fenced() // the batch is written: the owner may have lost it since
	}
	if err != nil && b.noWait {
		l.mu.Lock()
		if l.asyncErr == nil {
			l.asyncErr = err
		}
		l.mu.Unlock()
	}
	b.res.err = err
	close(b.res.done)
}

// releaseSynced releases the queued waits an fsync through target covered
// (all of them, failed, if err is set), and reports whether there were
// any. Writer only.
func (l *Log) releaseSynced(target uint64, err error) bool {
	n := 0
	for n < len(l.syncWaits) && (err != nil || l.syncWaits[n].index <= target) {
		n++
	}
	if n > 0 && err == nil {
		err = l.fenced() // synced, but the owner may have lost the log since
	}
	for _, w := range l.syncWaits[:n] {
		w.res.err = err
		close(w.res.done)
	}
	rest := copy(l.syncWaits, l.syncWaits[n:])
	clear(l.syncWaits[rest:])
	l.syncWaits = l.syncWaits[:rest]
	return n > 0
}

// fsyncBeside is the fsync of a batch the writer just wrote (or tried to:
// werr), with l.syncing set: producers write in its place meanwhile. It
// returns with l.syncing clear and the writer's state its own again, and
// returns the fsync's error (nil if werr left nothing to fsync).
func (l *Log) fsyncBeside(werr error, info *BatchInfo) error {
	var job syncJob
	var err error
	attempt := werr == nil || l.failedErr() == nil
	if info.Records > 0 && l.opt.OnBatch != nil {
		wi := *info
		wi.Err = werr
		l.opt.OnBatch(wi) // before a stand-in may report: one call at a time
	}
	if attempt {
		l.writeMore()
		job, err = l.prepareSync()
	}
	l.mu.Lock()
	l.wwriting = false
	l.mu.Unlock()

	var d time.Duration
	if attempt && err == nil {
		fail("log-fsync")
		t0 := time.Now()
		err = job.f.Sync()
		d = time.Since(t0)
	}

	l.mu.Lock()
	l.syncing = false
	if d > 0 {
		l.lastSync = d
	}
	for l.standInBusy {
		l.wcond.Wait()
	}
	cause := l.repairCause
	l.repairCause = nil
	l.mu.Unlock()

	if cause != nil {
		l.repairAfterFailure(cause)
	}
	if !attempt {
		return nil
	}
	if err == nil {
		trace(ioEvent{op: opSync, path: job.path, off: job.size, prefix: true})
		if job.dirty {
			// Not beside a stand-in: its segment switch could create an
			// entry this fsync would seem to cover.
			err = syncDir(l.logDir)
		}
	}
	info.Sync = d
	if err != nil {
		l.dirDirty = l.dirDirty || job.dirty
		err = fmt.Errorf("ringwal/wal: fsync: %w", err)
		l.setFailed(err)
		return err
	}
	l.synced = job.target
	return nil
}

// prepareSync fixes what the next fsync covers and opens the writer's own
// descriptor of the tail segment if the tail changed (a segment switch, a
// front truncation that rewrote it, a repair). Writer only, while it owns
// its state.
func (l *Log) prepareSync() (syncJob, error) {
	if l.tailMoved || l.syncFile == nil {
		l.closeSyncFile()
		f, err := openToSync(l.tailPath())
		if err != nil {
			return syncJob{}, fmt.Errorf("opening the tail segment to fsync it: %w", err)
		}
		l.syncFile, l.tailMoved = f, false
	}
	job := syncJob{f: l.syncFile, path: l.tailPath(), target: l.last, size: int64(l.tailSize), dirty: l.dirDirty}
	l.dirDirty = false
	return job, nil
}

func (l *Log) closeSyncFile() {
	if l.syncFile != nil {
		_ = l.syncFile.Close()
		l.syncFile = nil
	}
}

// takePendingLocked returns an empty batch to fill, reusing one. l.mu held.
func (l *Log) takePendingLocked() *pending {
	if n := len(l.free); n > 0 {
		p := l.free[n-1]
		l.free[n-1] = nil
		l.free = l.free[:n-1]
		return p
	}
	return newPending()
}

// putPendingLocked keeps p, emptied, for reuse (two or three are ever in
// use: the one filling, the writer's, a stand-in's). l.mu held.
func (l *Log) putPendingLocked(p *pending) {
	p.reset()
	if len(l.free) < 4 {
		l.free = append(l.free, p)
	}
}
