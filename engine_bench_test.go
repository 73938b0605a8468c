package ringwal_test

// Benchmarks of the public API:
//
//	BenchmarkEngine/{Memory,Buffered,Write,Fsync}/EnqueueDequeueAck
//	BenchmarkEngine/Latency
//	BenchmarkChanBaseline
//	BenchmarkRecovery
//
// ns/op is per message (one enqueue, one dequeue, one ack); msgs/s is
// reported alongside.

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringwal/ringwal"
)

const benchPayloadSize = 128

func BenchmarkEngine(b *testing.B) {
	modes := []struct {
		name        string
		memory      bool
		durability  ringwal.Durability
		parallelism int // 0 = GOMAXPROCS goroutines
	}{
		{"Memory", true, ringwal.Write, 0},
		{"Buffered", false, ringwal.Buffered, 0},
		{"Write", false, ringwal.Write, 64},
		{"Fsync", false, ringwal.Fsync, 64},
	}
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			b.Run("EnqueueDequeueAck", func(b *testing.B) {
				dir := ""
				if !m.memory {
					dir = b.TempDir()
				}
				benchEnqueueDequeueAck(b, dir, m.durability, m.parallelism)
			})
		})
	}
	b.Run("Latency", benchLatency)
}

func benchEnqueueDequeueAck(b *testing.B, dir string, d ringwal.Durability, parallelism int) {
	e, err := ringwal.Open(dir, ringwal.Options{Durability: d, TierCapacity: 1 << 16, MaxMessages: 1 << 17})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Close() })
	runEnqueueDequeueAck(b, e, parallelism)
}

// runEnqueueDequeueAck is the measured loop of the EnqueueDequeueAck
// benchmarks: every goroutine enqueues a 128-byte payload (reused), takes
// one message and acks it.
func runEnqueueDequeueAck(b *testing.B, e *ringwal.Engine, parallelism int) {
	runEnqueueDequeueAckKeyed(b, e, parallelism, nil)
}

// runEnqueueDequeueAckKeyed is runEnqueueDequeueAck with each message's
// Key taken in turn from keys (nil: no Key).
func runEnqueueDequeueAckKeyed(b *testing.B, e *ringwal.Engine, parallelism int, keys []string) {
	payload := make([]byte, benchPayloadSize)
	if parallelism > 0 {
		b.SetParallelism(parallelism)
	}
	ctx := context.Background()
	var next atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m := ringwal.Message{Payload: payload}
			if len(keys) > 0 {
				m.Key = keys[next.Add(1)%uint64(len(keys))]
			}
			if _, err := e.Enqueue(ctx, m); err != nil {
				b.Error(err)
				return
			}
			var dl ringwal.Delivery
			for {
				var ok bool
				if dl, ok = e.TryDequeue(); ok {
					break
				}
				runtime.Gosched()
			}
			if err := e.Ack(dl.Lease); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// latencyWindow bounds the messages in flight in benchLatency. An
// open-loop producer outruns the single consumer, and the latency measured
// would then be the queue's depth times the service time; with a window of
// one, each sample is the hand-off: Enqueue, waking the blocked consumer,
// Dequeue.
const latencyWindow = 1

// benchLatency: one producer, one consumer, memory mode; the payload
// carries the enqueue time, and the consumer records enqueue-to-dequeue
// latency.
func benchLatency(b *testing.B) {
	e, err := ringwal.Open("", ringwal.Options{TierCapacity: 1 << 16, MaxMessages: 1 << 17})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Close() })
	n := b.N
	lat := make([]int64, n)
	bufs := make([]byte, 8*n) // one payload per message: the engine keeps it by reference
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()

	tokens := make(chan struct{}, latencyWindow)
	for i := 0; i < latencyWindow; i++ {
		tokens <- struct{}{}
	}
	done := make(chan error, 1)
	go func() {
		for i := 0; i < n; i++ {
			d, err := e.Dequeue(ctx)
			if err != nil {
				done <- err
				return
			}
			lat[i] = time.Now().UnixNano() - int64(binary.LittleEndian.Uint64(d.Message.Payload))
			if err := e.Ack(d.Lease); err != nil {
				done <- err
				return
			}
			tokens <- struct{}{}
		}
		done <- nil
	}()
	for i := 0; i < n; i++ {
		<-tokens
		p := bufs[8*i : 8*i+8 : 8*i+8]
		binary.LittleEndian.PutUint64(p, uint64(time.Now().UnixNano()))
		if _, err := e.Enqueue(ctx, ringwal.Message{Payload: p}); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[n/2]), "p50-ns")
	b.ReportMetric(float64(lat[min(n-1, n*99/100)]), "p99-ns")
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkChanBaseline is the floor: a send and a receive of a 128-byte
// payload through a buffered channel, shaped like Memory/EnqueueDequeueAck.
func BenchmarkChanBaseline(b *testing.B) {
	ch := make(chan []byte, 1<<16)
	payload := make([]byte, benchPayloadSize)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			ch <- payload
			<-ch
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

const recoveryMessages = 1_000_000

var (
	recoveryOnce sync.Once
	recoveryDir  string // removed by TestMain
	recoveryErr  error
)

func recoveryOptions() ringwal.Options {
	return ringwal.Options{Durability: ringwal.Buffered, TierCapacity: 1 << 20, MaxMessages: 1 << 20}
}

// buildRecoveryDir writes recoveryMessages pending 128-byte messages.
func buildRecoveryDir() (string, error) {
	dir, err := os.MkdirTemp("", "ringwal-recovery-")
	if err != nil {
		return "", err
	}
	e, err := ringwal.Open(dir, recoveryOptions())
	if err != nil {
		return dir, err
	}
	payload := make([]byte, benchPayloadSize)
	batch := make([]ringwal.Message, 1000)
	for i := range batch {
		batch[i] = ringwal.Message{Payload: payload}
	}
	for n := 0; n < recoveryMessages; n += len(batch) {
		if _, err := e.EnqueueBatch(context.Background(), batch); err != nil {
			_ = e.Close()
			return dir, err
		}
	}
	if got := e.Stats().Pending; got != recoveryMessages {
		_ = e.Close()
		return dir, errors.New("recovery setup: wrong pending count")
	}
	return dir, e.Close()
}

// BenchmarkRecovery times Open of a directory holding a million pending
// messages: snapshot load, log replay and rebuilding the tiers.
func BenchmarkRecovery(b *testing.B) {
	if testing.Short() {
		b.Skip("builds a million-message directory")
	}
	recoveryOnce.Do(func() { recoveryDir, recoveryErr = buildRecoveryDir() })
	if recoveryErr != nil {
		b.Fatal(recoveryErr)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e, err := ringwal.Open(recoveryDir, recoveryOptions())
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if got := e.Stats().Pending; got != recoveryMessages {
			b.Errorf("recovered %d pending messages, want %d", got, recoveryMessages)
		}
		if err := e.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(recoveryMessages)*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
