package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// FuzzDecodeSnapshot feeds arbitrary bytes to the snapshot decoder (header,
// zstd body, records, count and checksum). Seeds: real snapshots
// (testdata/fuzz/FuzzDecodeSnapshot holds more, including the one in
// testdata/v1log). Like FuzzDecodeBatch it also decodes the input with its
// checksums recomputed, which is what exercises the decoders behind them.
// Replay's parallel reader (replaySnapshot) must apply the same records
// and fail where the serial one fails.
func FuzzDecodeSnapshot(f *testing.F) {
	dir := f.TempDir()
	for _, n := range []uint64{0, 1, 50} {
		info, err := writeSnapshot(dir, n+1, emitIDs(1, n))
		if err != nil {
			f.Fatal(err)
		}
		b, err := os.ReadFile(info.Path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	if b, err := os.ReadFile(filepath.Join("testdata", "v1log", snapName(30))); err == nil {
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte(snapMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Record
		path := filepath.Join(t.TempDir(), "snap")
		check := func(data []byte) {
			var serial, parallel []uint64
			_, err := decodeSnapshot("fuzz", bytes.NewReader(data), &r, func(r *Record) error {
				serial = append(serial, r.ID)
				return nil
			})
			if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			if werr := os.WriteFile(path, data, 0o644); werr != nil {
				t.Fatal(werr)
			}
			n, perr := replaySnapshot(path, nil, func(r *Record) error {
				parallel = append(parallel, r.ID)
				return nil
			})
			if (err == nil) != (perr == nil) {
				t.Fatalf("serial reader: %v; replay's: %v", err, perr)
			}
			if !slices.Equal(serial, parallel) || n != uint64(len(parallel)) && perr == nil {
				t.Fatalf("serial reader applied %d records, replay's %d (says %d)", len(serial), len(parallel), n)
			}
		}
		check(b)
		if len(b) >= snapHeaderSize {
			fixed := append([]byte(nil), b...)
			binary.LittleEndian.PutUint64(fixed[24:], uint64(len(fixed)-snapHeaderSize))
			binary.LittleEndian.PutUint32(fixed[40:], crc32.Checksum(fixed[snapHeaderSize:], castagnoli))
			binary.LittleEndian.PutUint32(fixed[44:], crc32.Checksum(fixed[:44], castagnoli))
			check(fixed)
		}
	})
}
