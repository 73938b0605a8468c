package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// dirLock is an exclusive hold on a log directory: flock(2) on dir/LOCK
// keeps other processes out, and a process-wide set keeps out a second Open
// in this process. (flock locks belong to the open file description, so a
// second open(2) in the same process would conflict too; the set makes that
// explicit and does not depend on it, and it also covers filesystems where
// flock is emulated with per-process POSIX locks.)
type dirLock struct {
	dir string
	f   *os.File
}

var (
	openDirsMu sync.Mutex
	openDirs   = map[string]bool{}
)

const lockFileName = "LOCK"

// lockDir takes the lock on dir, which must exist; a new lock file gets
// mode perm. It fails with an error wrapping ErrLocked if anyone holds it.
func lockDir(dir string, perm os.FileMode) (*dirLock, error) {
	key, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	openDirsMu.Lock()
	defer openDirsMu.Unlock()
	if openDirs[key] {
		return nil, fmt.Errorf("%s (open in this process): %w", dir, ErrLocked)
	}
	path := filepath.Join(dir, lockFileName)
	_, statErr := os.Lstat(path)
	f, err := createFile(path, os.O_CREATE|os.O_RDWR, perm)
	if err != nil {
		return nil, err
	}
	if errors.Is(statErr, os.ErrNotExist) {
		// A new lock file's entry, like every other, is made durable, so
		// that the directory after a power loss is one this package made.
		if err := syncDir(dir); err != nil {
			f.Close()
			return nil, err
		}
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", dir, ErrLocked)
		}
		return nil, fmt.Errorf("ringwal/wal: flock %s: %w", f.Name(), err)
	}
	openDirs[key] = true
	return &dirLock{dir: key, f: f}, nil
}

// release drops the lock; closing the file releases the flock.
func (l *dirLock) release() error {
	if l == nil {
		return nil
	}
	openDirsMu.Lock()
	delete(openDirs, l.dir)
	openDirsMu.Unlock()
	return l.f.Close()
}
