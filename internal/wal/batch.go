package wal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/klauspost/compress/s2"
)

// A batch is the payload of one tidwall/wal entry: everything one
// group-commit pass wrote. Layout of version 2, the one this build writes
// (little endian):
//
//	[0]      format version (batchVersion)
//	[1]      flags (flagS2: the body is one s2 block)
//	[2:6]    record count
//	[6:10]   body length before compression
//	[10:14]  CRC32C of the stored body
//	[14:18]  CRC32C of bytes [0:14]
//	[18:22]  stored body length (after compression, if any)
//	[22:30]  durable index: the last batch known fsynced when this one was
//	         written (0 = none known)
//	[30:34]  CRC32C of bytes [0:30]
//	[34:]    body: the records as AppendRecord wrote them, back to back
//
// Version 1 (still read) ends after [14:18] and has no stored length or
// durable index; its header is 18 bytes. Version 2 keeps version 1's first
// 18 bytes, checksum included, so a build that reads only version 1 sees a
// sound header with a newer version and stops with ErrVersion instead of
// taking the batch for damage and cutting it.
//
// The header has its own checksum so that a scan looking for a valid batch
// after damage (to tell a torn tail from damage before it) can reject
// garbage after 18 bytes instead of checksumming megabytes.
//
// Why the two version 2 fields. The stored length lets repair recognise a
// torn final batch whatever its compression: the tidwall/wal length prefix
// and the checksummed header agree, so the bytes up to the end of the file
// are that batch's own (even if its payload holds entry-shaped bytes).
// Version 1 could check that only for an uncompressed body (the raw length
// is the stored one). The durable index lets repair tell a power-loss tail
// from real damage: after a power loss, any batch written after the last
// completed fsync may be missing or partly written, and later batches may
// still be whole (pages are written back out of order), but none of those
// later batches can claim an index at or past the hole as durable. A
// valid batch that does is proof that the damaged batch had been fsynced,
// so its loss is corruption, not a crash. A sync point is recorded by the
// next batch written, so two more things make sure one follows: Open
// fsyncs the log it found (the first batch of a run claims all of it), and
// Close appends an empty batch, the close marker, claiming everything
// before it (writeCloseMarker).
const (
	batchVersion = 2
	// batchHeaderSize is the header this build writes (version 2).
	batchHeaderSize = 34
	// batchHeaderV1 is version 1's header, also the prefix every version
	// shares (version, flags, count, lengths and the first checksum).
	batchHeaderV1 = 18
	flagS2        = 1 << 0
	knownFlags    = flagS2
	// maxBatchBody bounds a batch body; a header claiming more is damage.
	maxBatchBody = 1 << 30
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type batchHeader struct {
	version   uint8
	flags     uint8
	count     uint32
	rawLen    uint32
	bodyCRC   uint32
	size      int    // header bytes: batchHeaderV1 or batchHeaderSize
	storedLen uint32 // version 2: body bytes as stored; version 1: 0 (unknown)
	durable   uint64 // version 2: last batch known fsynced when written; version 1: 0
}

// claims reports whether the header states how far fsync had reached when
// it was written. A version 1 batch says nothing, which is not the same as
// saying "nothing was durable": repair must treat it as unknown.
func (h batchHeader) claims() bool { return h.version >= 2 }

// decodeBatchHeader checks the header at the front of an entry: the shared
// prefix's checksum, then version and flags, then (version 2) the rest of
// the header and its checksum. A header that checks out but carries a newer
// version returns an error wrapping ErrVersion (not ErrCorrupt): that is not
// damage, and must not be cut as a torn tail.
func decodeBatchHeader(e []byte) (batchHeader, error) {
	if len(e) < batchHeaderV1 {
		return batchHeader{}, corruptf("batch of %d bytes is shorter than its %d-byte header", len(e), batchHeaderV1)
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
		size:    batchHeaderV1,
	}
	if h.version > batchVersion {
		return h, fmt.Errorf("batch format version %d, this build reads versions up to %d: %w", h.version, batchVersion, ErrVersion)
	}
	if h.version == 0 {
		return h, corruptf("batch format version 0")
	}
	if h.version >= 2 {
		if len(e) < batchHeaderSize {
			return batchHeader{}, corruptf("version %d batch of %d bytes is shorter than its %d-byte header", h.version, len(e), batchHeaderSize)
		}
		if crc32.Checksum(e[:30], castagnoli) != binary.LittleEndian.Uint32(e[30:34]) {
			return batchHeader{}, corruptf("batch header checksum mismatch (version 2 part)")
		}
		h.size = batchHeaderSize
		h.storedLen = binary.LittleEndian.Uint32(e[18:22])
		h.durable = binary.LittleEndian.Uint64(e[22:30])
	}
	if h.flags&^knownFlags != 0 {
		return h, corruptf("unknown batch flags %#x", h.flags)
	}
	if h.rawLen > maxBatchBody {
		return h, corruptf("batch body length %d exceeds %d", h.rawLen, maxBatchBody)
	}
	if h.version >= 2 && h.flags&flagS2 == 0 && h.storedLen != h.rawLen {
		return h, corruptf("uncompressed batch stores %d bytes but holds %d", h.storedLen, h.rawLen)
	}
	return h, nil
}

// entryLen is the size of the whole entry the header describes, when the
// header says (version 2, or an uncompressed version 1 batch); ok is false
// when it cannot know.
func (h batchHeader) entryLen() (n uint64, ok bool) {
	switch {
	case h.version >= 2:
		return uint64(h.size) + uint64(h.storedLen), true
	case h.flags&flagS2 == 0:
		return uint64(h.size) + uint64(h.rawLen), true
	}
	return 0, false
}

// parseBatchHeader checks an entry's header (decodeBatchHeader) and that
// the entry's size agrees with it.
func parseBatchHeader(e []byte) (batchHeader, error) {
	h, err := decodeBatchHeader(e)
	if err != nil {
		return h, err
	}
	if n, ok := h.entryLen(); ok && n != uint64(len(e)) {
		return h, corruptf("batch body is %d bytes, header says %d", len(e)-h.size, n-uint64(h.size))
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
	if crc32.Checksum(e[h.size:], castagnoli) != h.bodyCRC {
		return h, corruptf("batch body checksum mismatch")
	}
	return h, nil
}

// finishBatch fills in the header of a batch whose records were appended to
// buf after batchHeaderSize reserved bytes, compressing the body into
// scratch when that pays. durable is the last batch index known fsynced
// (see the layout above). It returns the entry to write (buf itself, or
// scratch) and the scratch buffer to keep.
func finishBatch(buf []byte, count int, compressAbove int, scratch []byte, durable uint64) (entry, keep []byte, compressed bool) {
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
	binary.LittleEndian.PutUint32(h[18:22], uint32(len(entry)-batchHeaderSize))
	binary.LittleEndian.PutUint64(h[22:30], durable)
	binary.LittleEndian.PutUint32(h[30:34], crc32.Checksum(h[:30], castagnoli))
	return entry, scratch, flags != 0
}

// batchBody returns the records of a checked batch, decompressing into
// scratch if needed (the result may alias e or scratch).
func batchBody(e []byte, h batchHeader, scratch []byte) (body, keep []byte, err error) {
	stored := e[h.size:]
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
// each. body must hold exactly count records. An error, fn's included,
// names the record: "record i of count" of a batch (first 0), or, for a
// chunk of a snapshot, numbered from the snapshot's first as replay
// numbers them (first is the chunk's first record's number).
func forEachRecord(body []byte, count uint32, first uint64, r *Record, fn func(*Record) error) error {
	name := func(i uint32) string {
		if first > 0 {
			return fmt.Sprintf("record %d", first+uint64(i))
		}
		return fmt.Sprintf("record %d of %d", i+1, count)
	}
	for i := uint32(0); i < count; i++ {
		n, err := DecodeRecord(body, r)
		if err != nil {
			return fmt.Errorf("%s: %w", name(i), err)
		}
		body = body[n:]
		if fn != nil {
			if err := fn(r); err != nil {
				return fmt.Errorf("%s: %w", name(i), err)
			}
		}
	}
	if len(body) != 0 {
		return corruptf("%d bytes after the batch's %d records", len(body), count)
	}
	return nil
}

// decodeBatch checks one entry and calls fn for each of its records; it is
// what replay does per batch, packaged for FileRecords, tests and fuzzing.
func decodeBatch(e []byte, scratch []byte, r *Record, fn func(*Record) error) (keep []byte, err error) {
	h, err := checkBatch(e)
	if err != nil {
		return scratch, err
	}
	body, scratch, err := batchBody(e, h, scratch)
	if err != nil {
		return scratch, err
	}
	return scratch, forEachRecord(body, h.count, 0, r, fn)
}
