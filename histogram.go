package ringwal

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// sampleMask picks the messages whose wait and handling times are measured
// with the precise clock: one in 64, by ID. So the hot path reads the
// clock for a few messages only, and the histograms still see every kind
// of traffic.
const sampleMask = 63

func sampled(id uint64) bool { return id&sampleMask == 0 }

// latencyBuckets is the number of power-of-two buckets from 1µs: bucket i
// counts observations up to 2^i µs, so the finite ones reach 2^26 µs ≈ 67 s
// (past the minute the issue asks for); the last takes everything above.
const latencyBuckets = 28

// histogram is a lock-free latency histogram with power-of-two buckets:
// observing is one bit-length and two atomic adds, cheap enough for the
// dequeue path. Both Stats (percentiles) and the Prometheus collector read
// it.
type histogram struct {
	buckets [latencyBuckets]atomic.Uint64
	sumNs   atomic.Uint64
}

func (h *histogram) observe(ns int64) {
	if ns < 0 {
		ns = 0
	}
	// Rounded up: bucket i holds observations up to 2^i µs inclusive,
	// so 1.5µs belongs to the 2µs bucket, not the 1µs one.
	us := (uint64(ns) + 999) / 1000
	i := 0
	if us > 1 {
		i = bits.Len64(us - 1)
	}
	if i >= latencyBuckets {
		i = latencyBuckets - 1
	}
	h.buckets[i].Add(1)
	h.sumNs.Add(uint64(ns))
}

// upperBound of bucket i, in seconds.
func bucketUpperSeconds(i int) float64 { return float64(uint64(1)<<i) / 1e6 }

// snapshot returns the bucket counts (not cumulative), their total and the
// sum in seconds.
func (h *histogram) snapshot() (counts [latencyBuckets]uint64, total uint64, sumSeconds float64) {
	for i := range h.buckets {
		counts[i] = h.buckets[i].Load()
		total += counts[i]
	}
	return counts, total, float64(h.sumNs.Load()) / 1e9
}

// latency estimates the mean and percentiles, interpolating linearly
// inside a bucket, and copies the buckets out (cumulative).
func (h *histogram) latency() Latency {
	counts, total, sum := h.snapshot()
	if total == 0 {
		return Latency{Buckets: cumulativeBuckets(counts)}
	}
	quantile := func(q float64) time.Duration { return quantileOf(&counts, total, q) }
	return Latency{
		Count:   total,
		Mean:    time.Duration(sum / float64(total) * 1e9),
		P50:     quantile(0.50),
		P95:     quantile(0.95),
		P99:     quantile(0.99),
		Sum:     time.Duration(sum * 1e9),
		Buckets: cumulativeBuckets(counts),
	}
}

// quantileOf estimates the q quantile of a histogram's bucket counts
// (total is their sum, > 0), interpolating linearly inside a bucket.
func quantileOf(counts *[latencyBuckets]uint64, total uint64, q float64) time.Duration {
	rank := q * float64(total)
	seen := 0.0
	for i, n := range counts {
		if n == 0 {
			continue
		}
		if seen+float64(n) >= rank {
			lo := 0.0
			if i > 0 {
				lo = bucketUpperSeconds(i - 1)
			}
			hi := bucketUpperSeconds(i)
			frac := (rank - seen) / float64(n)
			return time.Duration((lo + (hi-lo)*frac) * 1e9)
		}
		seen += float64(n)
	}
	return time.Duration(bucketUpperSeconds(latencyBuckets-1) * 1e9)
}

// cumulativeBuckets turns bucket counts into Latency.Buckets: cumulative,
// the last one unbounded.
func cumulativeBuckets(counts [latencyBuckets]uint64) []LatencyBucket {
	out := make([]LatencyBucket, latencyBuckets)
	var cum uint64
	for i, n := range counts {
		cum += n
		out[i] = LatencyBucket{UpperBound: time.Duration(uint64(1)<<i) * time.Microsecond, Count: cum}
	}
	out[latencyBuckets-1].UpperBound = math.MaxInt64
	return out
}
