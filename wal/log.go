package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	twal "github.com/tidwall/wal"
)

// Log is an open write-ahead log directory. Create it with Open and stop it
// with Close.
//
// Goroutines: Open starts exactly one, the writer, which owns the
// tidwall/wal log; Close stops it. Every method is safe for concurrent use
// unless its comment says otherwise.
type Log struct {
	dir    string
	logDir string
	opt    Options
	lock   *dirLock
	repair RepairReport
	snap   *chosenSnapshot // recovery starting point found by Open (nil = none)

	// Hand-off between producers and the writer; see writer.go.
	mu       sync.Mutex
	cur      *pending // records accumulating for the next batch
	spare    *pending // the other buffer, reused (double buffering)
	inflight *result  // batch the writer is writing now, nil if none
	wstate   int      // writer's state, for deciding whether to wake it
	closing  bool     // Close began: no more appends
	failed   error    // sticky: the log cannot write any more
	asyncErr error    // a write error no waiter has seen yet (Buffered, AppendNoWait)
	appended bool     // an Append happened (Replay must come first)
	wake     chan struct{}
	stopped  chan struct{}
	// wakeups counts the writer's returns from a wait (set by the writer
	// under mu). Nothing reads it but a test that checks an idle log
	// sleeps: the writer has no periodic timer, and must not grow one.
	wakeups uint64

	// Owned by the writer goroutine (and by Open before it starts).
	tw        *twal.Log
	last      uint64 // index of the last batch written
	tailSize  int    // mirror of tidwall/wal's tail segment size, to see segment switches
	tailIndex uint64 // first index of the tail segment (its file name)
	dirDirty  bool   // a segment file was created since the last directory fsync
	synced    uint64 // last batch index known fsynced (written into each batch header)
	claimed   uint64 // highest index some batch in the log claims durable (see writeCloseMarker)
	scratch   []byte // compression buffer
	written   int64  // framed bytes written, cumulative (incl. the log found at Open)

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
	if err := mkdirAll(abs); err != nil {
		return nil, err
	}
	lk, err := lockDir(abs)
	if err != nil {
		return nil, err
	}
	l := &Log{dir: abs, logDir: filepath.Join(abs, logDirName), opt: o, lock: lk}
	if err := l.recover(); err != nil {
		lk.release()
		return nil, err
	}
	l.cur, l.spare = newPending(), newPending()
	l.wake = make(chan struct{}, 1)
	l.stopped = make(chan struct{})
	go l.run()
	return l, nil
}

