package bench

import (
	"context"
	"fmt"
	"testing"

	"github.com/ringwal/ringwal"
)

// BenchmarkW2Queues is why queues share one log: W2's Fsync shape (64
// producers, 128-byte messages) with 8 queues in one engine against 8
// engines in 8 directories, the same producers and consumers in total
// (producer i enqueues into queue or engine i%8; each queue or engine has
// one Run of a worker). It reports messages per second and fsyncs per
// message.
//
//	BenchmarkW2Queues/8queues-1engine/64P8C
//	BenchmarkW2Queues/8engines/64P8C
func BenchmarkW2Queues(b *testing.B) {
	s := shape{P: 64, C: 8}
	b.Run("8queues-1engine/"+s.String(), func(b *testing.B) { w2Queues(b, s, 1) })
	b.Run("8engines/"+s.String(), func(b *testing.B) { w2Queues(b, s, 8) })
}

func w2Queues(b *testing.B, s shape, engines int) {
	const queues = 8
	es := make([]*ringwal.Engine, engines)
	for i := range es {
		e, err := ringwal.Open(b.TempDir(), ringwal.Options{Durability: ringwal.Fsync})
		if err != nil {
			b.Fatal(err)
		}
		defer e.Close()
		es[i] = e
	}
	// target i: the engine and queue producer i (mod 8) writes to.
	target := func(i int) (*ringwal.Engine, string) {
		if engines == 1 {
			return es[0], fmt.Sprintf("q%d", i%queues)
		}
		return es[i%engines], ""
	}
	pl := payload(128)
	cd := newCountdown(b.N)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-cd.done; cancel() }()
	run(b, s, cd,
		func(i, n int) error {
			e, q := target(i)
			for range n {
				if _, err := e.Enqueue(ctx, ringwal.Message{Queue: q, Payload: pl}); err != nil {
					return err
				}
			}
			return nil
		},
		func(i int) error {
			e, q := target(i)
			return e.Queue(q).Run(ctx, 1, func(context.Context, ringwal.Delivery) error {
				cd.take()
				return nil
			})
		})
	var fsyncs uint64
	for _, e := range es {
		fsyncs += e.Stats().WAL.Fsync.Count
	}
	b.ReportMetric(float64(fsyncs)/float64(b.N), "fsyncs/msg")
}
