package wal

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"
)

// The syncer: the goroutine that fsyncs what the writer wrote, so that the
// writer never waits for an fsync (writer.go explains why). The writer
// tells it how far the log is written (publish) and hands it the results
// to release once an fsync covers them (awaitSync); the syncer fsyncs the
// tail segment through a file handle of its own and releases them.

// syncQueue is the hand-off between the writer and the syncer. The fields
// up to stop are guarded by mu; file and dirSynced belong to whoever runs
// syncPass (the syncer; Open before it starts; the writer once it
// stopped), which l.syncMu serialises.
type syncQueue struct {
	mu   sync.Mutex
	wake chan struct{} // buffered (1): there are waits, or stop was set
	// How far the log is written: every batch up to written has returned
	// from write(2); the tail segment then held size bytes.
	written uint64
	size    int64
	dirGen  uint64   // the writer's dirGen at that point
	next    *os.File // the tail segment's file, when it changed since the syncer took one
	nextErr error    // opening that file failed
	waits   []syncWait
	stop    bool

	file      *os.File // the tail segment's file, as last taken from next
	dirSynced uint64   // dirGen as of the last directory fsync
}

// syncWait is a result to release once an fsync covered batch index.
// Queued in index order (the writer queues them as it writes).
type syncWait struct {
	index uint64
	res   *result
}

// publish tells the syncer how far the log is written: every batch up to
// l.last returned from write(2), the tail segment holding l.tailSize
// bytes. If the tail segment's file changed since the last publish (a
// segment switch, a front truncation that rewrote it, a reopen), it first
// opens the new file for the syncer: fsync of any descriptor of a file
// makes all of its written data durable, whichever descriptor wrote it
// (segment.go), and tidwall/wal does not share its own. Writer only (and
// Open before the writer starts).
func (l *Log) publish() {
	var f *os.File
	var ferr error
	moved := l.tailMoved
	if moved {
		l.tailMoved = false
		// Write access: some systems fsync only a descriptor open for
		// writing. Nothing is written through it.
		f, ferr = os.OpenFile(l.tailPath(), os.O_WRONLY, 0)
	}
	q := &l.sq
	q.mu.Lock()
	q.written, q.size, q.dirGen = l.last, int64(l.tailSize), l.dirGen
	var old *os.File
	if moved {
		old, q.next, q.nextErr = q.next, f, ferr
	}
	q.mu.Unlock()
	if old != nil {
		old.Close() // handed over but never taken: the syncer never saw it
	}
}