// recover brings the directory into a state tidwall/wal can open and that
// recovery can trust, then opens it. Runs before the writer starts.
func (l *Log) recover() error {
	if err := ensureFormat(l.dir); err != nil {
		return err
	}
	if err := mkdirAll(l.logDir); err != nil {
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
			if err := resetLog(l.logDir, sc.segs, snap.index+1); err != nil {
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
	l.claimed = sc.durable
	if sc.lastEmpty && sc.lastClaim+1 == l.last {
		l.claimed = l.last // the log ends with a close marker
	}
	return nil
}

// resetLog replaces the log by an empty one whose next index is next.
func resetLog(logDir string, segs []segment, next uint64) error {
	for _, s := range segs {
		if _, err := removeFile(s.path); err != nil {
			return err
		}
	}
	f, err := createFile(filepath.Join(logDir, segmentName(next)), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
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
// replay reads the files directly.
func tidwallOptions(segmentSize int) *twal.Options {
	return &twal.Options{
		NoSync:           true,
		SegmentSize:      segmentSize,
		SegmentCacheSize: 1,
		AllowEmpty:       true,
		DirPerms:         0o755,
		FilePerms:        0o640,
	}
}

// openTidwall opens tidwall/wal on the (checked) log directory and sets the
// writer's mirrors of it. Called by Open and by the writer's repair path.
func (l *Log) openTidwall(initial bool) error {
	before, _, err := logView(l.logDir)
	if err != nil {
		return err
	}
	tw, err := twal.Open(l.logDir, tidwallOptions(l.opt.SegmentSize))
	if err != nil {
		return fmt.Errorf("ringwal/wal: opening %s: %w", l.logDir, err)
	}
	if len(before) == 0 {
		// tidwall/wal's load starts an empty directory with segment 1.
		trace(ioEvent{op: opCreate, path: filepath.Join(l.logDir, segmentName(1))})
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
	return nil
}

// Repair reports what Open cut from the log (what Options.Recovery
// allowed: a torn or unsynced tail, or damage), and where it kept a copy
// of the cut bytes (RepairReport.BrokenFiles). Zero if nothing was cut.
// Safe for concurrent use (it never changes after Open).
func (l *Log) Repair() RepairReport { return l.repair }

// Dir returns the log's directory (absolute). Safe for concurrent use.
func (l *Log) Dir() string { return l.dir }

// Replay calls fn for every record of the newest snapshot, then for every
// record of the log after it, in order. fn's *Record is reused: its
// Payload and Headers are valid only during the call. An error from fn
// stops the replay and is returned (wrapped, errors.Is works). fn runs
// on the caller's goroutine; the log after the snapshot is decoded on
// helper goroutines a few batches ahead, which have ended when Replay
// returns.
//
// Call it before the first Append (it returns an error after one); it may
// be called more than once. Not safe concurrently with Checkpoint.
func (l *Log) Replay(fn func(r *Record) error) (ReplayStats, error) {
	return l.ReplayPrepared(nil, fn)
}

// ReplayPrepared is Replay with a hook, so that work a record needs
// before fn applies it runs alongside fn rather than in it: every record
// is passed to a prepare function before fn, on the goroutine that
// decoded it (one of the helpers, for the log after the snapshot; the
// caller's, for the snapshot). newPrepare (if not nil) is called once per
// such goroutine for its prepare function, which is called one record at
// a time, in log order among that goroutine's records; different
// goroutines' run at once. prepare may replace the record's Payload (with
// a copy of its own, say): fn then sees the replacement. Like fn, it must
// not keep the *Record.
func (l *Log) ReplayPrepared(newPrepare func() func(r *Record), fn func(r *Record) error) (ReplayStats, error) {
	start := time.Now()
	var st ReplayStats
	l.mu.Lock()
	closed, appended := l.closing, l.appended
	l.mu.Unlock()
	if closed {
		return st, ErrClosed
	}
	if appended {
		return st, errors.New("ringwal/wal: Replay must be called before the first Append")
	}
	var r Record
	var after uint64
	if l.snap != nil {
		snapFn := fn
		if newPrepare != nil {
			prepare := newPrepare()
			snapFn = func(r *Record) error {
				prepare(r)
				return fn(r)
			}
		}
		n, err := readSnapshot(l.snap.path, &r, snapFn)
		st.SnapshotRecords = n
		if err != nil {
			return st, fmt.Errorf("ringwal/wal: replaying snapshot: %w", err)
		}
		st.SnapshotIndex, after = l.snap.index, l.snap.index
	}
	segs, _, err := logView(l.logDir)
	if err != nil {
		return st, err
	}
	st.Batches, st.Records, st.Bytes, err = replayLog(segs, after, l.lastIndex.Load(), nil, newPrepare, fn)
	if err != nil {
		return st, err
	}
	st.Duration = time.Since(start)
	return st, nil
}

// replayLog decodes the batches after index `after` up to `last` of the
// (already checked) segments, calling onBatch (if set) before each batch's
// records and fn for each record; newPrepare (if set) gives each decoding
// goroutine its prepare hook, called for each record it decodes.
//
// Decoding (decompressing, DecodeRecord, prepare) runs on goroutines of
// their own, a few batches ahead of fn, which runs on the caller's: on a
// large log decoding costs more than applying, so with two cores or more
// recovery takes about as long as the applying alone. One goroutine
// splits the segments into batches (cheap: it reads lengths) and hands
// them, in order, to the decoders and to fn's loop, which waits for each
// batch to be decoded in turn. fn still sees every record in log order,
// and an error (a decoder's or fn's) stops the replay where the serial
// loop would have stopped: fn is called for the records before a bad one.
func replayLog(segs []segment, after, last uint64, onBatch func(index uint64), newPrepare func() func(*Record), fn func(*Record) error) (batches, records uint64, bytes int64, err error) {
	workers := min(runtime.GOMAXPROCS(0), maxReplayDecoders)
	ahead := 2*workers + 2 // being decoded, decoded and waiting, being applied
	free := make(chan *decodedBatch, ahead)
	for range ahead {
		free <- &decodedBatch{decoded: make(chan struct{}, 1)}
	}
	// At most `ahead` batches exist, so sending on work or out never
	// blocks.
	work, out := make(chan *decodedBatch, ahead), make(chan *decodedBatch, ahead)
	stop, done := make(chan struct{}), make(chan struct{})
	var decoders sync.WaitGroup
	for range workers {
		var prepare func(*Record)
		if newPrepare != nil {
			prepare = newPrepare()
		}
		decoders.Add(1)
		go func() {
			defer decoders.Done()
			for b := range work {
				select {
				case <-stop: // nobody will apply it
				default:
					if err := b.decode(b.entry, prepare); err != nil {
						b.err = b.wrap(err)
					}
				}
				b.entry = nil
				b.seg.Done()
				b.decoded <- struct{}{}
			}
		}()
	}
	go func() {
		defer close(done)
		splitLog(segs, after, last, free, work, out, stop)
		close(work)
		decoders.Wait()
		close(out)
	}()
	defer func() {
		close(stop)
		<-done
	}()
	for b := range out {
		<-b.decoded
		if b.err == nil && onBatch != nil {
			onBatch(b.index)
		}
		for i := range b.recs {
			if err2 := fn(&b.recs[i]); err2 != nil {
				err = b.wrap(err2)
				return
			}
		}
		if b.err != nil {
			err = b.err
			return
		}
		batches++
		records += uint64(b.count)
		bytes += int64(b.n)
		free <- b
	}
	return
}

// maxReplayDecoders bounds replayLog's decoding goroutines (and so the
// batches it holds at once, two per decoder and two more).
const maxReplayDecoders = 4

// decodedBatch is one batch decoded for replayLog: its records, and the
// body they point into (owned by the batch until it goes back to the
// decoder).
type decodedBatch struct {
	path  string
	off   int
	index uint64
	n     int    // the entry's bytes in its segment
	count uint32 // records the batch holds
	body  []byte
	recs  []Record
	// err stops the replay after recs (the records before the failure);
	// it is wrapped already.
	err error
	// entry is the batch in its segment's buffer, until decoded; seg
	// counts the batches still to decode from that buffer.
	entry []byte
	seg   *sync.WaitGroup
	// decoded gets a value when the batch is decoded (or failed).
	decoded chan struct{}
}

func (b *decodedBatch) wrap(err error) error {
	return fmt.Errorf("ringwal/wal: replaying %s offset %d (batch %d): %w", b.path, b.off, b.index, err)
}

// splitLog is replayLog's splitting half: it sends each batch after
// `after` up to `last`, in order, on work (to be decoded) and on out (to
// be applied once decoded), taking buffers from free, until the log ends,
// it finds a bad entry (a batch sent on out alone, with its err set and
// decoded already), or stop closes. Segments are read into two buffers in
// turn; a buffer is reused once every batch in it is decoded.
func splitLog(segs []segment, after, last uint64, free chan *decodedBatch, work, out chan<- *decodedBatch, stop <-chan struct{}) {
	var bufs [2][]byte
	var pending [2]sync.WaitGroup
	take := func() *decodedBatch {
		select {
		case b := <-free:
			b.err, b.entry, b.seg, b.recs = nil, nil, nil, b.recs[:0]
			return b
		case <-stop:
			return nil
		}
	}
	fail := func(err error) {
		if b := take(); b != nil {
			b.err = err
			b.decoded <- struct{}{}
			out <- b
		}
	}
	for i, sg := range segs {
		k := i % 2
		pending[k].Wait()
		var err error
		if bufs[k], err = readFileInto(sg.path, bufs[k]); err != nil {
			// Nothing of this segment was decoded: a batch with no
			// records carries the error.
			fail(err)
			return
		}
		buf := bufs[k]
		index := sg.index
		for off := 0; off < len(buf) && index <= last; index++ {
			e, n, ok := nextEntry(buf[off:])
			if !ok {
				fail(fmt.Errorf("%s offset %d (batch %d): bad entry length: %w", sg.path, off, index, ErrCorrupt))
				return
			}
			if index > after {
				b := take()
				if b == nil {
					return
				}
				b.path, b.off, b.index, b.n = sg.path, off, index, n
				b.entry, b.seg = e, &pending[k]
				pending[k].Add(1)
				work <- b
				out <- b
			}
			off += n
		}
	}
}

// decode checks entry e and decodes its records into b, calling prepare
// (if set) for each. The records may point into b.body, never into e: the
// segment buffer e lies in is reused while b waits to be applied.
func (b *decodedBatch) decode(e []byte, prepare func(*Record)) error {
	b.recs = b.recs[:0]
	h, err := checkBatch(e)
	if err != nil {
		return err
	}
	b.count = h.count
	var body []byte
	if h.flags&flagS2 == 0 {
		b.body = append(b.body[:0], e[h.size:]...)
		body = b.body
	} else if body, b.body, err = batchBody(e, h, b.body); err != nil {
		return err
	}
	// Records are reused batch after batch, so that decodeRecordBody can
	// keep their strings when equal; a bogus count cannot allocate much,
	// since parseBatchHeader checked it against the body's length.
	if cap(b.recs) < int(h.count) {
		b.recs = append(b.recs[:cap(b.recs)], make([]Record, int(h.count)-cap(b.recs))...)
	}
	recs := b.recs[:h.count]
	for i := range recs {
		n, err := DecodeRecord(body, &recs[i])
		if err != nil {
			b.recs = recs[:i]
			return fmt.Errorf("record %d of %d: %w", i+1, h.count, err)
		}
		if prepare != nil {
			prepare(&recs[i])
		}
		body = body[n:]
	}
	b.recs = recs
	if len(body) != 0 {
		return corruptf("%d bytes after the batch's %d records", len(body), h.count)
	}
	return nil
}

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
		l.kickLocked(true)
		l.mu.Unlock()
		<-l.stopped
		if err := l.lock.release(); l.closeErr == nil {
			l.closeErr = err
		}
	})
	if !first {
		return nil
	}
	return l.closeErr
}
