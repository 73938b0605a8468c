package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// FuzzDecodeSnapshot feeds arbitrary bytes to the snapshot decoder (header,
// zstd body, records, count and checksum). Seeds: real snapshots
// (testdata/fuzz/FuzzDecodeSnapshot holds more, including the one in
// testdata/v1log). Like FuzzDecodeBatch it also decodes the input with its
// checksums recomputed, which is what exercises the decoders behind them.
// The reader (replaySnapshot, which replay and Verify use) must apply
// the records a plain record-by-record reader applies (referenceSnapshot)
// and fail where it fails.
func FuzzDecodeSnapshot(f *testing.F) {
	dir := f.TempDir()
	for _, n := range []uint64{0, 1, 50} {
		info, err := writeSnapshot(dir, 0o600, n+1, emitIDs(1, n))
		if err != nil {
			f.Fatal(err)
		}
		b, err := os.ReadFile(info.Path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	// One of every kind and field (a uniqueness mode among them).
	info, err := writeSnapshot(dir, 0o600, 100, func(emit func(*Record) error) error {
		for _, r := range sampleRecords() {
			if err := emit(&r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		f.Fatal(err)
	}
	if b, err := os.ReadFile(info.Path); err == nil {
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
			var want, got []uint64
			_, werr := referenceSnapshot(data, &r, func(r *Record) { want = append(want, r.ID) })
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			n, err := replaySnapshot(path, nil, func(r *Record) error {
				got = append(got, r.ID)
				return nil
			})
			if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			if (werr == nil) != (err == nil) {
				t.Fatalf("record by record: %v; the reader: %v", werr, err)
			}
			if !slices.Equal(want, got) || n != uint64(len(got)) {
				t.Fatalf("record by record %d records, the reader %d (says %d)", len(want), len(got), n)
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

// referenceSnapshot reads a snapshot the plainest way: the header, the
// whole body decompressed at once, then one record after another, each
// handed to fn as it is read; then the count and the checksum. It is the
// fuzz target's oracle for the readers replay uses.
func referenceSnapshot(data []byte, r *Record, fn func(*Record)) (uint64, error) {
	if len(data) < snapHeaderSize {
		return 0, corruptf("short header")
	}
	h, err := parseSnapHeader(data[:snapHeaderSize])
	if err != nil {
		return 0, err
	}
	body := data[snapHeaderSize:]
	if uint64(len(body)) > h.bodyLen {
		body = body[:h.bodyLen]
	}
	dec, err := zstd.NewReader(bytes.NewReader(body), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(4<<30))
	if err != nil {
		return 0, err
	}
	defer dec.Close()
	stream, derr := io.ReadAll(dec)
	var n uint64
	for len(stream) > 0 {
		size, k := uvarint(stream)
		if k <= 0 || size > maxRecordBody || size > uint64(len(stream)-k) {
			return n, corruptf("record %d: bad or truncated", n+1)
		}
		if err := decodeRecordBody(stream[k:k+int(size)], r); err != nil {
			return n, err
		}
		stream = stream[k+int(size):]
		n++
		fn(r)
	}
	switch {
	case derr != nil:
		return n, corruptf("zstd: %v", derr)
	case n != h.records:
		return n, corruptf("%d records, header says %d", n, h.records)
	case uint64(len(data)-snapHeaderSize) < h.bodyLen || crc32.Checksum(body, castagnoli) != h.bodyCRC:
		return n, corruptf("body checksum")
	}
	return n, nil
}
