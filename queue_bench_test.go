package ringwal_test

import (
	"context"
	"crypto/rand"
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

// BenchmarkPublish compares Publish (its copies in one log record, the
// payload once) with the same copies sent as one EnqueueBatch (a record
// each, as Publish logged them before): a 1 KiB message to 4 queues, in
// Write mode, one Run worker per queue acking. log-B/op is the bytes
// written to the log per publish (acks included): about equal, because a
// batch of 4 KiB or more is compressed and s2 finds the repeated payload;
// the one record saves the encoding and compressing of the copies.
func BenchmarkPublish(b *testing.B) {
	queues := []string{"audit", "billing", "mail", "search"}
	for _, how := range []string{"publish", "batch"} {
		b.Run(how, func(b *testing.B) {
			o := ringwal.Options{Durability: ringwal.Write, Queues: map[string]ringwal.QueueOptions{}}
			for _, q := range queues {
				o.Queues[q] = ringwal.QueueOptions{Topics: []string{"orders"}}
			}
			e, err := ringwal.Open(b.TempDir(), o)
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			want := int64(len(queues) * b.N)
			var handled atomic.Int64
			done := make(chan struct{})
			ctx, cancel := context.WithCancel(context.Background())
			var runs sync.WaitGroup
			for _, q := range queues {
				runs.Add(1)
				go func() {
					defer runs.Done()
					_ = e.Queue(q).Run(ctx, 1, func(context.Context, ringwal.Delivery) error {
						if handled.Add(1) == want {
							close(done)
						}
						return nil
					})
				}()
			}
			payload := make([]byte, 1024)
			_, _ = rand.Read(payload) // incompressible: the log's compression does not hide the copies

			copies := make([]ringwal.Message, len(queues))
			before := e.Stats().WAL.Bytes
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				m := ringwal.Message{Key: "shop", Payload: payload}
				if how == "publish" {
					_, err = e.Publish(ctx, "orders", m)
				} else {
					for i, q := range queues {
						copies[i] = m
						copies[i].Queue = q
					}
					_, err = e.EnqueueBatch(ctx, copies)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			<-done
			b.StopTimer()
			b.ReportMetric(float64(e.Stats().WAL.Bytes-before)/float64(b.N), "log-B/op")
			cancel()
			runs.Wait()
		})
	}
}
