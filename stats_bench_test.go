package ringwal_test

import (
	"context"
	"testing"

	"github.com/ringwal/ringwal"
)

// BenchmarkStats measures Stats on a memory engine holding 10^6 pending
// messages: its counts are kept, not scanned, so the figure does not grow
// with the backlog (it was about 10 ms when Stats scanned every record).
func BenchmarkStats(b *testing.B) {
	const n = 1_000_000
	e, err := ringwal.Open("", ringwal.Options{MaxMessages: 1 << 20, TierCapacity: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Close() })
	batch := make([]ringwal.Message, 4096)
	for i := range batch {
		batch[i] = ringwal.Message{Payload: []byte("x")}
	}
	for left := n; left > 0; left -= len(batch) {
		if _, err := e.EnqueueBatch(context.Background(), batch[:min(left, len(batch))]); err != nil {
			b.Fatal(err)
		}
	}
	if s := e.Stats(); s.Pending != n {
		b.Fatalf("%d pending, want %d", s.Pending, n)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		_ = e.Stats()
	}
}
