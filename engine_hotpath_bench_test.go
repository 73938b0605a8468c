package ringwal

import (
	"context"
	"sync"
	"testing"
	"time"

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

// BenchmarkMutexRingFloor is BenchmarkRingParallelFloor with the lock-free
// ring swapped for a slice guarded by a sync.Mutex. In this shape (every
// goroutine pushes, then pops) the mutex wins by a wide margin: a contended
// sync.Mutex parks the loser, so one core runs many iterations with every
// line in its own cache, while the lock-free ring moves its position and
// slot lines between the cores on every operation. It is here as evidence
// for the BenchmarkEngine/Memory target, which DESIGN.md's lock-free rings
// cannot reach in this shape on two cores; it is not a candidate design
// (with separate producers and consumers the lock-free ring wins, see
// ring's MPMC benchmarks).
func BenchmarkMutexRingFloor(b *testing.B) {
	var (
		mu         sync.Mutex
		head, tail uint64
		buf        = make([]ref, 1<<16)
	)
	mask := uint64(len(buf) - 1)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			mu.Lock()
			buf[tail&mask] = ref{slot: 1, gen: 1}
			tail++
			mu.Unlock()
			for {
				mu.Lock()
				if head != tail {
					_ = buf[head&mask]
					head++
					mu.Unlock()
					break
				}
				mu.Unlock()
			}
		}
	})
}

func newTiersForBench() *ring.Tiers[ref] {
	return ring.NewTiers[ref]([ring.NumTiers]int{1 << 16, 1 << 16, 1 << 16, 1 << 16, 1 << 16})
}

// BenchmarkHotPathDelayed measures the hot path that schedules a timer:
// parallel producers enqueue a message delayed by an hour and cancel it,
// so that each op hands one entry to the housekeeper through its feed
// while it sleeps (the cancelled entries wait in the wheel until it
// compacts them). spilled/op is the share of entries that found the feed
// full and took its locked slow path.
func BenchmarkHotPathDelayed(b *testing.B) {
	e, err := Open("", Options{TierCapacity: 1 << 16, MaxMessages: 1 << 17})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	payload := make([]byte, 128)
	spilled := e.hk.timers.Spilled()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id, err := e.TryEnqueue(Message{Payload: payload, Delay: time.Hour})
			if err != nil {
				b.Fatal(err)
			}
			if err := e.Cancel(id); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(e.hk.timers.Spilled()-spilled)/float64(b.N), "spilled/op")
}

// BenchmarkHotPathSerialDequeue is BenchmarkHotPathSerial through the
// blocking Dequeue, which first checks its ctx (a message is always
// ready, so it never waits): with context.Background, and with a live
// cancellable ctx (an atomic load behind the interface call).
func BenchmarkHotPathSerialDequeue(b *testing.B) {
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
	}{{"Background", context.Background()}, {"WithCancel", cancellable}} {
		b.Run(c.name, func(b *testing.B) {
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
				d, err := e.Dequeue(c.ctx)
				if err != nil {
					b.Fatal(err)
				}
				if err := e.Ack(d.Lease); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
