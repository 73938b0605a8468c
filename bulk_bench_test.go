package ringwal_test

import (
	"errors"
	"testing"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
)

// BenchmarkBulkRedrive: RedriveMatching of 512 dead letters on a durable
// engine (Fsync and Write), per dead letter, against Redrive called for
// each (the single verb's cost: one wait for the log each). A bulk verb
// waits for the log once per page of 256.
func BenchmarkBulkRedrive(b *testing.B) {
	const n = 512
	for _, mode := range []ringwal.Durability{ringwal.Fsync, ringwal.Write} {
		for _, bulk := range []bool{true, false} {
			name := mode.String() + "/one-by-one"
			if bulk {
				name = mode.String() + "/RedriveMatching"
			}
			b.Run(name, func(b *testing.B) {
				e, err := ringwal.Open(b.TempDir(), ringwal.Options{Durability: mode})
				if err != nil {
					b.Fatal(err)
				}
				defer e.Close()
				perm := classify.Mark(errors.New("no"), classify.Permanent)
				b.ReportAllocs()
				for b.Loop() {
					b.StopTimer()
					ms := make([]ringwal.Message, n)
					if _, err := e.EnqueueBatch(ctxBG, ms); err != nil {
						b.Fatal(err)
					}
					ds, err := e.DequeueBatch(ctxBG, n)
					if err != nil || len(ds) != n {
						b.Fatal(err, len(ds))
					}
					for _, d := range ds {
						if err := e.Nack(d.Lease, perm); err != nil {
							b.Fatal(err)
						}
					}
					b.StartTimer()
					if bulk {
						if got, err := e.RedriveMatching(dlq.Query{}); err != nil || got != n {
							b.Fatal(got, err)
						}
					} else {
						for _, d := range ds {
							if err := e.Redrive(d.ID); err != nil {
								b.Fatal(err)
							}
						}
					}
					b.StopTimer()
					ds, err = e.DequeueBatch(ctxBG, n)
					if err != nil || len(ds) != n {
						b.Fatal(err, len(ds))
					}
					for _, d := range ds {
						if err := e.Ack(d.Lease); err != nil {
							b.Fatal(err)
						}
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/deadletter")
			})
		}
	}
}
