package prom

import (
	"math"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/ringwal/ringwal"
)

// latencyHistogram keeps Stats' cumulative buckets as they are, drops the
// unbounded last one for +Inf, and takes Count and Sum from the Latency.
func TestLatencyHistogramFromStats(t *testing.T) {
	l := ringwal.Latency{Count: 5, Sum: 7 * time.Millisecond, Buckets: []ringwal.LatencyBucket{
		{UpperBound: time.Microsecond, Count: 1},
		{UpperBound: 2 * time.Microsecond, Count: 3},
		{UpperBound: math.MaxInt64, Count: 5},
	}}
	var pb dto.Metric
	if err := latencyHistogram(descs.wait, l).Write(&pb); err != nil {
		t.Fatal(err)
	}
	h := pb.GetHistogram()
	if h.GetSampleCount() != 5 || h.GetSampleSum() != 0.007 {
		t.Errorf("count %d sum %g, want 5 and 0.007", h.GetSampleCount(), h.GetSampleSum())
	}
	want := []struct {
		le  float64
		cum uint64
	}{{1e-6, 1}, {2e-6, 3}}
	bs := h.GetBucket()
	if len(bs) != len(want) && !(len(bs) == len(want)+1 && math.IsInf(bs[len(bs)-1].GetUpperBound(), 1)) {
		t.Fatalf("buckets %v", bs)
	}
	for i, w := range want {
		if bs[i].GetUpperBound() != w.le || bs[i].GetCumulativeCount() != w.cum {
			t.Errorf("bucket %d: le=%g cum=%d, want le=%g cum=%d", i, bs[i].GetUpperBound(), bs[i].GetCumulativeCount(), w.le, w.cum)
		}
	}
}
