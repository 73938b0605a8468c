package wal

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
)

// A hint is a few bytes a log's user leaves at Close for the next Open:
// what the log held then, so that the next replay can size its memory in
// one step instead of growing it record by record. It is advice, not
// data: Open hands it back only when the log ends exactly where that Close
// left it (same last batch, intact checksum), and a missing or wrong hint
// may cost the next replay time or memory, never correctness. So it is
// written without fsync (power loss may lose it, and a lost hint is a
// missing one) and a failure to write it does not fail Close.
//
// The file holds the log's last batch index (8 bytes), a CRC-32C of that
// index and the hint (4 bytes), then the hint.

const (
	hintFileName = "HINT"
	hintHeader   = 12
	// MaxHint is the largest hint CloseWithHint keeps.
	MaxHint = 4 << 10
)

// CloseWithHint is Close that also leaves hint for the next Open of this
// directory (see Hint), when the log closes cleanly and hint is at most
// MaxHint bytes. Safe for concurrent use, as Close.
func (l *Log) CloseWithHint(hint []byte) error {
	if len(hint) <= MaxHint {
		l.mu.Lock()
		l.closeHint = append([]byte{}, hint...) // never nil: Close writes it
		l.mu.Unlock()
	}
	return l.Close()
}

// Hint returns the hint the last Close left (CloseWithHint) if the log is
// still exactly as that Close left it, nil otherwise. Safe for concurrent
// use; the caller must not modify the result.
func (l *Log) Hint() []byte { return l.hint }

// writeHint stores hint as written at index. Runs in Close after the
// writer stopped, so that index is the log's final one.
func (l *Log) writeHint(hint []byte, index uint64) {
	b := make([]byte, hintHeader+len(hint))
	binary.LittleEndian.PutUint64(b, index)
	copy(b[hintHeader:], hint)
	binary.LittleEndian.PutUint32(b[8:], hintSum(b))
	if err := writeFileRenamed(filepath.Join(l.dir, hintFileName), b, false, l.opt.perms().file); err != nil {
		l.opt.Logger.Warn("ringwal/wal: could not leave a hint for the next Open", "err", err)
	}
}

// readHint returns the hint in dir if it was left at index, nil if there
// is none, it is damaged, or the log moved on since.
func readHint(dir string, index uint64) []byte {
	b, err := os.ReadFile(filepath.Join(dir, hintFileName))
	if err != nil || len(b) < hintHeader || len(b) > hintHeader+MaxHint {
		return nil
	}
	if binary.LittleEndian.Uint64(b) != index || binary.LittleEndian.Uint32(b[8:]) != hintSum(b) {
		return nil
	}
	if len(b) == hintHeader {
		return []byte{}
	}
	return b[hintHeader:]
}

// hintSum is the checksum of a hint file's index and hint.
func hintSum(b []byte) uint32 {
	return crc32.Update(crc32.Checksum(b[:8], castagnoli), castagnoli, b[hintHeader:])
}
