package wal

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
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
	// ErrUnsafeDir is returned by Open when the directory (or its log
	// subdirectory) is writable by group or others, or owned by another
	// user: whoever can write there can plant files and links the log
	// would read or write through. The error says how to fix it.
	ErrUnsafeDir = errors.New("ringwal/wal: unsafe directory permissions")
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

// RecoveryMode is what Open does with a damaged log, as RocksDB's WAL
// recovery modes. Whatever the mode, what Open cuts is first kept as
// .broken files beside the segments and reported (Log.Repair, a warning on
// Options.Logger); a batch written by a newer version is never cut
// (ErrVersion).
//
// What each mode can lose is about the log only; a batch is the unit (a
// record is never half kept).
type RecoveryMode uint8

const (
	// PointInTime (the default) cuts the newest segment's tail at its first
	// bad batch when a crash or power loss explains the damage: the batch
	// was cut short, nothing valid follows it, or every valid batch after
	// it was written before it was fsynced (each batch records how far
	// fsync had reached; see batch.go). It refuses, with an error wrapping
	// ErrCorrupt, damage in an older segment, damage followed by a batch
	// that claims the damaged one fsynced, and damage followed by a batch
	// of the old format version 1 (which records nothing about fsync).
	//
	// Loses: after a killed process, nothing that reached write(2) (Write
	// and Fsync modes); after a power loss, only batches never fsynced
	// (in Fsync mode none that an Append returned for; in Write and
	// Buffered modes whatever was written since the last Checkpoint, Sync
	// or Close). Bit rot inside the last batches written before the final
	// fsync cannot be told from a torn tail and is cut too.
	PointInTime RecoveryMode = iota
	// AbsoluteConsistency refuses any damage, even a torn tail a crash
	// left: Open fails with an error wrapping ErrCorrupt until someone
	// repairs the log (ringwal wal verify --repair) or reopens with another
	// mode. It loses nothing by itself, but a crash in the middle of a write
	// (possible in any mode on power loss) then stops the engine from
	// starting.
	AbsoluteConsistency
	// SkipToPointInTime cuts at the first bad batch wherever it is and
	// whatever follows: the log keeps the valid prefix before it, and
	// loses every batch after the damage, in its segment and in every later
	// segment, fsynced or not, acknowledged or not. For getting a damaged
	// disk's log running again when a prefix is worth more than nothing;
	// the .broken copies keep what was cut.
	SkipToPointInTime
)

// String returns the mode's name.
func (m RecoveryMode) String() string {
	switch m {
	case PointInTime:
		return "point-in-time"
	case AbsoluteConsistency:
		return "absolute-consistency"
	case SkipToPointInTime:
		return "skip-to-point-in-time"
	}
	return "recovery(" + strconv.Itoa(int(m)) + ")"
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
	// SegmentSize is the tidwall/wal segment size in bytes. Default 1 MiB:
	// tidwall/wal keeps the tail segment in memory as one slice, which
	// grows by copying, and fsyncs a segment when it switches to the next,
	// both on the writer; with 16 MiB segments those stalls were 7–50 ms
	// (W5: Write mode's e2e p99 at 100k msgs/s 20–50 ms; 1 MiB: ~1 ms, and
	// Fsync mode's 7–70 ms at 100k msgs/s: 2–5 ms), with no loss of W2
	// throughput and a faster W4 restart (more, smaller files to read).
	SegmentSize int
	// CompressAbove: batch bodies larger than this many bytes are
	// s2-compressed (kept raw if that does not shrink them). Default 4096;
	// negative = never.
	CompressAbove int
	// Recovery is what Open does with a damaged log; see RecoveryMode.
	// Default PointInTime.
	Recovery RecoveryMode
	// RepairCorrupt is the older spelling of Recovery = SkipToPointInTime,
	// kept for existing callers: when set, Open cuts damage found before
	// the tail of the log (everything from the first bad batch on) instead
	// of failing, whatever Recovery says.
	RepairCorrupt bool
	// Logger receives warnings (cuts, skipped snapshots, write failures).
	// nil discards them.
	Logger *slog.Logger
	// OnBatch, if set, is called after every batch written and every fsync
	// (metrics), one call at a time: on the writer goroutine, or on an
	// appender that writes in its place while it fsyncs. A batch written
	// and then fsynced is reported twice: its write before the fsync, then
	// the fsync alone (Records 0). It must not block and must not call back
	// into the Log.
	OnBatch func(BatchInfo)
	// GroupReadable lets the directory's group read the log: files are
	// created 0640 and directories 0750 instead of 0600 and 0700. The
	// log's files hold every message's payload, so by default only the
	// owner may read them. Either way the modes are set exactly, whatever
	// the process umask, and Open sets them on the directories and the
	// files it finds (tightening those an older version left wider).
	GroupReadable bool
	// Fence, if set, is asked before a batch is written and again before
	// its waiters are released: an error refuses the batch (not written,
	// or written but not acknowledged), and its appends fail with an error
	// wrapping ErrFenced and Fence's. It runs on the writer goroutine (or
	// a stand-in), once or twice per batch, so it must be cheap (an atomic
	// load) and must not block or call into the Log. Nil: no check.
	Fence func() error
}

// perms are the modes of what the log creates.
type perms struct{ file, dir os.FileMode }

// defaultPerms: owner only (Options.GroupReadable false).
var defaultPerms = perms{file: 0o600, dir: 0o700}

func (o Options) perms() perms {
	if o.GroupReadable {
		return perms{file: 0o640, dir: 0o750}
	}
	return defaultPerms
}

const (
	defaultFlushInterval = time.Millisecond
	defaultSegmentSize   = 1 << 20
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
	if o.RepairCorrupt {
		o.Recovery = SkipToPointInTime
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
	// Torn: a crash or power loss explains the cut (a torn tail, or a
	// tail never fsynced); false means damage a crash cannot explain, cut
	// only because Options.Recovery is SkipToPointInTime.
	Torn   bool
	Reason string // what was wrong with the first cut batch
	// Class names the kind of damage: "torn final batch" (cut short),
	// "torn tail" (nothing valid after it), "unsynced tail" (valid batches
	// after it, none of them claims it fsynced), or "damage".
	Class string
	// ValidAfter counts the valid batches found after the first bad one in
	// its segment (they are cut with it); SyncedAfter says one of them
	// claims the bad batch was fsynced, or makes no claim (format version
	// 1), so the damage is not a power-loss tail.
	ValidAfter  int
	SyncedAfter bool
	// Mode is the recovery mode Open (or Verify) ran with.
	Mode RecoveryMode
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

// String describes the cut in one line for logs and operators, "" if
// nothing was cut.
func (r RepairReport) String() string {
	if r.Segment == "" && r.Bytes == 0 {
		return ""
	}
	s := fmt.Sprintf("%s at %s offset %d (batch %d): %s; cut %d bytes (%d batches, %d records",
		r.Class, r.Segment, r.Offset, r.Index, r.Reason, r.Bytes, r.Batches, r.Records)
	if r.ValidAfter > 0 {
		s += fmt.Sprintf(", %d valid after the damage", r.ValidAfter)
	}
	s += ")"
	if len(r.BrokenFiles) > 0 {
		s += fmt.Sprintf("; kept in %d .broken file(s)", len(r.BrokenFiles))
	}
	return s
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
