package bench

// W1: in-memory hand-off. P producers, P consumers, 128-byte payloads, no
// durability; every bounded peer gets the same capacity (w1Capacity).
//
//	BenchmarkW1/ringwal/{1P1C,4P4C,16P16C}    memory-only engine: Enqueue, Dequeue, Ack
//	BenchmarkW1/ringwal-batch/...             the same, consumers take DequeueBatch(64) and AckBatch
//	BenchmarkW1/chan/...                      buffered channel of []byte
//	BenchmarkW1/workiva-ring/...              github.com/Workiva/go-datastructures/queue RingBuffer: Put, Get
//	BenchmarkW1/workqueue/...                 k8s.io/client-go/util/workqueue typed queue: Add, Get, Done

import (
	"errors"
	"testing"

	"github.com/Workiva/go-datastructures/queue"
	"k8s.io/client-go/util/workqueue"

	"github.com/ringwal/ringwal"
)

// w1Capacity bounds the queue for every peer that can be bounded (the
// client-go workqueue cannot).
const w1Capacity = 1 << 12

func BenchmarkW1(b *testing.B) {
	peers := []struct {
		name string
		fn   func(*testing.B, shape)
	}{
		{"ringwal", w1Ringwal},
		{"ringwal-batch", w1RingwalBatch},
		{"chan", w1Chan},
		{"workiva-ring", w1Workiva},
		{"workqueue", w1Workqueue},
	}
	for _, p := range peers {
		b.Run(p.name, func(b *testing.B) {
			for _, s := range handoffShapes {
				b.Run(s.String(), func(b *testing.B) { p.fn(b, s) })
			}
		})
	}
}

func w1Ringwal(b *testing.B, s shape) {
	e, err := ringwal.Open("", ringwal.Options{TierCapacity: w1Capacity, MaxMessages: w1Capacity})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	runRingwal(b, s, e, Small, false)
}

// w1RingwalBatch is w1Ringwal with batch consumers (runRingwalBatch).
func w1RingwalBatch(b *testing.B, s shape) {
	e, err := ringwal.Open("", ringwal.Options{TierCapacity: w1Capacity, MaxMessages: w1Capacity})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	runRingwalBatch(b, s, e, Small)
}

func w1Chan(b *testing.B, s shape) {
	ch := make(chan []byte, w1Capacity)
	pl := payload(Small)
	cd := newCountdown(b.N)
	go func() { <-cd.done; close(ch) }() // every message was received: release the others
	run(b, s, cd,
		func(_, n int) error {
			for range n {
				ch <- pl
			}
			return nil
		},
		func(int) error {
			for range ch {
				cd.take()
			}
			return nil
		})
}

func w1Workiva(b *testing.B, s shape) {
	rb := queue.NewRingBuffer(w1Capacity)
	pl := payload(Small)
	item := &pl // a pointer: boxing it in an interface does not allocate
	cd := newCountdown(b.N)
	go func() { <-cd.done; rb.Dispose() }()
	run(b, s, cd,
		func(_, n int) error {
			for range n {
				if err := rb.Put(item); err != nil {
					return err
				}
			}
			return nil
		},
		func(int) error {
			for {
				v, err := rb.Get()
				if err != nil {
					if errors.Is(err, queue.ErrDisposed) {
						return nil
					}
					return err
				}
				_ = v.(*[]byte)
				cd.take()
			}
		})
}

// The client-go workqueue is a set: identical items are coalesced, so each
// message is a unique key (as in a controller, where the payload lives in
// a cache, not in the queue).
func w1Workqueue(b *testing.B, s shape) {
	q := workqueue.NewTyped[uint64]()
	cd := newCountdown(b.N)
	go func() { <-cd.done; q.ShutDown() }()
	run(b, s, cd,
		func(i, n int) error {
			base := uint64(i) << 40 // producer i's own key space
			for k := range n {
				q.Add(base | uint64(k))
			}
			return nil
		},
		func(int) error {
			for {
				k, shutdown := q.Get()
				if shutdown {
					return nil
				}
				q.Done(k)
				cd.take()
			}
		})
}
