// Package pad holds the cache-line size used to keep hot atomics that are
// written by different goroutines on separate cache lines (false sharing
// costs more than the bytes).
package pad

import "sync/atomic"

// CacheLine is the assumed size of a cache line in bytes. 64 is right for
// amd64 and most arm64 cores; on cores with 128-byte lines, two adjacent
// lines may be prefetched together, which padding to 64 does not prevent but
// does not make worse.
const CacheLine = 64

// Line is a cache line's worth of padding; put it between fields written by
// different goroutines.
type Line [CacheLine]byte

// Int64 is an atomic.Int64 alone on its cache line, for a counter that
// goroutines on different cores write.
type Int64 struct {
	atomic.Int64
	_ [CacheLine - 8]byte
}

// Uint64 is an atomic.Uint64 alone on its cache line.
type Uint64 struct {
	atomic.Uint64
	_ [CacheLine - 8]byte
}
