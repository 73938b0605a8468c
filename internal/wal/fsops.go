package wal

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"

	"github.com/ringwal/ringwal/internal/dirsync"
)

// Every change this package makes to a directory (create, rename, remove,
// mkdir) and every fsync goes through the helpers below, so that two test
// hooks see all of them: ioTrace, which records the file-system steps in
// order (a test checks that each directory change is followed by an fsync
// of its parent, and builds the disk images a power loss could leave), and
// failpoint, which lets a test stop the process at a named point. Both are
// nil outside tests and cost one atomic load then.
//
// tidwall/wal writes segment data, switches segments and truncates the
// front of the log itself; the writer reports those steps as tidwall/wal
// performs them (segment.go documents what it relies on), right after
// each call returns.

// ioOp is one kind of file-system step.
type ioOp uint8

const (
	opCreate   ioOp = iota + 1 // a new directory entry for a file: path
	opMkdir                    // a new directory: path
	opWrite                    // data written at off in path (page cache, not yet durable)
	opTruncate                 // path cut to off bytes
	opSync                     // fsync of the file path
	opRename                   // path renamed to to
	opRemove                   // path removed
	opSyncDir                  // fsync of the directory path: its entries are durable
)

func (o ioOp) String() string {
	return [...]string{"?", "create", "mkdir", "write", "truncate", "sync", "rename", "remove", "syncdir"}[o]
}

// ioEvent is one step; see ioOp for which fields each uses.
type ioEvent struct {
	op   ioOp
	path string
	to   string
	off  int64
	data []byte // owned by the hook once passed (a copy)
	// prefix (opSync): the fsync covers the first off bytes only. The
	// writer's fsync runs beside writes made in its place (fsync.go), so
	// it is known to cover what was written before it began, no more.
	prefix bool
}

// ioTrace, when set (tests only), is called synchronously with each step
// after it succeeded, from whichever goroutine took it (the writer for
// appends, the caller for Open and Checkpoint).
var ioTrace atomic.Pointer[func(ioEvent)]

// tracing reports whether a trace hook is set (callers skip building
// events, which may read files, otherwise).
func tracing() bool { return ioTrace.Load() != nil }

func trace(ev ioEvent) {
	if h := ioTrace.Load(); h != nil {
		(*h)(ev)
	}
}

// traceWholeFile reports path's whole current content as written at 0
// (for files written through buffers and then fsynced).
func traceWholeFile(path string) {
	if !tracing() {
		return
	}
	if data, err := os.ReadFile(path); err == nil {
		trace(ioEvent{op: opWrite, path: path, data: data})
	}
}

// failpoint, when set (tests only), is called at each named point; a test
// crashes the process there (or panics) to check what recovery makes of
// the disk at that moment. The names:
//
//	checkpoint-before-rename   snapshot written and fsynced, not yet renamed
//	checkpoint-before-truncate snapshot renamed and durable, log not yet truncated
//	truncate-front-before-sync tidwall/wal truncated the log front, directory not yet fsynced
//	segment-switch             a batch write made tidwall/wal switch to a new segment
//	log-fsync                  the writer is about to fsync the tail segment, its
//	                           batch written (a test may block here: appenders
//	                           then write in its place)
var failpoint atomic.Pointer[func(name string)]

func fail(name string) {
	if f := failpoint.Load(); f != nil {
		(*f)(name)
	}
}

// createFile opens path with flag (which includes os.O_CREATE) and reports
// a new directory entry if there was none. The caller fsyncs the parent
// directory once the file is complete. It never follows a symbolic link
// at path (O_NOFOLLOW: the open fails), and the file's mode is perm
// exactly, whatever the umask.
func createFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	_, statErr := os.Lstat(path)
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW, perm)
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return nil, err
	}
	if errors.Is(statErr, os.ErrNotExist) {
		trace(ioEvent{op: opCreate, path: path})
	} else if flag&os.O_TRUNC != 0 {
		trace(ioEvent{op: opTruncate, path: path})
	}
	return f, nil
}

// createTemp creates path, a temporary file to be renamed into place, for
// reading and writing with mode perm. Whatever a crash (or anyone else)
// left at that name, a symbolic link included, is removed first, and the
// new file is created with O_EXCL: the open never follows a link or
// writes into a file it did not create.
func createTemp(path string, perm os.FileMode) (*os.File, error) {
	if _, err := removeFile(path); err != nil {
		return nil, err
	}
	return createFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, perm)
}

// mkdirAll creates dir and any missing parents with mode perm (exactly,
// whatever the umask), and fsyncs the parent of each directory it
// created, so the new entries survive power loss.
func mkdirAll(dir string, perm os.FileMode) error {
	var created []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || !errors.Is(err, os.ErrNotExist) {
			break
		}
		created = append(created, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := os.MkdirAll(dir, perm); err != nil {
		return err
	}
	// Outermost first: a parent's entry must be durable before a child's
	// matters.
	for i := len(created) - 1; i >= 0; i-- {
		if err := os.Chmod(created[i], perm); err != nil {
			return err
		}
		trace(ioEvent{op: opMkdir, path: created[i]})
		if err := syncDir(filepath.Dir(created[i])); err != nil {
			return err
		}
	}
	return nil
}

// renameFile renames; the caller fsyncs the directory.
func renameFile(from, to string) error {
	if err := os.Rename(from, to); err != nil {
		return err
	}
	trace(ioEvent{op: opRename, path: from, to: to})
	return nil
}

// removeFile removes path; a missing file is not an error. The caller
// fsyncs the directory. It reports whether it removed something.
func removeFile(path string) (bool, error) {
	err := os.Remove(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	trace(ioEvent{op: opRemove, path: path})
	return true, nil
}

// syncFile fsyncs an open file.
func syncFile(f *os.File) error {
	if err := f.Sync(); err != nil {
		return err
	}
	trace(ioEvent{op: opSync, path: f.Name()})
	return nil
}

// openToSync opens an existing segment for fsync or writeback only, with
// write access (some systems fsync only a descriptor open for writing;
// nothing is written through it) and never through a symlink.
func openToSync(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|syscall.O_NOFOLLOW, 0)
}

// syncDir fsyncs a directory so that file creations, renames and removals
// in it survive power loss.
func syncDir(dir string) error {
	err := dirsync.Sync(dir)
	if err == nil {
		trace(ioEvent{op: opSyncDir, path: dir})
	}
	return err
}
