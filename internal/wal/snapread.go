package wal

import (
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"slices"

	"github.com/klauspost/compress/zstd"
)

// snapChunker reads a snapshot: its header, then its body's records cut
// into chunks of whole records, so that a chunk can be decoded apart from
// the others (replay decodes them on several goroutines, as it does the
// log's batches). It checks what the serial reader checked: every
// record's length, the record count the header gives, and the body
// checksum, over every byte of the body.
type snapChunker struct {
	path  string
	h     snapHeader
	body  io.Reader // the compressed body, through crc
	crc   hash.Hash32
	dec   *zstd.Decoder
	carry []byte // bytes read past the last chunk: the next records' start
	n     uint64 // records in the chunks handed out so far
	eof   bool   // dec has no more
	done  bool   // the final checks ran
	// err is what stopped the reading, returned by the call after the
	// one that handed out the records before it.
	err error
}

// snapChunkSize is about how many bytes of records a chunk holds (a
// larger record makes a chunk of its own).
const snapChunkSize = 256 << 10

// snapReadSize is the most one read from the decompressor adds to a chunk:
// a damaged record length cannot make the reader allocate more than the
// snapshot holds.
const snapReadSize = 1 << 20

// newSnapChunker reads f's snapshot header (name names f in errors) and
// starts decompressing its body. The caller closes it.
func newSnapChunker(name string, f io.Reader) (*snapChunker, error) {
	hb := make([]byte, snapHeaderSize)
	if _, err := io.ReadFull(f, hb); err != nil {
		return nil, corruptf("%s: reading header: %v", name, err)
	}
	h, err := parseSnapHeader(hb)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c := &snapChunker{path: name, h: h, crc: crc32.New(castagnoli)}
	c.body = io.TeeReader(io.LimitReader(f, int64(h.bodyLen)), c.crc)
	c.dec, err = zstd.NewReader(c.body, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(4<<30))
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (c *snapChunker) close() { c.dec.Close() }

// next returns, in buf's memory when it is large enough, the next chunk
// of whole records and how many it holds; a chunk of none (and a nil
// error) once every record was returned and the count and checksum
// checked. An error says what is wrong, and where; the records before
// it are returned first (as a chunk, the error at the next call), as a
// reader going record by record would have handed them out.
func (c *snapChunker) next(buf []byte) (chunk []byte, count int, err error) {
	if c.err != nil {
		return nil, 0, c.err
	}
	if c.done {
		return nil, 0, nil
	}
	buf = append(buf[:0], c.carry...)
	off := 0
	// stop keeps err for the next call when records come before it.
	stop := func(err error) ([]byte, int, error) {
		c.err, c.carry = err, nil
		if count == 0 {
			return nil, 0, err
		}
		c.n += uint64(count)
		return buf[:off], count, nil
	}
	for {
		for off < len(buf) && off < snapChunkSize {
			size, k := uvarint(buf[off:])
			if k < 0 || k == 0 && len(buf)-off >= maxVarintLen {
				return stop(corruptf("%s: record %d: bad length", c.path, c.n+uint64(count)+1))
			}
			if size > maxRecordBody {
				return stop(corruptf("%s: record %d claims %d bytes", c.path, c.n+uint64(count)+1, size))
			}
			if k == 0 || uint64(len(buf)-off-k) < size {
				break // the record goes on past what was read
			}
			off += k + int(size)
			count++
		}
		if off >= snapChunkSize || off > 0 && c.eof {
			break
		}
		if c.eof {
			if off < len(buf) {
				return stop(corruptf("%s: record %d: truncated, %d bytes left", c.path, c.n+1, len(buf)-off))
			}
			return nil, 0, c.finish()
		}
		if buf, err = c.read(buf, c.n+uint64(count)+1); err != nil {
			return stop(err)
		}
	}
	c.carry = append(c.carry[:0], buf[off:]...)
	c.n += uint64(count)
	return buf[:off], count, nil
}

// maxVarintLen is the longest a record length's varint can be.
const maxVarintLen = 10

// read appends up to snapReadSize decompressed bytes to buf; record is
// the number of the record they go on, for errors.
func (c *snapChunker) read(buf []byte, record uint64) ([]byte, error) {
	n := len(buf)
	if cap(buf)-n < snapReadSize/4 {
		buf = slices.Grow(buf, snapReadSize)
	}
	m, err := c.dec.Read(buf[n:min(cap(buf), n+snapReadSize)])
	buf = buf[:n+m]
	switch {
	case errors.Is(err, io.EOF):
		c.eof = true
	case err != nil:
		return buf, corruptf("%s: record %d: %v", c.path, record, err)
	}
	return buf, nil
}

// finish checks, once every record was read, the record count and the
// body checksum (over what zstd did not need too).
func (c *snapChunker) finish() error {
	c.done = true
	if c.n != c.h.records {
		return corruptf("%s: %d records, header says %d", c.path, c.n, c.h.records)
	}
	if _, err := io.Copy(io.Discard, c.body); err != nil {
		return err
	}
	if c.crc.Sum32() != c.h.bodyCRC {
		return corruptf("%s: body checksum mismatch", c.path)
	}
	return nil
}
