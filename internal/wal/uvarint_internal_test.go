package wal

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// TestUvarintAgreesWithTheByteLoop: uvarint's fast paths (eight bytes at
// a time) return what the byte-by-byte loop returns, for every length of
// value, with and without bytes after it, truncated, overlong and
// overflowing.
func TestUvarintAgreesWithTheByteLoop(t *testing.T) {
	check := func(b []byte) {
		t.Helper()
		v, n := uvarint(b)
		if bv, bn := binary.Uvarint(b); bv != v || bn != n {
			t.Fatalf("uvarint(%x) = %d, %d; binary.Uvarint, the byte loop, says %d, %d", b, v, n, bv, bn)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	values := []uint64{0, 1, 127, 128, 1<<14 - 1, 1 << 14, 1<<56 - 1, 1 << 56, 1<<63 - 1, 1 << 63, math.MaxUint64}
	for range 20000 {
		values = append(values, rng.Uint64()>>rng.IntN(64))
	}
	for _, v := range values {
		enc := binary.AppendUvarint(nil, v)
		for tail := 0; tail <= 10; tail++ {
			b := append(append([]byte(nil), enc...), make([]byte, tail)...)
			for i := len(enc); i < len(b); i++ {
				b[i] = byte(rng.Uint32())
			}
			check(b)
			check(b[:len(enc)-1]) // truncated
		}
	}
	// Overlong and overflowing encodings, and continuation bytes only.
	for n := 1; n <= 12; n++ {
		for _, last := range []byte{0, 1, 2, 0x7f, 0x80, 0xff} {
			b := make([]byte, n)
			for i := range b {
				b[i] = 0x80 | byte(rng.Uint32())
			}
			b[n-1] = last
			check(b)
			check(append(b, 0, 0, 0, 0, 0, 0, 0, 0))
		}
	}
}
