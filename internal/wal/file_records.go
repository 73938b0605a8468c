package wal

import (
	"bufio"
	"bytes"
	"encoding/binary"
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
		if err := forEachRecord(chunk, uint32(count), first+1, &rec, fn); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
}

// segmentRecords reads a segment's entries (tidwall/wal's framing: a
// uvarint length, then the entry), each a batch. An entry is read into
// memory as its bytes arrive, so a damaged length cannot make it allocate
// more than r holds.
func segmentRecords(name string, r io.Reader, fn func(*Record) error) error {
	br := &countingReader{r: bufio.NewReader(r)}
	var entry bytes.Buffer
	var scratch []byte
	var rec Record
	for {
		off := br.n
		size, err := binary.ReadUvarint(br)
		switch {
		case errors.Is(err, io.EOF):
			return nil // the last entry ended the file (within one, ReadUvarint says ErrUnexpectedEOF)
		case err != nil && br.err != nil:
			return fmt.Errorf("%s offset %d: entry length: %w", name, off, err)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return corruptf("%s offset %d: entry length: truncated varint", name, off)
		case err != nil:
			return corruptf("%s offset %d: entry length: overlong varint", name, off)
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
		if scratch, err = decodeBatch(entry.Bytes(), scratch, &rec, fn); err != nil {
			return fmt.Errorf("%s offset %d: %w", name, off, err)
		}
	}
}

// countingReader counts the bytes read from r, for the offsets that
// errors name, and keeps r's first error other than io.EOF, so that r's
// failure is not taken for damage.
type countingReader struct {
	r   *bufio.Reader
	n   int64
	err error
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, c.keep(err)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, c.keep(err)
}

func (c *countingReader) keep(err error) error {
	if err != nil && err != io.EOF && c.err == nil {
		c.err = err
	}
	return err
}
