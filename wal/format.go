package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// formatVersion is the on-disk layout this build writes and the newest it
// reads. Bump it when the directory layout, the batch framing or the
// snapshot format changes incompatibly; older versions must refuse the
// directory (ErrVersion) rather than misread it.
//
// Batch format version 2 (batch.go) did not need a bump: each batch
// carries its own version behind a checksum that older builds verify, so
// they stop with ErrVersion at the first version 2 batch and never take it
// for damage.
const formatVersion = 1

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

// ensureFormat checks dir/FORMAT and writes it (durably, mode perm) if
// missing.
func ensureFormat(dir string, perm os.FileMode) error {
	v, err := readFormat(dir)
	if err != nil || v != 0 {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, formatFileName), []byte(formatPrefix+strconv.Itoa(formatVersion)+"\n"), perm)
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
