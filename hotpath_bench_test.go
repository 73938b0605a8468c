package ringwal

import (
	"testing"

	"github.com/ringwal/ringwal/ring"
)

// BenchmarkHotPathSerial measures one goroutine's enqueue, dequeue and ack
// with no contention: the instruction cost of the hot path, for comparing
// changes on a noisy machine (BenchmarkEngine is the contract figure).
func BenchmarkHotPathSerial(b *testing.B) {
	e, err := Open("", Options{TierCapacity: 1 << 16, MaxMessages: 1 << 17})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	payload := make([]byte, 128)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.TryEnqueue(Message{Payload: payload}); err != nil {
			b.Fatal(err)
		}
		d, ok := e.TryDequeue()
		if !ok {
			b.Fatal("nothing to dequeue")
		}
		if err := e.Ack(d.Lease); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkChanSerial(b *testing.B) {
	ch := make(chan []byte, 1<<16)
	payload := make([]byte, 128)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		ch <- payload
		<-ch
	}
}

// BenchmarkRingParallelFloor is the ring part of the hot path alone, in the
// shape of BenchmarkEngine/Memory: a floor for what the engine can reach.
func BenchmarkRingParallelFloor(b *testing.B) {
	t := newTiersForBench()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			for !t.TryPush(2, ref{slot: 1, gen: 1}) {
			}
			for {
				if _, ok := t.TryPop(2); ok {
					break
				}
			}
		}
	})
}

func newTiersForBench() *ring.Tiers[ref] {
	return ring.NewTiers[ref]([ring.NumTiers]int{1 << 16, 1 << 16, 1 << 16, 1 << 16, 1 << 16})
}
