package ring

import (
	"runtime"
	"sync"
	"testing"
)

// The ring and its baseline, a buffered channel of the same capacity, run
// the same shape: P producers share b.N messages, C consumers drain them,
// both sides non-blocking and yielding with runtime.Gosched when full or
// empty, so ns/op is the cost of one message hand-off.

const benchCapacity = 1024

var shapes = []struct {
	name                 string
	producers, consumers int
}{
	{"SPSC", 1, 1},
	{"MPMC-2P2C", 2, 2},
	{"MPMC-8P8C", 8, 8},
}

// share splits n messages among parts workers, the first ones taking the
// remainder.
func share(n, parts, i int) int {
	s := n / parts
	if i < n%parts {
		s++
	}
	return s
}

// The two hand-off loops are written out for each queue rather than
// through an interface or a generic helper: a dictionary call per
// operation would weigh more than the ring itself.

func runRing(b *testing.B, r *Ring[uint64], producers, consumers int) {
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func(count int) {
			defer wg.Done()
			for i := 0; i < count; i++ {
				for !r.TryPush(uint64(i)) {
					runtime.Gosched()
				}
			}
		}(share(b.N, producers, p))
	}
	for c := 0; c < consumers; c++ {
		wg.Add(1)
		go func(count int) {
			defer wg.Done()
			for i := 0; i < count; {
				if _, ok := r.TryPop(); ok {
					i++
					continue
				}
				runtime.Gosched()
			}
		}(share(b.N, consumers, c))
	}
	wg.Wait()
}

func runChan(b *testing.B, ch chan uint64, producers, consumers int) {
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func(count int) {
			defer wg.Done()
			for i := 0; i < count; {
				select {
				case ch <- uint64(i):
					i++
				default:
					runtime.Gosched()
				}
			}
		}(share(b.N, producers, p))
	}
	for c := 0; c < consumers; c++ {
		wg.Add(1)
		go func(count int) {
			defer wg.Done()
			for i := 0; i < count; {
				select {
				case <-ch:
					i++
				default:
					runtime.Gosched()
				}
			}
		}(share(b.N, consumers, c))
	}
	wg.Wait()
}

func BenchmarkRing(b *testing.B) {
	for _, s := range shapes {
		b.Run(s.name, func(b *testing.B) {
			runRing(b, New[uint64](benchCapacity), s.producers, s.consumers)
		})
	}
}

func BenchmarkChan(b *testing.B) {
	for _, s := range shapes {
		b.Run(s.name, func(b *testing.B) {
			runChan(b, make(chan uint64, benchCapacity), s.producers, s.consumers)
		})
	}
}

// BenchmarkRingBatch shows what PushBatch/PopBatch save per message when
// producers and consumers move 16 at a time.
func BenchmarkRingBatch(b *testing.B) {
	r := New[uint64](benchCapacity)
	b.ReportAllocs()
	b.ResetTimer()
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]uint64, 16)
		for got := 0; got < b.N; {
			n := r.PopBatch(buf)
			if n == 0 {
				runtime.Gosched()
			}
			got += n
		}
	}()
	buf := make([]uint64, 16)
	for sent := 0; sent < b.N; {
		n := r.PushBatch(buf[:min(16, b.N-sent)])
		if n == 0 {
			runtime.Gosched()
		}
		sent += n
	}
	<-done
}

// BenchmarkRingSerial is one goroutine's push and pop, no contention: the
// instruction cost of a ring of eight-byte values (moved as atomic words,
// so Peek can read them) beside one of pointers (moved plainly).
func BenchmarkRingSerial(b *testing.B) {
	type ref struct{ slot, gen uint32 }
	b.Run("word", func(b *testing.B) {
		r := New[ref](benchCapacity)
		for i := 0; i < b.N; i++ {
			r.TryPush(ref{uint32(i), 1})
			r.TryPop()
		}
	})
	b.Run("pointer", func(b *testing.B) {
		r := New[*int](benchCapacity)
		v := new(int)
		for i := 0; i < b.N; i++ {
			r.TryPush(v)
			r.TryPop()
		}
	})
}

// BenchmarkNew: allocating a ring of a million slots, as restore does for
// each tier holding a backlog.
func BenchmarkNew(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = New[uint64](1 << 20)
	}
}
