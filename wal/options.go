package wal

import (
	"errors"
	"io"
	"log/slog"
	"strconv"
	"time"
)

// Sentinel errors. Errors returned by this package wrap one of these (or a
// system error such as syscall.ENOSPC) with context; match with errors.Is.
var (
	// ErrCorrupt is wrapped by every decoding, framing and checksum failure.
	ErrCorrupt = errors.New("ringwal/wal: corrupt log")
	// ErrLocked is returned by Open when another Log, in this process or
	// another one, has the directory open.
	ErrLocked = errors.New("ringwal/wal: directory is locked by another opener")
	// ErrClosed is returned by every method of a closed Log except Close.
	ErrClosed = errors.New("ringwal/wal: log is closed")
	// ErrVersion is returned when the directory, a batch or a snapshot was
	// written by a newer format version than this build reads.
	ErrVersion = errors.New("ringwal/wal: written by a newer format version")
)

// Mode is the durability a producer waits for in Append.
type Mode uint8

const (
	// Write (the default) releases Append once its batch reached write(2):
	// the bytes are in the kernel, so a killed process loses nothing it was
	// told was written; a power loss may lose the last unsynced batches.
	Write Mode = iota
	// Fsync releases Append once its batch was fsynced: survives power loss.
	// Concurrent producers share one fsync (group commit).
	Fsync
	// Buffered returns from Append at once; the writer writes within
	// Options.FlushInterval. A killed process may lose the last interval.
	Buffered
)

// String returns the mode's name.
func (m Mode) String() string {
	switch m {
	case Write:
		return "write"
	case Fsync:
		return "fsync"
	case Buffered:
		return "buffered"
	}
	return "mode(" + strconv.Itoa(int(m)) + ")"
}

// Options configure Open. The zero value is sensible; defaults are filled in
// by withDefaults, the one place that knows them.
type Options struct {
	// Mode is the durability Append waits for. Default Write.
	Mode Mode
	// FlushInterval bounds how long a Buffered record waits before it is
	// written. Default 1ms. Ignored by the other modes, which write as soon
	// as the previous write finished.
	FlushInterval time.Duration
	// SegmentSize is the tidwall/wal segment size in bytes. Default 16 MiB.
	SegmentSize int
	// CompressAbove: batch bodies larger than this many bytes are
	// s2-compressed (kept raw if that does not shrink them). Default 4096;
	// negative = never.
	CompressAbove int
	// RepairCorrupt makes Open cut damage found before the tail of the log
	// (everything from the first bad batch on) instead of failing. A torn
	// tail is always cut; this is for damage that a crash cannot explain.
	RepairCorrupt bool
	// Logger receives warnings (cuts, skipped snapshots, write failures).
	// nil discards them.
	Logger *slog.Logger
	// OnBatch, if set, is called on the writer goroutine after every batch
	// (metrics). It must not block and must not call back into the Log.
	OnBatch func(BatchInfo)
}

const (
	defaultFlushInterval = time.Millisecond
	defaultSegmentSize   = 16 << 20
	defaultCompressAbove = 4096
	// bufferedFlushBytes: a Buffered batch this large is written without
	// waiting for the interval, so a fast producer does not grow one huge
	// batch.
	bufferedFlushBytes = 1 << 20
	// maxPendingBytes bounds the memory of records not yet handed to the
	// writer; past it a Buffered Append waits for its batch (back-pressure).
	// AppendNoWait never waits.
	maxPendingBytes = 4 << 20
)

func (o Options) withDefaults() Options {
	if o.FlushInterval <= 0 {
		o.FlushInterval = defaultFlushInterval
	}
	if o.SegmentSize <= 0 {
		o.SegmentSize = defaultSegmentSize
	}
	if o.CompressAbove == 0 {
		o.CompressAbove = defaultCompressAbove
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o
}

// BatchInfo describes one batch the writer handled; see Options.OnBatch.
type BatchInfo struct {
	Index      uint64        // tidwall/wal index of the batch (0 for a sync-only pass)
	Records    int           // records in the batch
	RawBytes   int           // encoded records, before compression
	Bytes      int           // framed bytes handed to write(2)
	Compressed bool          // body stored s2-compressed
	Write      time.Duration // time in write(2)
	Sync       time.Duration // time in fsync (0 if none)
	Err        error         // the write or fsync error, if the batch failed
}

// Stats is a snapshot of the log's counters; see Log.Stats.
type Stats struct {
	Segments        int       // segment files on disk
	DiskBytes       int64     // bytes of segments and snapshots on disk
	FirstIndex      uint64    // first batch index held by the log
	LastIndex       uint64    // last batch index written
	Batches         uint64    // batches written since Open
	Records         uint64    // records written since Open
	Bytes           int64     // framed bytes written since Open
	SinceCheckpoint int64     // same as Log.Size
	CheckpointIndex uint64    // index covered by the newest snapshot (0 = none)
	CheckpointTime  time.Time // when it was taken (zero if none since Open and none found)
	Failed          error     // non-nil once the log is unusable (a failed fsync or repair)
}

// RepairReport says what Open (or Verify with repair) cut from the log.
// Its zero value means nothing was cut.
type RepairReport struct {
	Bytes   int64  // bytes removed from the log
	Batches int    // cut batches whose header was intact enough to read
	Records int    // records those headers announced
	Segment string // segment file where the cut began ("" = none)
	Offset  int64  // byte offset of the cut in that file
	Index   uint64 // index of the first cut batch
	Torn    bool   // a torn tail (crash mid-write) rather than damage before it
	Reason  string // what was wrong with the first cut batch
	// BrokenFiles are the copies of the cut bytes kept in the log
	// directory before the cut, in log order: the tail of Segment from
	// Offset, then each later segment removed whole. Named
	// <segment>.<UTC time>[-n].broken, never overwritten by a later
	// repair, and never read back: delete them once inspected.
	BrokenFiles []string
	// SkippedSnapshots lists damaged snapshot files that were passed over in
	// favour of an older one the log still covers.
	SkippedSnapshots []string
	// LogReset: the log ended before the snapshot's index (e.g. after a
	// repair), so it was restarted just after the snapshot.
	LogReset bool
}

// ReplayStats describes one Replay.
type ReplayStats struct {
	SnapshotIndex   uint64        // index the snapshot covers (0 = none used)
	SnapshotRecords uint64        // records read from the snapshot
	Records         uint64        // records read from the log after the snapshot
	Batches         uint64        // log batches read
	Bytes           int64         // framed log bytes read
	Duration        time.Duration // wall time of the whole replay
}

// CheckpointInfo describes one Checkpoint.
type CheckpointInfo struct {
	Index    uint64        // last batch index the snapshot covers
	Records  uint64        // records emitted
	Bytes    int64         // snapshot file size
	Path     string        // snapshot file
	Duration time.Duration // wall time, including the log truncation
}
