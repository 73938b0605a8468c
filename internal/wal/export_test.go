package wal

import (
	"path/filepath"
	"testing"
)

// Test-only exports for the external tests (package wal_test).

// DurableIndexes returns the durable index each valid batch of dir's log
// records, in log order (0 for a version 1 batch).
func DurableIndexes(t testing.TB, dir string) []uint64 {
	t.Helper()
	segs, _, err := logView(filepath.Join(dir, logDirName))
	if err != nil {
		t.Fatal(err)
	}
	var out []uint64
	if _, err := scanLog(segs, func(_ uint64, _ []byte, h batchHeader) error {
		out = append(out, h.durable)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// ValidBatchesAfter reports how many valid batches a repair scan finds in
// data from offset from on, and whether one of them makes no claim about
// fsync (format version 1).
func ValidBatchesAfter(data []byte, from int) (n int, unknown bool) {
	a := validBatchesAfter(data, from)
	return a.n, a.unknown
}

// SetFailpoint installs f as the failpoint hook (nil removes it).
func SetFailpoint(f func(name string)) {
	if f == nil {
		failpoint.Store(nil)
		return
	}
	failpoint.Store(&f)
}
