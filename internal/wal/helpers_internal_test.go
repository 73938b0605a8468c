package wal

import (
	"encoding/binary"
	"hash/crc32"
)

// refreshHeaderCRC recomputes a batch header's own checksums (tests forge
// headers with it): the shared prefix's, and for version 2 the whole
// header's.
func refreshHeaderCRC(e []byte) {
	binary.LittleEndian.PutUint32(e[14:18], crc32.Checksum(e[:14], castagnoli))
	if e[0] >= 2 && len(e) >= batchHeaderSize {
		binary.LittleEndian.PutUint32(e[30:34], crc32.Checksum(e[:30], castagnoli))
	}
}

// refreshBodyCRC recomputes a batch's body checksum (and, for version 2,
// its stored length).
func refreshBodyCRC(e []byte) {
	size := batchHeaderV1
	if e[0] >= 2 && len(e) >= batchHeaderSize {
		size = batchHeaderSize
		binary.LittleEndian.PutUint32(e[18:22], uint32(len(e)-size))
	}
	binary.LittleEndian.PutUint32(e[10:14], crc32.Checksum(e[size:], castagnoli))
}
