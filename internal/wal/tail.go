package wal

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
)

// The writer's view of tidwall/wal's tail segment: which file it is, how
// full, when tidwall/wal switches to a new one, and the front truncation
// of a checkpoint. tidwall/wal does this I/O itself; the writer mirrors it
// (segment.go lists what that relies on) so that it knows when a new
// directory entry needs an fsync, and so that the trace hook sees the
// steps tidwall/wal took. Everything here runs on the writer goroutine, or
// on an appender writing in its place while it fsyncs (fsync.go).

// noteEntry follows tidwall/wal's segment switching (segmentSwitches) for
// the entry it just wrote as batch idx, so the writer knows the tail
// segment (its name and size) and when a new segment file exists whose
// directory entry needs an fsync. With a trace hook set it reports the
// steps tidwall/wal took: an fsync of the old tail and the new file at
// each switch, and the entry's bytes. It returns where the entry went:
// its segment's first index and its byte offset in that file.
func (l *Log) noteEntry(idx uint64, entry []byte) (segment uint64, offset uint32) {
	n := framedLen(len(entry))
	before, after := segmentSwitches(l.tailSize, n, l.opt.SegmentSize)
	if before {
		l.switchSegment(idx)
	}
	if l.tailSize <= math.MaxUint32 { // else no Location names it (segment 0)
		segment, offset = l.tailIndex, uint32(l.tailSize)
	}
	if tracing() {
		framed := appendUvarint(make([]byte, 0, n), uint64(len(entry)))
		trace(ioEvent{op: opWrite, path: l.tailPath(), off: int64(l.tailSize), data: append(framed, entry...)})
	}
	l.tailSize += n
	if after {
		l.switchSegment(idx + 1)
	}
	if before || after {
		fail("segment-switch")
	}
	return segment, offset
}

// switchSegment records that tidwall/wal fsynced the tail segment and
// started a new one whose first index is next, and gives the new file its
// mode exactly (tidwall/wal's is narrowed by the umask). A failed chmod
// leaves a mode narrower than asked, never wider: ignored.
func (l *Log) switchSegment(next uint64) {
	trace(ioEvent{op: opSync, path: l.tailPath()})
	l.tailIndex, l.tailSize = next, 0
	l.dirDirty, l.tailMoved = true, true
	trace(ioEvent{op: opCreate, path: l.tailPath()})
	_ = os.Chmod(l.tailPath(), l.opt.perms().file)
}

func (l *Log) tailPath() string { return filepath.Join(l.logDir, segmentName(l.tailIndex)) }

// truncateFront drops the batches before index from the log (checkpoint).
// Runs on the writer goroutine.
func (l *Log) truncateFront(index uint64) error {
	if l.tw == nil {
		return l.failedErr()
	}
	first, err := l.tw.FirstIndex()
	if err != nil {
		return err
	}
	if index > l.last+1 {
		index = l.last + 1
	}
	if index <= first {
		return nil
	}
	var removed []segment // what TruncateFront deletes, for the trace
	if tracing() {
		if segs, _, err := logView(l.logDir); err == nil {
			for i, s := range segs {
				if s.index <= index && (i == len(segs)-1 || segs[i+1].index > index) {
					removed = segs[:i+1]
				}
			}
		}
	}
	if err := l.tw.TruncateFront(index); err != nil {
		err = fmt.Errorf("ringwal/wal: truncating the log before batch %d: %w", index, err)
		l.repairAfterFailure(err)
		return err
	}
	l.firstIndex.Store(index)
	l.reader.forget()
	l.traceTruncateFront(index, removed)
	// TruncateFront rewrote the first segment through a new file, its mode
	// narrowed by the umask (see switchSegment).
	_ = os.Chmod(filepath.Join(l.logDir, segmentName(index)), l.opt.perms().file)
	// TruncateFront rewrites the segment holding index; if that is the
	// tail, its size changed, and it is a new file: the writer's fsync
	// descriptor must follow.
	l.tailMoved = true
	segs, _, err := logView(l.logDir)
	if err == nil && len(segs) > 0 {
		tail := segs[len(segs)-1]
		var fi os.FileInfo
		if fi, err = os.Stat(tail.path); err == nil {
			l.tailSize = int(fi.Size())
			l.tailIndex = tail.index
		}
	}
	fail("truncate-front-before-sync")
	if err == nil {
		err = syncDir(l.logDir)
	}
	return err
}

// traceTruncateFront reports the steps tidwall/wal's TruncateFront took
// (wal.go, atomicWrite and truncateFront): the entries from index on
// written to <index>.START.TEMP and fsynced, that file renamed to
// <index>.START, the segments up to the one that held index removed, and
// the START file renamed to the new first segment.
func (l *Log) traceTruncateFront(index uint64, removed []segment) {
	if !tracing() {
		return
	}
	final := filepath.Join(l.logDir, segmentName(index))
	data, err := os.ReadFile(final)
	if err != nil {
		return
	}
	start := final + startSuffix
	temp := start + tempSuffix
	trace(ioEvent{op: opCreate, path: temp})
	trace(ioEvent{op: opWrite, path: temp, data: data})
	trace(ioEvent{op: opSync, path: temp})
	trace(ioEvent{op: opRename, path: temp, to: start})
	for _, s := range removed {
		trace(ioEvent{op: opRemove, path: s.path})
	}
	trace(ioEvent{op: opRename, path: start, to: final})
}
