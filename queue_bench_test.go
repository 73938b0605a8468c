package ringwal_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ringwal/ringwal"
)

// BenchmarkQueues compares the same work spread over 8 queues with one
// worker each against one queue with 8 workers (memory-only and Write):
// 8 producers enqueue b.N messages in all, Run's workers ack them.
func BenchmarkQueues(b *testing.B) {
	for _, durable := range []bool{false, true} {
		mode := "memory"
		if durable {
			mode = "write"
		}
		for _, shape := range []struct {
			name            string
			queues, workers int
		}{{"1x8", 1, 8}, {"8x1", 8, 1}} {
			b.Run(mode+"/"+shape.name, func(b *testing.B) {
				dir := ""
				if durable {
					dir = b.TempDir()
				}
				e, err := ringwal.Open(dir, ringwal.Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer e.Close()
				names := make([]string, shape.queues)
				for i := range names {
					names[i] = fmt.Sprintf("q%d", i)
				}
				var handled atomic.Int64
				done := make(chan struct{})
				ctx, cancel := context.WithCancel(context.Background())
				var runs sync.WaitGroup
				for _, q := range names {
					runs.Add(1)
					go func() {
						defer runs.Done()
						_ = e.Queue(q).Run(ctx, shape.workers, func(context.Context, ringwal.Delivery) error {
							if handled.Add(1) == int64(b.N) {
								close(done)
							}
							return nil
						})
					}()
				}
				payload := make([]byte, 128)
				b.ReportAllocs()
				b.ResetTimer()
				var prod sync.WaitGroup
				const producers = 8
				for p := range producers {
					prod.Add(1)
					go func() {
						defer prod.Done()
						for i := p; i < b.N; i += producers {
							if _, err := e.Enqueue(ctx, ringwal.Message{Queue: names[i%len(names)], Payload: payload}); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				prod.Wait()
				<-done
				b.StopTimer()
				cancel()
				runs.Wait()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			})
		}
	}
}

// BenchmarkDeclaredQueues reports what a declared, empty queue costs: heap
// bytes and goroutines per queue, for 10,000 queues (each used once, so
// that its delivery machinery is set up).
func BenchmarkDeclaredQueues(b *testing.B) {
	const n = 10_000
	for range b.N {
		var after runtime.MemStats
		e, err := ringwal.Open("", ringwal.Options{})
		if err != nil {
			b.Fatal(err)
		}
		g0 := runtime.NumGoroutine()
		runtime.GC()
		var base runtime.MemStats
		runtime.ReadMemStats(&base)
		for i := range n {
			name := fmt.Sprintf("queue-%05d", i)
			if err := e.DeclareQueue(name, ringwal.QueueOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		declared := float64(after.HeapAlloc-base.HeapAlloc) / n
		for i := range n {
			_, _ = e.Queue(fmt.Sprintf("queue-%05d", i)).TryDequeue() // sets up its machinery
		}
		runtime.GC()
		var used runtime.MemStats
		runtime.ReadMemStats(&used)
		b.ReportMetric(declared, "B/declared-queue")
		b.ReportMetric(float64(used.HeapAlloc-base.HeapAlloc)/n, "B/used-queue")
		b.ReportMetric(float64(runtime.NumGoroutine()-g0), "goroutines/10k-queues")
		e.Close()
	}
}
