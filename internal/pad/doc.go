// Package pad owns the cache-line padding the hot path's atomics use so
// that counters written by different cores do not share a line. It owns
// no logic: only the line size and padded types.
package pad
