package wal

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// FileRecords decodes the records of one file of a data directory read
// from r and calls fn for each, in order: a snapshot (its header, records,
// record count and checksum) or a log segment (each batch's framing,
// header, checksum and records), named as BackupFileKind names a backup's
// files; any other name (FORMAT) holds no records and is not read. It is
// for checking a file that is not in a log directory yet, such as one a
// restore is reading from a backup stream, as replay would decode it.
// Damage is an error wrapping ErrCorrupt that names the file and where in
// it (a batch written by a newer version, ErrVersion); an error of fn is
// returned wrapped the same way, and stops the decoding; so does one of r.
// It reads r only as far as it decodes: the caller reads the rest, if it
// wants every byte. fn's *Record is reused: its Payload and Headers are
// valid only during the call.
func FileRecords(name string, r io.Reader, fn func(*Record) error) error {
	switch kind, _ := BackupFileKind(name); kind {
	case "snapshot":
		return snapshotRecords(name, r, fn)
	case "segment":
		return segmentRecords(name, r, fn)
	}
	return nil
}

func snapshotRecords(name string, r io.Reader, fn func(*Record) error) error {
	c, err := newSnapChunker(name, r)
	if err != nil {
		return err
	}
	defer c.close()
	var rec Record
	var buf []byte
	for {
		first := c.n
		chunk, count, err := c.next(buf)
		if err != nil {
			return err
		}
		if count == 0 {
			return nil
		}
		buf = chunk
		for i := range count {
			n, err := DecodeRecord(chunk, &rec)
			if err != nil {
				return fmt.Errorf("%s: record %d: %w", name, first+uint64(i)+1, err)
			}
			if err := fn(&rec); err != nil {
				return fmt.Errorf("%s: record %d: %w", name, first+uint64(i)+1, err)
			}
			chunk = chunk[n:]
		}
	}
}

// segmentRecords reads a segment's entries (tidwall/wal's framing: a
// uvarint length, then the entry), each a batch. An entry is read into
// memory as its bytes arrive, so a damaged length cannot make it allocate
// more than r holds.
func segmentRecords(name string, r io.Reader, fn func(*Record) error) error {
	br := bufio.NewReader(r)
	var entry bytes.Buffer
	var scratch []byte
	var rec Record
	for off := int64(0); ; {
		size, k, err := readUvarint(br)
		switch {
		case k == 0 && errors.Is(err, io.EOF):
			return nil // the last entry ended the file
		case err != nil:
			return fmt.Errorf("%s offset %d: entry length: %w", name, off, err)
		case size > maxBatchBody+batchHeaderSize:
			return corruptf("%s offset %d: entry of %d bytes (at most %d)", name, off, size, maxBatchBody+batchHeaderSize)
		}
		entry.Reset()
		if n, err := io.CopyN(&entry, br, int64(size)); err != nil {
			if errors.Is(err, io.EOF) {
				return corruptf("%s offset %d: entry of %d bytes ends after %d", name, off, size, n)
			}
			return fmt.Errorf("%s offset %d: %w", name, off, err)
		}
		e := entry.Bytes()
		h, err := checkBatch(e)
		if err == nil {
			var body []byte
			if body, scratch, err = batchBody(e, h, scratch); err == nil {
				err = forEachRecord(body, h.count, &rec, fn)
			}
		}
		if err != nil {
			return fmt.Errorf("%s offset %d: %w", name, off, err)
		}
		off += int64(k) + int64(size)
	}
}

// readUvarint reads a uvarint as uvarint decodes one, and how many bytes
// it took: r's end before any byte is io.EOF, within one or an overlong
// one damage (ErrCorrupt), any other error r's.
func readUvarint(r io.ByteReader) (v uint64, n int, err error) {
	var shift uint
	for n < maxVarintLen {
		c, err := r.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) && n > 0 {
				return 0, n, corruptf("truncated varint")
			}
			return 0, n, err
		}
		n++
		if n == maxVarintLen && c > 1 {
			break
		}
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, n, nil
		}
		shift += 7
	}
	return 0, n, corruptf("overlong varint")
}
