// Package pad holds the cache-line size used to keep hot atomics that are
// written by different goroutines on separate cache lines (false sharing
// costs more than the bytes).
package pad

// CacheLine is the assumed size of a cache line in bytes. 64 is right for
// amd64 and most arm64 cores; on cores with 128-byte lines, two adjacent
// lines may be prefetched together, which padding to 64 does not prevent but
// does not make worse.
const CacheLine = 64

// Line is a cache line's worth of padding; put it between fields written by
// different goroutines.
type Line [CacheLine]byte