// awaitSync queues res to be released (its done closed, err set) once an
// fsync covers batch l.last. Writer only.
func (l *Log) awaitSync(res *result) {
	q := &l.sq
	q.mu.Lock()
	q.waits = append(q.waits, syncWait{index: l.last, res: res})
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// syncer is the syncer goroutine: while results wait, it fsyncs what was
// written and releases those the fsync covered (syncPass). Open starts it;
// the writer stops it (stopSyncer) once every batch is written, and it
// returns once no result waits.
func (l *Log) syncer() {
	defer close(l.syncStopped)
	q := &l.sq
	for {
		q.mu.Lock()
		for len(q.waits) == 0 && !q.stop {
			q.mu.Unlock()
			<-q.wake
			q.mu.Lock()
		}
		idle := len(q.waits) == 0
		q.mu.Unlock()
		if idle {
			return // stop, and nothing waits
		}
		l.catchUp()
		if l.syncPass() == nil {
			// The producers just released are runnable but not running
			// yet; yielding lets them append, and the writer write, before
			// the next fsync begins, so that it covers them all (the
			// writer yields after releasing waiters for the same reason).
			runtime.Gosched()
		}
	}
}

// catchUp waits, before an fsync begins, for the batch the writer is
// writing or is about to take (Write and Fsync modes take one as soon as
// it is appended to): the fsync then covers it too, where it would
// otherwise begin a write's time too early and leave it to one more fsync.
// This waits for one write, never for an fsync: the writer never waits for
// the syncer. Syncer only.
func (l *Log) catchUp() {
	l.mu.Lock()
	defer l.mu.Unlock()
	busy := l.inflight != nil || (!l.cur.empty() && (l.cur.urgent || l.opt.Mode != Buffered))
	if !busy {
		return
	}
	for c0 := l.commits; l.commits == c0; {
		l.syncWaiting = true
		l.commitDone.Wait()
	}
}

// stopSyncer stops the syncer once it released every queued result and
// waits for it. Writer only, at shutdown; afterwards the writer runs
// syncPass itself.
func (l *Log) stopSyncer() {
	q := &l.sq
	q.mu.Lock()
	q.stop = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	<-l.syncStopped
}

// syncPass makes every batch written so far durable and releases the
// results it covers. It takes what publish last said (written, the tail
// segment's file and size) before it fsyncs: one fsync covers every batch
// written before it began, and everything queued meanwhile waits for the
// next pass. Earlier segments need no fsync: tidwall/wal fsyncs a segment
// before it switches away from it, inside the write that switches
// (segment.go). New segment files need their directory fsynced. Only then
// does l.synced move, so no batch header ever claims more than an fsync
// covered. A failed fsync makes the log unusable (the kernel may have
// dropped the dirty pages, and a later fsync could succeed without them)
// and fails every queued result.
//
// l.syncMu is held throughout, so the writer's front truncation and
// repair, which replace or cut segment files, never run beside an fsync:
// the fsync's file is then still the segment at its path when it is
// traced.
func (l *Log) syncPass() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	q := &l.sq
	q.mu.Lock()
	target, size, dirGen := q.written, q.size, q.dirGen
	var old *os.File
	var err error
	if q.next != nil || q.nextErr != nil {
		old, q.file, err = q.file, q.next, q.nextErr
		q.next, q.nextErr = nil, nil
		if err != nil {
			err = fmt.Errorf("opening the tail segment to fsync it: %w", err)
		}
	}
	q.mu.Unlock()
	if old != nil {
		old.Close()
	}
	failed := l.failedErr()
	if err == nil {
		err = failed
	}
	t0 := time.Now()
	// Nothing to do when an earlier pass covered it all already.
	attempt := err == nil && (target > l.synced.Load() || dirGen != q.dirSynced)
	if attempt {
		if q.file == nil {
			err = fmt.Errorf("no tail segment file to fsync")
		} else {
			fail("log-fsync")
			if err = q.file.Sync(); err == nil {
				trace(ioEvent{op: opSync, path: q.file.Name(), off: size, prefix: true})
			}
		}
		if err == nil && dirGen != q.dirSynced {
			if err = syncDir(l.logDir); err == nil {
				q.dirSynced = dirGen
			}
		}
		if err == nil {
			l.synced.Store(target)
		}
	}
	d := time.Since(t0)
	if err != nil && err != failed {
		err = fmt.Errorf("ringwal/wal: fsync: %w", err)
		l.setFailed(err)
	}
	// Release under q.mu (closing a channel never blocks): no copy of the
	// released part is needed.
	q.mu.Lock()
	n := 0
	for n < len(q.waits) && (err != nil || q.waits[n].index <= target) {
		w := q.waits[n]
		w.res.err = err
		close(w.res.done)
		n++
	}
	rest := copy(q.waits, q.waits[n:])
	clear(q.waits[rest:])
	q.waits = q.waits[:rest]
	q.mu.Unlock()
	if attempt {
		l.report(BatchInfo{Sync: d, Err: err})
	}
	return err
}

// closeFiles closes the syncer's file handles. Once nothing fsyncs any
// more: at shutdown, or when Open fails.
func (q *syncQueue) closeFiles() {
	for _, f := range []*os.File{q.file, q.next} {
		if f != nil {
			f.Close()
		}
	}
	q.file, q.next = nil, nil
}

// report passes info to Options.OnBatch, one call at a time (the writer
// and the syncer both report).
func (l *Log) report(info BatchInfo) {
	if l.opt.OnBatch == nil {
		return
	}
	l.hookMu.Lock()
	defer l.hookMu.Unlock()
	l.opt.OnBatch(info)
}
