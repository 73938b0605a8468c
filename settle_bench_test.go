package ringwal_test

import (
	"testing"

	"github.com/ringwal/ringwal"
)

// BenchmarkAckBatch times AckBatch alone, per lease acked (ns/op,
// allocs/op), in batches of 64; the enqueues and dequeues that make the
// leases run with the timer stopped. The durable case (Write mode) waits
// for one write(2) per batch. allocs/op must stay 0.
func BenchmarkAckBatch(b *testing.B) {
	const batch = 64
	for _, c := range []struct {
		name string
		dir  func(b *testing.B) string
	}{{"memory", func(*testing.B) string { return "" }}, {"write", func(b *testing.B) string { return b.TempDir() }}} {
		b.Run(c.name, func(b *testing.B) {
			e, err := ringwal.Open(c.dir(b), ringwal.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			payload := make([]byte, 128)
			ls := make([]ringwal.Lease, 0, batch)
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; done += batch {
				b.StopTimer()
				k := min(batch, b.N-done)
				ls = ls[:0]
				for range k {
					if _, err := e.TryEnqueue(ringwal.Message{Payload: payload}); err != nil {
						b.Fatal(err)
					}
				}
				for range k {
					d, ok := e.TryDequeue()
					if !ok {
						b.Fatal("nothing to dequeue")
					}
					ls = append(ls, d.Lease)
				}
				b.StartTimer()
				if err := e.AckBatch(ls); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
