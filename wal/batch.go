package wal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/klauspost/compress/s2"
)

// A batch is the payload of one tidwall/wal entry: everything one
// group-commit pass wrote. Layout (little endian):
//
//	[0]      format version (batchVersion)
//	[1]      flags (flagS2: the body is one s2 block)
//	[2:6]    record count
//	[6:10]   body length before compression
//	[10:14]  CRC32C of the stored body
//	[14:18]  CRC32C of bytes [0:14]
//	[18:]    body: the records as AppendRecord wrote them, back to back
//
// The header has its own checksum so that a scan looking for a valid batch
// after damage (to tell a torn tail from damage before it) can reject
// garbage after 18 bytes instead of checksumming megabytes.
const (
	batchVersion    = 1
	batchHeaderSize = 18
	flagS2          = 1 << 0
	knownFlags      = flagS2
	// maxBatchBody bounds a batch body; a header claiming more is damage.
	maxBatchBody = 1 << 30
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type batchHeader struct {
	version uint8
	flags   uint8
	count   uint32
	rawLen  uint32
	bodyCRC uint32
}

// decodeBatchHeader checks the first batchHeaderSize bytes of an entry: its
// own checksum, then version and flags. A header that checks out but carries a
// newer version returns an error wrapping ErrVersion (not ErrCorrupt): that
// is not damage, and must not be cut as a torn tail.
func decodeBatchHeader(e []byte) (batchHeader, error) {
	if len(e) < batchHeaderSize {
		return batchHeader{}, corruptf("batch of %d bytes is shorter than its %d-byte header", len(e), batchHeaderSize)
	}
	if crc32.Checksum(e[:14], castagnoli) != binary.LittleEndian.Uint32(e[14:18]) {
		return batchHeader{}, corruptf("batch header checksum mismatch")
	}
	h := batchHeader{
		version: e[0],
		flags:   e[1],
		count:   binary.LittleEndian.Uint32(e[2:6]),
		rawLen:  binary.LittleEndian.Uint32(e[6:10]),
		bodyCRC: binary.LittleEndian.Uint32(e[10:14]),
	}
	if h.version > batchVersion {
		return h, fmt.Errorf("batch format version %d, this build reads versions up to %d: %w", h.version, batchVersion, ErrVersion)
	}
	if h.version == 0 {
		return h, corruptf("batch format version 0")
	}
	if h.flags&^knownFlags != 0 {
		return h, corruptf("unknown batch flags %#x", h.flags)
	}
	if h.rawLen > maxBatchBody {
		return h, corruptf("batch body length %d exceeds %d", h.rawLen, maxBatchBody)
	}
	return h, nil
}

// parseBatchHeader checks an entry's header (decodeBatchHeader) and that
// the entry's size agrees with it.
func parseBatchHeader(e []byte) (batchHeader, error) {
	h, err := decodeBatchHeader(e)
	if err != nil {
		return h, err
	}
	if h.flags&flagS2 == 0 && int(h.rawLen) != len(e)-batchHeaderSize {
		return h, corruptf("batch body is %d bytes, header says %d", len(e)-batchHeaderSize, h.rawLen)
	}
	// Every record takes at least two bytes (length and kind).
	if uint64(h.count)*2 > uint64(h.rawLen) {
		return h, corruptf("batch claims %d records in %d bytes", h.count, h.rawLen)
	}
	return h, nil
}

// checkBatch checks an entry's header and body checksum.
func checkBatch(e []byte) (batchHeader, error) {
	h, err := parseBatchHeader(e)
	if err != nil {
		return h, err
	}
	if crc32.Checksum(e[batchHeaderSize:], castagnoli) != h.bodyCRC {
		return h, corruptf("batch body checksum mismatch")
	}
	return h, nil
}

// finishBatch fills in the header of a batch whose records were appended to
// buf after batchHeaderSize reserved bytes, compressing the body into
// scratch when that pays. It returns the entry to write (buf itself, or
// scratch) and the scratch buffer to keep.
func finishBatch(buf []byte, count int, compressAbove int, scratch []byte) (entry, keep []byte, compressed bool) {
	body := buf[batchHeaderSize:]
	entry = buf
	var flags byte
	if compressAbove >= 0 && len(body) > compressAbove {
		need := batchHeaderSize + s2.MaxEncodedLen(len(body))
		if cap(scratch) < need {
			scratch = make([]byte, need)
		}
		enc := s2.Encode(scratch[batchHeaderSize:need], body)
		// Keep the raw body unless compression saves at least 1/8: decoding
		// costs time on every replay.
		if len(enc) < len(body)-len(body)/8 {
			entry = scratch[:batchHeaderSize+len(enc)]
			flags = flagS2
		}
	}
	h := entry[:batchHeaderSize]
	h[0] = batchVersion
	h[1] = flags
	binary.LittleEndian.PutUint32(h[2:6], uint32(count))
	binary.LittleEndian.PutUint32(h[6:10], uint32(len(body)))
	binary.LittleEndian.PutUint32(h[10:14], crc32.Checksum(entry[batchHeaderSize:], castagnoli))
	binary.LittleEndian.PutUint32(h[14:18], crc32.Checksum(h[:14], castagnoli))
	return entry, scratch, flags != 0
}

// batchBody returns the records of a checked batch, decompressing into
// scratch if needed (the result may alias e or scratch).
func batchBody(e []byte, h batchHeader, scratch []byte) (body, keep []byte, err error) {
	stored := e[batchHeaderSize:]
	if h.flags&flagS2 == 0 {
		return stored, scratch, nil
	}
	n, err := s2.DecodedLen(stored)
	if err != nil {
		return nil, scratch, corruptf("s2 body: %v", err)
	}
	if n != int(h.rawLen) {
		return nil, scratch, corruptf("s2 body decodes to %d bytes, header says %d", n, h.rawLen)
	}
	if cap(scratch) < n {
		scratch = make([]byte, n+n/4)
	}
	body, err = s2.Decode(scratch[:n], stored)
	if err != nil {
		return nil, scratch, corruptf("s2 body: %v", err)
	}
	return body, scratch, nil
}

// forEachRecord decodes the count records of body into r, calling fn for
// each. body must hold exactly count records.
func forEachRecord(body []byte, count uint32, r *Record, fn func(*Record) error) error {
	for i := uint32(0); i < count; i++ {
		n, err := DecodeRecord(body, r)
		if err != nil {
			return fmt.Errorf("record %d of %d: %w", i+1, count, err)
		}
		body = body[n:]
		if fn != nil {
			if err := fn(r); err != nil {
				return err
			}
		}
	}
	if len(body) != 0 {
		return corruptf("%d bytes after the batch's %d records", len(body), count)
	}
	return nil
}

// decodeBatch checks one entry and calls fn for each of its records; it is
// what replay does per batch, packaged for tests and fuzzing.
func decodeBatch(e []byte, scratch []byte, r *Record, fn func(*Record) error) (keep []byte, err error) {
	h, err := checkBatch(e)
	if err != nil {
		return scratch, err
	}
	body, scratch, err := batchBody(e, h, scratch)
	if err != nil {
		return scratch, err
	}
	return scratch, forEachRecord(body, h.count, r, fn)
}
