package ringwal_test

import (
	"context"
	"crypto/rand"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringwal/ringwal"
)

// countWriter counts what a backup writes and throws it away.
type countWriter struct{ n atomic.Int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n.Add(int64(len(p))); return len(p), nil }

// BenchmarkEnqueueWhileBackingUp: producers' Enqueue (acked and freed by
// consumers) with nothing else, with checkpoints back to back, and with
// backups back to back (each lists and copies; none checkpoints), in
// Write and Fsync mode: backup-loop against idle is what the listing and
// the copy cost producers, checkpoint-loop what a checkpoint would. It
// reports each Enqueue's p99 and worst latency besides ns/op: a backup
// must stall producers no longer than about one group commit.
func BenchmarkEnqueueWhileBackingUp(b *testing.B) {
	for _, mode := range []ringwal.Durability{ringwal.Write, ringwal.Fsync} {
		for _, loop := range []string{"idle", "checkpoint-loop", "backup-loop"} {
			b.Run(mode.String()+"/"+loop, func(b *testing.B) { benchEnqueueWhileBackingUp(b, mode, loop) })
		}
	}
}

func benchEnqueueWhileBackingUp(b *testing.B, mode ringwal.Durability, loop string) {
	e, err := ringwal.Open(b.TempDir(), ringwal.Options{Durability: mode})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	payload := make([]byte, 100)
	_, _ = rand.Read(payload)
	for range 10_000 { // a live set for the snapshots to copy
		if _, err := e.Enqueue(ctxBG, ringwal.Message{Payload: payload}); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(ctxBG)
	defer cancel()
	stop := ctx.Done()
	var wg sync.WaitGroup
	var backups atomic.Int64
	var written countWriter
	if loop != "idle" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				if loop == "backup-loop" {
					_, err = e.Backup(&written)
				} else {
					err = e.Checkpoint()
				}
				if err != nil {
					b.Error(err)
					return
				}
				backups.Add(1)
			}
		}()
	}
	wg.Add(1)
	go func() { // consumers keep the live set steady
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			ds, _ := e.DequeueBatch(ctx, 64)
			ls := make([]ringwal.Lease, len(ds))
			for i, d := range ds {
				ls[i] = d.Lease
			}
			_ = e.AckBatch(ls)
		}
	}()
	var mu sync.Mutex
	var lat []time.Duration
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		mine := make([]time.Duration, 0, 1<<16)
		for pb.Next() {
			t0 := time.Now()
			if _, err := e.Enqueue(ctxBG, ringwal.Message{Payload: payload}); err != nil {
				b.Error(err)
				return
			}
			mine = append(mine, time.Since(t0))
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	b.StopTimer()
	cancel()
	wg.Wait()
	if len(lat) > 0 {
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-µs")
	}
	if loop != "idle" {
		b.ReportMetric(float64(backups.Load()), "loops")
	}
}

// BenchmarkBackup: one backup of an engine holding 10^5 messages of 100
// random bytes (so neither the snapshot nor the log compresses much),
// written to a counting io.Discard: MB/s of backup stream.
func BenchmarkBackup(b *testing.B) {
	e, err := ringwal.Open(b.TempDir(), ringwal.Options{MaxMessages: 1 << 18})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	msgs := make([]ringwal.Message, 1000)
	for range 100 {
		for i := range msgs {
			msgs[i] = ringwal.Message{Payload: make([]byte, 100)}
			_, _ = rand.Read(msgs[i].Payload)
		}
		if _, err := e.EnqueueBatch(ctxBG, msgs); err != nil {
			b.Fatal(err)
		}
	}
	var w countWriter
	if _, err := e.Backup(&w); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(w.n.Load())
	b.ResetTimer()
	for b.Loop() {
		if _, err := e.Backup(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
