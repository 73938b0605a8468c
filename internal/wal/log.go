package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	twal "github.com/tidwall/wal"
)

// Log is an open write-ahead log directory. Create it with Open and stop it
// with Close.
//
// Goroutines: Open starts the writer, which owns the tidwall/wal log, and
// in Write and Buffered modes the writeback goroutine (writeback.go),
// which the writer stops as it shuts down; Close stops the writer. While
// the writer fsyncs, appenders write in its place, and a timer (fsync.go)
// writes what they leave for longer than a quarter of an fsync; Close
// stops the timer. Every method
// is safe for concurrent use unless its comment says otherwise.
type Log struct {
	dir    string
	logDir string
	opt    Options
	lock   *dirLock
	repair RepairReport
	snap   *chosenSnapshot // recovery starting point found by Open (nil = none)
	hint   []byte          // the last Close's hint, if the log is as it left it (hint.go)

	// Hand-off between producers and the writer; see writer.go.
	mu        sync.Mutex
	cur       *pending   // records accumulating for the next batch
	free      []*pending // emptied batches, reused
	inflight  *result    // batch the writer is writing now, nil if none
	wstate    int        // writer's state, for deciding whether to wake it
	closing   bool       // Close began: no more appends
	failed    error      // sticky: the log cannot write any more
	asyncErr  error      // a write error no waiter has seen yet (Buffered, AppendNoWait)
	appended  bool       // an Append happened (Replay must come first)
	closeHint []byte     // what CloseWithHint leaves for the next Open
	wake      chan struct{}
	stopped   chan struct{}
	// Writing while the writer fsyncs (fsync.go): the writer's batch is to
	// be fsynced (syncing), its write is not done yet (wwriting), an
	// appender won the role of writing in its place (standingIn) and is
	// writing a batch (standInBusy). wcond (on mu) signals the end of a
	// stand-in's write.
	syncing, wwriting, standingIn, standInBusy bool
	wcond                                      sync.Cond
	gatherTimer                                *time.Timer // writes what gathers during an fsync (fsync.go)
	gatherArmed                                bool
	lastSync                                   time.Duration // the last fsync's duration, for the gather timer
	// wakeups counts the writer's returns from a wait (set by the writer
	// under mu). Nothing reads it but a test that checks an idle log
	// sleeps: the writer has no periodic timer, and must not grow one.
	wakeups uint64

	// Owned by the writer goroutine (and by Open before it starts), or by
	// whoever writes in its place while it fsyncs (fsync.go).
	tw        *twal.Log
	last      uint64 // index of the last batch written
	tailSize  int    // mirror of tidwall/wal's tail segment size, to see segment switches
	reader    reader // reads by Location (locate.go)
	tailIndex uint64 // first index of the tail segment (its file name)
	dirDirty  bool   // a segment file was created since the last directory fsync
	synced    uint64 // last batch index known fsynced (written into each batch header)
	claimed   uint64 // highest index some batch in the log claims durable (see writeCloseMarker)
	scratch   []byte // compression buffer
	written   int64  // framed bytes written, cumulative (incl. the log found at Open)
	// The writer's own descriptor of the tail segment, for fsyncs beside
	// writes; reopened when the tail changed (tailMoved).
	syncFile  *os.File
	tailMoved bool
	syncWaits []syncWait // batches written during an fsync, waiting for the next
	// Writeback of the tail in Write and Buffered modes (writeback.go):
	// the tail (wbIndex) and its offset up to which it was handed over,
	// and the channel to the writeback goroutine (nil in Fsync mode) and
	// its end.
	wbIndex     uint64
	wbFrom      int
	wbJobs      chan writebackJob
	wbDone      chan struct{}
	repairCause error // a write in the writer's place failed; the writer repairs

	// Read by Stats and Size from any goroutine.
	firstIndex atomic.Uint64
	lastIndex  atomic.Uint64
	nBatches   atomic.Uint64
	nRecords   atomic.Uint64
	nBytes     atomic.Int64
	total      atomic.Int64 // = written
	ckBase     atomic.Int64 // total at the last checkpoint's index
	ckIndex    atomic.Uint64
	ckTime     atomic.Int64
	writeFails atomic.Uint64 // batch writes that failed (Checkpoint checks none did while it ran)
	wbRuns     atomic.Uint64 // writebacks started (writeback.go; a test reads it)
	// format is the version the directory's FORMAT file says: set by Open,
	// raised by RequireFormat on the writer once the new file is durable.
	format atomic.Int32

	ckMu      sync.Mutex // one Checkpoint at a time; Close waits for it
	closeOnce sync.Once
	closeErr  error
}

