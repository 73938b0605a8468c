package ringwal_test

import (
	"math"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ringwal/ringwal"
)

// BenchmarkMemoryPerMessage reports the engine's heap overhead per queued
// message (B/msg): the heap in use (runtime.MemStats.HeapInuse, after a
// GC) with 10^6 messages of 128-byte payloads pending in a memory-only
// engine, minus the same before Open, minus the payloads themselves, over
// 10^6. The engine keeps the caller's payload slice (it does not copy it),
// so each message gets its own 128-byte payload, as a producer's would;
// what is left is the slab record, the ring slot, and whatever else the
// engine holds per message or at all (its rings and slab chunks, counted
// in). MaxMessages and TierCapacity are 1<<20, so that the backlog fits.
// With -short it queues 10^5 messages instead. Use -benchtime 1x: one
// iteration is the whole measurement.
func BenchmarkMemoryPerMessage(b *testing.B) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	const size = 128
	o := ringwal.Options{MaxMessages: 1 << 20, TierCapacity: 1 << 20}
	var perMsg, heapPerMsg float64
	for range b.N {
		perMsg, heapPerMsg = memoryPerMessage(b, o, n, size)
	}
	b.ReportMetric(perMsg, "B/msg")
	b.ReportMetric(heapPerMsg, "heap-B/msg")
}

// memoryPerMessage queues n messages of size-byte payloads and returns the
// heap in use per message without the payloads (overhead), and with them.
func memoryPerMessage(b *testing.B, o ringwal.Options, n, size int) (overhead, total float64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	e, err := ringwal.Open("", o)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	for range n {
		if _, err := e.TryEnqueue(ringwal.Message{Payload: make([]byte, size)}); err != nil {
			b.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if got := e.Stats().Pending; got != n {
		b.Fatalf("%d pending, want %d", got, n)
	}
	runtime.KeepAlive(e)
	used := float64(after.HeapInuse) - float64(before.HeapInuse)
	return (used - float64(n*size)) / float64(n), used / float64(n)
}

// emptyEngineHeap returns the heap an engine opened with the default
// Options holds before its first message: runtime.MemStats.HeapAlloc
// after a GC with the engine open, minus the same before Open. dir ""
// opens it memory-only.
func emptyEngineHeap(tb testing.TB, dir string) float64 {
	tb.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	e, err := ringwal.Open(dir, ringwal.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(e)
	if err := e.Close(); err != nil {
		tb.Fatal(err)
	}
	return float64(after.HeapAlloc) - float64(before.HeapAlloc)
}

// BenchmarkEmptyEngineHeap reports the heap an empty engine holds with the
// default Options (heap-B/engine), memory-only and with a directory. Use
// -benchtime 1x: one iteration is the whole measurement; more iterations
// report the last one's.
func BenchmarkEmptyEngineHeap(b *testing.B) {
	for _, mode := range []string{"memory", "dir"} {
		b.Run(mode, func(b *testing.B) {
			var heap float64
			for range b.N {
				dir := ""
				if mode == "dir" {
					dir = b.TempDir()
				}
				heap = emptyEngineHeap(b, dir)
			}
			b.ReportMetric(heap, "heap-B/engine")
		})
	}
}

// TestEmptyEngineHeapIsUnderOneMiB: an engine with the default Options
// that holds nothing costs less than 1 MiB of heap, memory-only and with a
// directory (issue 26; the housekeeper's timer feed alone was 3 MiB). The
// least of three measurements, so that a goroutine of an earlier test
// allocating meanwhile does not count.
func TestEmptyEngineHeapIsUnderOneMiB(t *testing.T) {
	const limit = 1 << 20
	for _, mode := range []string{"memory", "dir"} {
		t.Run(mode, func(t *testing.T) {
			least := math.Inf(1)
			for range 3 {
				dir := ""
				if mode == "dir" {
					dir = t.TempDir()
				}
				least = min(least, emptyEngineHeap(t, dir))
			}
			t.Logf("%.0f B", least)
			assert.Less(t, least, float64(limit))
		})
	}
}
