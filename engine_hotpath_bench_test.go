package ringwal

import (
	"context"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
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

// BenchmarkDesignFloor measures a model of the other design for the hot
// path: every record, tier and count behind one sync.Mutex (what a Go
// channel does), doing the bookkeeping the engine's hot path does (an ID,
// a record with the message, a tier, a lease generation, a free list). It
// exists to put numbers on a decision, not as a candidate implementation:
//
//   - EnqueueDequeueAck has BenchmarkEngine/Memory's shape (every
//     goroutine enqueues, takes one, acks it). Here the mutex wins by a
//     wide margin over the engine, because a contended sync.Mutex parks
//     the loser and one core then runs with every line in its cache.
//   - 1P1C and 4P4C have the bench module's W1 shapes (separate producers
//     and consumers, consumers polling as Dequeue does before it parks).
//     With more goroutines than cores the mutex's hand-offs dominate and
//     the lock-free engine wins.
func BenchmarkDesignFloor(b *testing.B) {
	payload := make([]byte, 128)
	b.Run("EnqueueDequeueAck", func(b *testing.B) {
		c := newMutexCore(1 << 16)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var d mutexDelivery
			for pb.Next() {
				m := Message{Payload: payload}
				if !c.enqueue(&m) {
					b.Error("full")
					return
				}
				for !c.dequeue(&d) {
					runtime.Gosched()
				}
				if !c.ack(d.slot, d.gen) {
					b.Error("stale lease")
					return
				}
			}
		})
	})
	for _, s := range []struct {
		name                string
		producers, consumer int
	}{{"1P1C", 1, 1}, {"4P4C", 4, 4}} {
		b.Run(s.name, func(b *testing.B) {
			c := newMutexCore(1 << 16)
			var produced, consumed atomic.Int64
			n := int64(b.N)
			var wg sync.WaitGroup
			for i := 0; i < s.producers; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for produced.Add(1) <= n {
						m := Message{Payload: payload}
						for !c.enqueue(&m) {
							runtime.Gosched()
						}
					}
				}()
			}
			for i := 0; i < s.consumer; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var d mutexDelivery
					for consumed.Add(1) <= n {
						for !c.dequeue(&d) {
							runtime.Gosched()
						}
						c.ack(d.slot, d.gen)
					}
				}()
			}
			wg.Wait()
		})
	}
}

// mutexCore is the model BenchmarkDesignFloor measures.
type mutexCore struct {
	mu    sync.Mutex
	recs  []mutexRec
	free  []uint32
	tiers [5]struct {
		slots      []uint32
		head, tail uint64
	}
	nonEmpty uint8
	nextID   uint64
	live     int
	ready    atomic.Int64 // read without the lock by polling consumers
	clock    atomic.Int64 // stands for the engine's coarse clock
}

type mutexRec struct {
	gen, attempts uint32
	leased        bool
	id            uint64
	msg           Message
	enqueuedAt    int64
	leaseExpiry   int64
}

type mutexDelivery struct {
	id        uint64
	slot, gen uint32
	msg       Message
	attempt   int
}

func newMutexCore(n int) *mutexCore {
	c := &mutexCore{recs: make([]mutexRec, n)}
	c.clock.Store(time.Now().UnixNano())
	for i := n - 1; i >= 0; i-- {
		c.free = append(c.free, uint32(i))
	}
	for i := range c.tiers {
		c.tiers[i].slots = make([]uint32, n)
	}
	return c
}

func (c *mutexCore) enqueue(m *Message) bool {
	now := c.clock.Load()
	c.mu.Lock()
	if len(c.free) == 0 {
		c.mu.Unlock()
		return false
	}
	c.nextID++
	slot := c.free[len(c.free)-1]
	c.free = c.free[:len(c.free)-1]
	r := &c.recs[slot]
	r.msg, r.id, r.enqueuedAt = *m, c.nextID, now
	tier := m.Priority.tier()
	t := &c.tiers[tier]
	t.slots[t.tail&uint64(len(t.slots)-1)] = slot
	t.tail++
	c.nonEmpty |= 1 << tier
	c.live++
	c.ready.Add(1)
	c.mu.Unlock()
	return true
}

func (c *mutexCore) dequeue(d *mutexDelivery) bool {
	if c.ready.Load() == 0 {
		return false
	}
	c.mu.Lock()
	if c.nonEmpty == 0 {
		c.mu.Unlock()
		return false
	}
	tier := bits.TrailingZeros8(c.nonEmpty) // tier 0 is Critical
	t := &c.tiers[tier]
	slot := t.slots[t.head&uint64(len(t.slots)-1)]
	t.head++
	if t.head == t.tail {
		c.nonEmpty &^= 1 << tier
	}
	c.ready.Add(-1)
	r := &c.recs[slot]
	r.attempts++
	r.gen++
	r.leased = true
	r.leaseExpiry = r.enqueuedAt + int64(30*time.Second)
	*d = mutexDelivery{id: r.id, slot: slot, gen: r.gen, msg: r.msg, attempt: int(r.attempts)}
	c.mu.Unlock()
	return true
}

func (c *mutexCore) ack(slot, gen uint32) bool {
	c.mu.Lock()
	r := &c.recs[slot]
	if r.gen != gen || !r.leased {
		c.mu.Unlock()
		return false
	}
	*r = mutexRec{gen: r.gen + 1}
	c.free = append(c.free, slot)
	c.live--
	c.mu.Unlock()
	return true
}
