package ringwal_test

import (
	"testing"

	"github.com/ringwal/ringwal"
)

// BenchmarkDequeueBatch times consuming (dequeue and ack) per message, a
// batch of 64 at a time (DequeueBatch, AckBatch) against one at a time
// (Dequeue, Ack), in memory and in the durable modes whose log every lease
// and ack goes through; the enqueues run with the timer stopped.
func BenchmarkDequeueBatch(b *testing.B) {
	const batch = 64
	for _, mode := range []struct {
		name string
		dur  ringwal.Durability
		disk bool
	}{{"memory", 0, false}, {"buffered", ringwal.Buffered, true}, {"write", ringwal.Write, true}} {
		for _, batched := range []bool{false, true} {
			name := mode.name + "/single"
			if batched {
				name = mode.name + "/batch64"
			}
			b.Run(name, func(b *testing.B) {
				dir := ""
				if mode.disk {
					dir = b.TempDir()
				}
				e, err := ringwal.Open(dir, ringwal.Options{Durability: mode.dur})
				if err != nil {
					b.Fatal(err)
				}
				defer e.Close()
				ms := make([]ringwal.Message, 1024)
				for i := range ms {
					ms[i].Payload = make([]byte, 128)
				}
				ls := make([]ringwal.Lease, 0, batch)
				b.ReportAllocs()
				b.ResetTimer()
				for done := 0; done < b.N; done += len(ms) {
					b.StopTimer()
					k := min(len(ms), b.N-done)
					if _, err := e.EnqueueBatch(ctxBG, ms[:k]); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					for got := 0; got < k; {
						if !batched {
							d, err := e.Dequeue(ctxBG)
							if err != nil {
								b.Fatal(err)
							}
							if err := e.Ack(d.Lease); err != nil {
								b.Fatal(err)
							}
							got++
							continue
						}
						ds, err := e.DequeueBatch(ctxBG, min(batch, k-got))
						if err != nil {
							b.Fatal(err)
						}
						ls = ls[:0]
						for _, d := range ds {
							ls = append(ls, d.Lease)
						}
						if err := e.AckBatch(ls); err != nil {
							b.Fatal(err)
						}
						got += len(ds)
					}
				}
			})
		}
	}
}