// Open opens (creating if needed) the log in dir and starts its writer.
//
// It takes the directory lock (ErrLocked if this or another process has it
// open), checks the format version (ErrVersion), finishes an interrupted
// truncation, reads every segment to check every batch's header and
// checksum, cuts what o.Recovery allows after keeping a copy of it (see
// RecoveryMode and Repair), refuses other damage, picks the newest
// valid snapshot the log covers, and opens tidwall/wal with NoSync (the
// writer does its own fsyncs).
func Open(dir string, o Options) (*Log, error) {
	o = o.withDefaults()
	if o.Mode > Buffered {
		return nil, fmt.Errorf("ringwal/wal: unknown mode %d", o.Mode)
	}
	if o.Recovery > SkipToPointInTime {
		return nil, fmt.Errorf("ringwal/wal: unknown recovery mode %d", o.Recovery)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	p := o.perms()
	if err := mkdirAll(abs, p.dir); err != nil {
		return nil, err
	}
	if err := checkDir(abs, p); err != nil {
		return nil, err
	}
	lk, err := lockDir(abs, p.file)
	if err != nil {
		return nil, err
	}
	l := &Log{dir: abs, logDir: filepath.Join(abs, logDirName), opt: o, lock: lk}
	if err := l.recover(); err != nil {
		lk.release()
		return nil, err
	}
	l.cur, l.free = newPending(), []*pending{newPending()}
	l.wcond.L = &l.mu
	l.wake = make(chan struct{}, 1)
	l.stopped = make(chan struct{})
	l.startWriteback()
	go l.run()
	return l, nil
}

// recover brings the directory into a state tidwall/wal can open and that
// recovery can trust, then opens it. Runs before the writer starts.
func (l *Log) recover() error {
	p := l.opt.perms()
	v, err := ensureFormat(l.dir, p.file)
	if err != nil {
		return err
	}
	l.format.Store(int32(v))
	if err := mkdirAll(l.logDir, p.dir); err != nil {
		return err
	}
	if err := checkDir(l.logDir, p); err != nil {
		return err
	}
	if err := errors.Join(fixModes(l.dir, p, l.opt.Logger), fixModes(l.logDir, p, l.opt.Logger)); err != nil {
		return err
	}
	if err := removeSnapshotTemps(l.dir); err != nil {
		return err
	}
	if err := normalizeLogDir(l.logDir); err != nil {
		return err
	}
	segs, _, err := logView(l.logDir)
	if err != nil {
		return err
	}
	sc, err := scanLog(segs, nil)
	if err != nil {
		return err
	}
	if c := sc.cut; c != nil {
		if err := c.allows(l.opt.Recovery); err != nil {
			return err
		}
		kept, err := applyCut(segs, c)
		if err != nil {
			return fmt.Errorf("ringwal/wal: cutting %s at %d: %w", c.path, c.off, err)
		}
		l.repair = c.report()
		l.repair.Mode = l.opt.Recovery
		l.repair.BrokenFiles = kept
		l.opt.Logger.Warn("ringwal/wal: cut "+c.class.String(), "segment", c.path, "offset", c.off, "index", c.index,
			"bytes", c.bytes, "batches", c.batches, "records", c.records, "valid_after", c.after,
			"reason", c.reason, "mode", l.opt.Recovery.String(), "kept", kept)
		sc.last = c.index - 1
		sc.segs = segs[:c.seg+1]
	}
	snap, err := chooseSnapshot(l.dir, sc.first)
	if err != nil {
		if len(sc.segs) == 0 && errors.Is(err, ErrCorrupt) {
			return fmt.Errorf("log directory %s holds no segments: %w", l.logDir, err)
		}
		return err
	}
	if snap != nil {
		l.repair.SkippedSnapshots = snap.skipped
		for _, p := range snap.skipped {
			l.opt.Logger.Warn("ringwal/wal: skipped damaged snapshot", "path", p)
		}
		if snap.path == "" {
			snap = nil
		}
	}
	if snap != nil {
		l.snap = snap
		l.ckIndex.Store(snap.index)
		l.ckTime.Store(snap.header.created)
		// The log must continue right after the snapshot. If it ends
		// before (no segments left, or a repair cut into what the snapshot
		// covers), restart it empty at index+1: tidwall/wal names segments
		// by first index, so an empty segment file fixes where it resumes.
		if len(sc.segs) == 0 || sc.last < snap.index {
			if len(sc.segs) == 0 && snap.index > 0 && l.opt.Recovery != SkipToPointInTime {
				return fmt.Errorf("log directory %s holds no segments but snapshot %s covers up to %d (Options.Recovery = SkipToPointInTime restarts the log after it): %w",
					l.logDir, snap.path, snap.index, ErrCorrupt)
			}
			if err := resetLog(l.logDir, sc.segs, snap.index+1, p.file); err != nil {
				return err
			}
			l.repair.LogReset = len(sc.segs) > 0 || snap.index > 0
		}
	}
	if err := l.openTidwall(true); err != nil {
		return err
	}
	// tidwall/wal creates the first segment of an empty log directory:
	// make every entry Open made or found durable now rather than at the
	// first fsync, which Write mode may never do. And fsync the tail
	// segment: what a killed process wrote may still be only in the page
	// cache. Every earlier segment was fsynced when tidwall/wal switched
	// away from it, so the whole log found is now durable, and the first
	// batch this run writes says so (its durable index): damage found
	// later in that part of the log is then never taken for a power-loss
	// tail, whatever the mode.
	err = l.tw.Sync()
	if err == nil {
		trace(ioEvent{op: opSync, path: l.tailPath()})
		err = syncDir(l.logDir)
	}
	if err != nil {
		l.tw.Close()
		l.tw = nil
		return err
	}
	l.dirDirty = false
	l.synced = l.last
	l.hint = readHint(l.dir, l.last)
	l.claimed = sc.durable
	if sc.lastEmpty && sc.lastClaim+1 == l.last {
		l.claimed = l.last // the log ends with a close marker
	}
	return nil
}

// resetLog replaces the log by an empty one whose next index is next; the
// new segment file gets mode perm.
func resetLog(logDir string, segs []segment, next uint64, perm os.FileMode) error {
	for _, s := range segs {
		if _, err := removeFile(s.path); err != nil {
			return err
		}
	}
	f, err := createFile(filepath.Join(logDir, segmentName(next)), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return syncDir(logDir)
}

// tidwallOptions are the options every tidwall/wal open uses (the
// compatibility test opens it the same way): NoSync, because the writer
// decides when to fsync; AllowEmpty, because a checkpoint may truncate
// every entry; a one-segment cache, because only the tail is written and
// replay reads the files directly. The modes are the owner-only defaults;
// openTidwall sets the Log's (Options.GroupReadable).
func tidwallOptions(segmentSize int) *twal.Options {
	return &twal.Options{
		NoSync:           true,
		SegmentSize:      segmentSize,
		SegmentCacheSize: 1,
		AllowEmpty:       true,
		DirPerms:         defaultPerms.dir,
		FilePerms:        defaultPerms.file,
	}
}

// openTidwall opens tidwall/wal on the (checked) log directory and sets the
// writer's mirrors of it. Called by Open and by the writer's repair path.
func (l *Log) openTidwall(initial bool) error {
	before, _, err := logView(l.logDir)
	if err != nil {
		return err
	}
	p := l.opt.perms()
	to := tidwallOptions(l.opt.SegmentSize)
	to.FilePerms, to.DirPerms = p.file, p.dir
	tw, err := twal.Open(l.logDir, to)
	if err != nil {
		return fmt.Errorf("ringwal/wal: opening %s: %w", l.logDir, err)
	}
	if len(before) == 0 {
		// tidwall/wal's load starts an empty directory with segment 1,
		// its mode narrowed by the umask.
		first := filepath.Join(l.logDir, segmentName(1))
		trace(ioEvent{op: opCreate, path: first})
		if err := os.Chmod(first, p.file); err != nil {
			tw.Close()
			return err
		}
	}
	first, err1 := tw.FirstIndex()
	last, err2 := tw.LastIndex()
	if err := errors.Join(err1, err2); err != nil {
		tw.Close()
		return err
	}
	segs, _, err := logView(l.logDir)
	if err != nil {
		tw.Close()
		return err
	}
	var size, total int64
	tailIndex := last + 1 // an empty log's first segment
	for i, s := range segs {
		fi, err := os.Stat(s.path)
		if err != nil {
			tw.Close()
			return err
		}
		total += fi.Size()
		if i == len(segs)-1 {
			size = fi.Size()
			tailIndex = s.index
		}
	}
	l.tw, l.last, l.tailSize, l.tailIndex = tw, last, int(size), tailIndex
	l.firstIndex.Store(first)
	l.lastIndex.Store(last)
	if initial {
		// First open: count the log found on disk as written since the
		// snapshot, so Size tells the engine whether to checkpoint soon.
		l.written = total
		l.total.Store(total)
	}
	// New segment files (including the first) are not durable until their
	// directory is fsynced; the next fsync does it.
	l.dirDirty = true
	l.tailMoved = true
	return nil
}

// Repair reports what Open cut from the log (what Options.Recovery
// allowed: a torn or unsynced tail, or damage), and where it kept a copy
// of the cut bytes (RepairReport.BrokenFiles). Zero if nothing was cut.
// Safe for concurrent use (it never changes after Open).
func (l *Log) Repair() RepairReport { return l.repair }

// Dir returns the log's directory (absolute). Safe for concurrent use.
func (l *Log) Dir() string { return l.dir }

// Size returns the bytes of log written since the last checkpoint's index
// (including, after Open, the log found on disk). The engine checkpoints
// when it passes a threshold. Lock-free.
func (l *Log) Size() int64 { return l.total.Load() - l.ckBase.Load() }

// Stats returns the log's counters. It lists the directory for the segment
// count and disk use, so it costs a few system calls; don't call it on a
// hot path. Safe for concurrent use.
func (l *Log) Stats() Stats {
	st := Stats{
		FirstIndex:      l.firstIndex.Load(),
		LastIndex:       l.lastIndex.Load(),
		Batches:         l.nBatches.Load(),
		Records:         l.nRecords.Load(),
		Bytes:           l.nBytes.Load(),
		SinceCheckpoint: l.Size(),
		CheckpointIndex: l.ckIndex.Load(),
	}
	if t := l.ckTime.Load(); t != 0 {
		st.CheckpointTime = time.Unix(0, t)
	}
	if segs, _, err := logView(l.logDir); err == nil {
		st.Segments = len(segs)
		for _, s := range segs {
			if fi, err := os.Stat(s.path); err == nil {
				st.DiskBytes += fi.Size()
			}
		}
	}
	if snaps, err := listSnapshots(l.dir); err == nil {
		for _, s := range snaps {
			if fi, err := os.Stat(s.path); err == nil {
				st.DiskBytes += fi.Size()
			}
		}
	}
	l.mu.Lock()
	st.Failed = l.failed
	l.mu.Unlock()
	return st
}

// Close drains and writes everything appended so far, fsyncs it, stops the
// writer, closes tidwall/wal and releases the directory lock. It waits for
// a running Checkpoint. It returns the first error among those steps (or
// the error that made the log unusable); calling it again returns nil.
// Safe for concurrent use: appends racing with Close either make it into
// the final batch or get ErrClosed.
func (l *Log) Close() error {
	first := false
	l.closeOnce.Do(func() {
		first = true
		l.ckMu.Lock()
		defer l.ckMu.Unlock()
		l.mu.Lock()
		l.closing = true
		hint := l.closeHint
		l.kickLocked(true)
		l.mu.Unlock()
		<-l.stopped
		if l.closeErr == nil && hint != nil {
			l.writeHint(hint, l.last) // the writer has stopped: last is final
		}
		l.reader.forget()
		if err := l.lock.release(); l.closeErr == nil {
			l.closeErr = err
		}
	})
	if !first {
		return nil
	}
	return l.closeErr
}
