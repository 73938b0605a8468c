// Package wal is ringwal's write-ahead log: it makes every engine mutation
// durable before the engine acknowledges it, and gives it back in order
// after a restart.
//
// It owns:
//
//   - the record codec (record.go): one compact binary form (uvarints and
//     varints, no reflection) for every engine mutation, encoded into the
//     caller's buffer without allocating, decoded with every length checked;
//   - batch framing (batch.go): one github.com/tidwall/wal entry per
//     group-commit batch, with a version, a record count, flags, CRC32C
//     (Castagnoli) checksums, the stored body length, the last batch known
//     fsynced when it was written, and an s2-compressed body above a size
//     threshold; Close appends an empty batch recording its final fsync;
//   - the writer (writer.go): one goroutine that owns the tidwall/wal log
//     (opened with NoSync, so the writer decides when to fsync), collects
//     whatever producers handed over while the previous write ran (group
//     commit), and releases them as the durability Mode promises; while it
//     fsyncs (through a descriptor of its own), what is appended is
//     written in its place by an appender or, after a quarter of an fsync, a timer
//     (fsync.go), and waits for the next fsync, which one covers all of it;
//     in Write and Buffered modes a goroutine of its own starts the
//     kernel's writeback of the tail as it grows (writeback.go), so that
//     the fsync tidwall/wal does at each segment switch finds little to
//     write;
//   - replay (replay.go): the snapshot, then the log's batches decoded on up
//     to four goroutines at once (Replay), each record handed to the
//     caller's hook on the goroutine that decoded it (ReplayPrepared) and
//     then to the caller's function, in log order, on the caller's;
//   - checkpoints (checkpoint.go, snapshot.go): a zstd-compressed snapshot of the caller's
//     live state, written to a temporary file, fsynced and renamed, after
//     which the log before it is truncated so disk use follows live data;
//   - reads by location (locate.go): every append's Commit names, once its
//     batch is written, where its record went (Location: segment file,
//     entry offset, offset in the batch body), and ReadAt reads that one
//     record back with pread, for a caller that keeps a payload only in
//     the log;
//   - backups (backup.go): Backup lists and opens, on the writer between
//     two batches, the files a consistent copy needs (FORMAT, the newest
//     snapshot, every segment, the tail up to its last batch), for the
//     caller to copy while appends and checkpoints go on;
//   - repair (repair.go, over the segment listing of segment.go): the
//     first bad batch is classified (torn final batch, torn tail, a tail
//     never fsynced, or damage a crash cannot explain) and cut or refused
//     as Options.Recovery says (RecoveryMode); what is cut is first kept
//     as .broken files and reported;
//   - what it relies on in tidwall/wal's private behaviour (segment.go,
//     checked by tidwall_compat_test.go);
//   - the directory lock (lock.go) and the on-disk format version
//     (format.go: 1, raised to 2 by RequireFormat before the first
//     record of a named queue, record_queue.go);
//   - every directory change and fsync (fsops.go): a create, rename or
//     remove is followed by an fsync of its parent directory before the
//     operation that made it returns (a new data directory and log/
//     included), and two test-only hooks see them: a trace of each step
//     (the power-loss test builds disk images from it) and named
//     failpoints (the crash test kills the process there);
//   - offline tools for the CLI (verify.go): Verify and Dump.
//
// One record field has a meaning the log defines: a snapshot opens with a
// KindCheckpoint record (CheckpointRecord) whose Attempt field carries the
// engine's record-slab size as log2 of its slot count (Record.SlabBits), so
// that a restart allocates a slab large enough for every live record
// before replaying them.
//
// It does not own what records mean: the engine decides which records to
// write, makes each one absolute and idempotent (so a snapshot a little newer
// than its index is harmless), and rebuilds its state from Replay. It knows
// nothing of priorities, leases or dead letters beyond carrying their fields.
//
// Directory layout:
//
//	dir/LOCK                    flock(2) target, held while a Log is open
//	dir/FORMAT                  on-disk format version
//	dir/log/<20-digit index>    tidwall/wal segments, one entry per batch
//	dir/log/<segment>.<UTC time>[-n].broken  bytes a repair cut, kept for
//	                            the operator (see RepairReport.BrokenFiles)
//	dir/snap-<20-digit index>.zst  newest checkpoint (older ones are deleted)
//	dir/HINT                    what the caller's last Close said the log
//	                            held (CloseWithHint); advice for the next
//	                            Open, ignored once the log moved on
//
// Exported surface: Log, Open, Options, Mode, Stats and the replay and
// checkpoint types are the engine's log; Verify, Dump and their reports,
// Record, Kind, AppendRecord, DecodeRecord and ErrCorrupt are also what
// cmd/ringwal's wal verify and wal dump read a stopped directory with;
// RecoveryMode is public through ringwal.RecoveryMode. Applications use
// the root package's Options, not this package.
package wal
