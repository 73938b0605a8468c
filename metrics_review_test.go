package ringwal

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// An observation above a bucket's upper bound must not be counted in it:
// a Prometheus bucket le=x holds observations <= x.
func TestReviewHistogramBucketUpperBound(t *testing.T) {
	for _, ns := range []int64{1001, 1500, 1999, 2001, 3999, 4001, 1_000_001} {
		var h histogram
		h.observe(ns)
		counts, _, _ := h.snapshot()
		for i, n := range counts {
			if n == 0 {
				continue
			}
			if up := bucketUpperSeconds(i) * 1e9; float64(ns) > up && i < latencyBuckets-1 {
				t.Errorf("observe(%dns) counted in bucket %d (le=%gs), below the observation", ns, i, bucketUpperSeconds(i))
			}
			if i > 0 && float64(ns) <= bucketUpperSeconds(i-1)*1e9 {
				t.Errorf("observe(%dns) counted in bucket %d, but fits bucket %d", ns, i, i-1)
			}
		}
		m := latencyHistogram(descs.wait, &h)
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		for _, b := range pb.GetHistogram().GetBucket() {
			if b.GetUpperBound()*1e9 < float64(ns) && b.GetCumulativeCount() != 0 {
				t.Errorf("observe(%dns): bucket le=%g counts %d", ns, b.GetUpperBound(), b.GetCumulativeCount())
			}
		}
	}
}
