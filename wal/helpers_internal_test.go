package wal

import (
	"encoding/binary"
	"hash/crc32"
)

// refreshHeaderCRC recomputes a batch header's own checksum (tests forge
// headers with it).
func refreshHeaderCRC(e []byte) {
	binary.LittleEndian.PutUint32(e[14:18], crc32.Checksum(e[:14], castagnoli))
}

// refreshBodyCRC recomputes a batch's body checksum.
func refreshBodyCRC(e []byte) {
	binary.LittleEndian.PutUint32(e[10:14], crc32.Checksum(e[batchHeaderSize:], castagnoli))
}
