package wal

import (
	"encoding/binary"
	"math/bits"
)

// uvarint is binary.Uvarint with a fast path for one-byte values, which
// most lengths and small integers are, and one for values of up to nine
// bytes (a record's Time takes nine) read eight bytes at a time rather
// than byte by byte: replay decodes one per record.
func uvarint(b []byte) (uint64, int) {
	if len(b) > 0 && b[0] < 0x80 {
		return uint64(b[0]), 1
	}
	if len(b) >= 8 {
		w := binary.LittleEndian.Uint64(b)
		// A byte with its high bit clear ends the varint.
		if stop := ^w & 0x8080808080808080; stop != 0 {
			n := bits.TrailingZeros64(stop)>>3 + 1 // 2..8 bytes
			return gather7(w & (1<<(8*n) - 1)), n
		}
		if len(b) > 8 && b[8] < 0x80 {
			return gather7(w) | uint64(b[8])<<56, 9
		}
	}
	return binary.Uvarint(b) // short buffers, ten-byte values, truncation, overflow
}

// gather7 packs the low seven bits of each of w's bytes, least significant
// first: eight varint bytes' worth of value.
func gather7(w uint64) uint64 {
	return w&0x7f | w>>1&(0x7f<<7) | w>>2&(0x7f<<14) | w>>3&(0x7f<<21) |
		w>>4&(0x7f<<28) | w>>5&(0x7f<<35) | w>>6&(0x7f<<42) | w>>7&(0x7f<<49)
}

func appendUvarint(dst []byte, v uint64) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

func appendVarint(dst []byte, v int64) []byte {
	return appendUvarint(dst, uint64(v<<1)^uint64(v>>63))
}

func appendString(dst []byte, s string) []byte {
	dst = appendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func uvarintLen(v uint64) int {
	return (bits.Len64(v|1) + 6) / 7
}

func varintLen(v int64) int {
	return uvarintLen(uint64(v<<1) ^ uint64(v>>63))
}
