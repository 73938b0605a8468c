package admin

import (
	"testing"
	"time"

	"github.com/ringwal/ringwal"
)

// The rates come from the samples of the last minute, at most one a
// second; the clock is the caller's, so no test sleeps.
func TestSamplerRates(t *testing.T) {
	var sm sampler
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, _, ok := sm.rates(); ok {
		t.Fatal("rates from no sample")
	}
	sm.add(t0, ringwal.Stats{Enqueued: 100})
	sm.add(t0.Add(500*time.Millisecond), ringwal.Stats{Enqueued: 1000}) // too soon: dropped
	if _, _, ok := sm.rates(); ok {
		t.Fatal("rates from one sample")
	}
	// One sample a second for two minutes: 10 enqueued and 2 dead a second.
	for i := 1; i <= 120; i++ {
		sm.add(t0.Add(time.Duration(i)*time.Second), ringwal.Stats{Enqueued: 100 + uint64(10*i), DeadLettered: uint64(2 * i)})
	}
	rs, span, ok := sm.rates()
	if !ok || span != time.Minute {
		t.Fatalf("ok %v span %s, want a minute", ok, span)
	}
	got := map[string]float64{}
	for _, r := range rs {
		got[r.Name] = r.PerSecond
	}
	if got["enqueued"] != 10 || got["dead-lettered"] != 2 || got["acked"] != 0 {
		t.Errorf("rates %v", got)
	}
	// A gap: the newest sample is 10 minutes later; nothing older is within
	// the minute, so there is no rate until the next sample.
	sm.add(t0.Add(12*time.Minute), ringwal.Stats{Enqueued: 5000})
	if _, _, ok := sm.rates(); ok {
		t.Error("a rate across a gap longer than the window")
	}
	sm.add(t0.Add(12*time.Minute+2*time.Second), ringwal.Stats{Enqueued: 5010})
	rs, span, ok = sm.rates()
	if !ok || span != 2*time.Second || rs[0].PerSecond != 5 {
		t.Errorf("after the gap: %v %s %v", ok, span, rs)
	}
}
