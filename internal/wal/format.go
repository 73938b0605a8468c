package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// formatVersion is the newest on-disk layout this build reads and writes.
// Bump it when the directory layout, the batch framing, the snapshot
// format or the records change incompatibly; older versions must refuse
// the directory (ErrVersion) rather than misread it.
//
// Batch format version 2 (batch.go) did not need a bump: each batch
// carries its own version behind a checksum that older builds verify, so
// they stop with ErrVersion at the first version 2 batch and never take it
// for damage.
//
// Version 2 is named queues (issue #26): record kinds and fields a version
// 1 build cannot decode (record_queue.go). A record inside a batch has no
// version of its own, and a version 1 build that met one would take it for
// damage and, in a torn tail, cut it. But a log that never uses a named
// queue is version 1's byte for byte, and stays readable by such a build:
// so a new directory is still created as version 1 (formatCreated), and
// the FORMAT file is raised to 2 only before the first record that needs
// it (Log.RequireFormat), after which a version 1 build refuses the
// directory with ErrVersion. A version is never lowered.
const formatVersion = 2

// formatCreated is the version a new directory's FORMAT file says.
const formatCreated = 1

const (
	formatFileName = "FORMAT"
	formatPrefix   = "ringwal-wal "
	logDirName     = "log"
)

// readFormat returns the version recorded in dir/FORMAT, 0 if the file does
// not exist. A version newer than this build's is an error wrapping
// ErrVersion that names both versions.
func readFormat(dir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, formatFileName))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if !strings.HasPrefix(s, formatPrefix) {
		return 0, fmt.Errorf("%s: unrecognised content %q: %w", filepath.Join(dir, formatFileName), s, ErrCorrupt)
	}
	v, err := strconv.Atoi(strings.TrimPrefix(s, formatPrefix))
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("%s: bad version %q: %w", filepath.Join(dir, formatFileName), s, ErrCorrupt)
	}
	if v > formatVersion {
		return v, fmt.Errorf("%s was written by format version %d, this build reads versions up to %d: %w", dir, v, formatVersion, ErrVersion)
	}
	return v, nil
}

// ensureFormat checks dir/FORMAT and writes it (durably, mode perm, as
// formatCreated) if missing. It returns the version the file says.
func ensureFormat(dir string, perm os.FileMode) (int, error) {
	v, err := readFormat(dir)
	if err != nil || v != 0 {
		return v, err
	}
	if err := writeFormat(dir, formatCreated, perm); err != nil {
		return 0, err
	}
	return formatCreated, nil
}

// writeFormat makes dir/FORMAT say version v, durably: through a
// temporary file, fsynced and renamed, then a directory fsync.
func writeFormat(dir string, v int, perm os.FileMode) error {
	return writeFileAtomic(filepath.Join(dir, formatFileName), []byte(formatPrefix+strconv.Itoa(v)+"\n"), perm)
}

// RequireFormat makes sure the directory's FORMAT file says at least
// version v (1 to the newest this build writes, 2) before the caller
// appends a record that needs v: the first record of a named queue
// (Record.Queue, Record.Copies or a queue kind) needs 2, and Append and
// Checkpoint refuse one until the directory says so. A directory that
// says less is raised to v once, durably (a temporary file, fsynced and
// renamed, and the directory fsynced), after which a build that reads
// only older versions refuses it with ErrVersion instead of meeting
// records it cannot decode. Once the directory says v or more it returns
// at once, without I/O or locks (even after Close), so the caller may call
// it before every such record. It never lowers the version; on a closed
// log that must be raised it returns ErrClosed.
//
// The rewrite runs on the writer between batches: when RequireFormat
// returns nil, every record appended after it goes to a batch written
// after the new FORMAT file is durable. If the rewrite fails, the
// directory still says the old version (perhaps not durably the new one),
// the error is returned and a later call tries again; the log stays
// usable. Safe for concurrent use: concurrent calls rewrite the file
// once, and all of them return after it is durable.
func (l *Log) RequireFormat(v int) error {
	if v < 1 || v > formatVersion {
		return fmt.Errorf("ringwal/wal: RequireFormat(%d): this build writes format versions 1 to %d", v, formatVersion)
	}
	if int(l.format.Load()) >= v {
		return nil
	}
	return l.control(func() error {
		// On the writer: calls are serialised here, and the batches
		// appended after the caller's return are written after this.
		if int(l.format.Load()) >= v {
			return nil
		}
		if err := writeFormat(l.dir, v, l.opt.perms().file); err != nil {
			return fmt.Errorf("ringwal/wal: raising %s to format version %d: %w", filepath.Join(l.dir, formatFileName), v, err)
		}
		l.format.Store(int32(v))
		l.opt.Logger.Info("ringwal/wal: directory raised to a newer format version; older builds will refuse it",
			"dir", l.dir, "version", v)
		return nil
	})
}

// checkAppend returns an error if r must not be appended (nothing of its
// batch is then written): its kind is unknown, it holds queue fields the
// decoder would refuse (checkQueues), or it uses a named queue before the
// directory says format version 2 (RequireFormat).
func (l *Log) checkAppend(r *Record) error {
	if !r.Kind.Valid() {
		return fmt.Errorf("record of unknown kind %d", r.Kind)
	}
	if !usesQueues(r) {
		return nil
	}
	if err := checkQueues(r); err != nil {
		return err
	}
	return l.checkFormat(r)
}

// checkFormat returns an error if r needs a newer format version than the
// directory says (see RequireFormat).
func (l *Log) checkFormat(r *Record) error {
	if need := formatOf(r); need > int(l.format.Load()) {
		return fmt.Errorf("%s record: uses named queues or uniqueness, which need format version %d; the directory says %d (call RequireFormat first)",
			r.Kind, need, l.format.Load())
	}
	return nil
}

// writeFileAtomic writes data to path through a temporary file, fsync and
// rename, then fsyncs the directory.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	return writeFileRenamed(path, data, true, perm)
}

// writeFileRenamed writes data to path (mode perm) through a temporary
// file and a rename, so that path is never seen half written; with
// durable it fsyncs the file before the rename and the directory after
// it.
func writeFileRenamed(path string, data []byte, durable bool, perm os.FileMode) error {
	tmp := path + ".tmp"
	f, err := createTemp(tmp, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	trace(ioEvent{op: opWrite, path: tmp, data: append([]byte(nil), data...)})
	if durable {
		if err := syncFile(f); err != nil {
			f.Close()
			os.Remove(tmp)
			return err
		}
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := renameFile(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	if !durable {
		return nil
	}
	return syncDir(filepath.Dir(path))
}
