// Command w4prof profiles W4's ringwal restart alone: it builds a store of
// -n pending 128-byte messages (as BenchmarkW4 does: Buffered,
// EnqueueBatch of 1000, then Close), then writes a CPU profile of -opens
// timed restarts (Open with W4's options, then the first TryDequeue) and
// nothing else: a `go test -cpuprofile` of BenchmarkW4 would also profile
// building the store.
//
//	go run ./w4prof -cpuprofile /tmp/open.prof   # then: go tool pprof -top /tmp/open.prof
//	go run ./w4prof -memprofile /tmp/mem.prof    # then: go tool pprof -sample_index=alloc_space -top /tmp/mem.prof
//
// Each restart prints its time, and what it allocated and how many GC
// cycles ran meanwhile: a restart's GC cycles are much of its cost.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/ringwal/ringwal"
)

func main() {
	var (
		n       = flag.Int("n", 1_000_000, "pending messages in the store")
		opens   = flag.Int("opens", 5, "restarts to time and profile")
		dir     = flag.String("dir", "", "store directory (default: a temporary one, removed at the end); an existing store is reused")
		profile = flag.String("cpuprofile", "", "write the CPU profile of the restarts here")
		memprof = flag.String("memprofile", "", "write the allocations of the program, up to the last restart, here")
		ckpt    = flag.Bool("checkpoint", false, "build a store whose backlog is in a checkpoint (the snapshot) rather than in the log")
	)
	flag.Parse()
	if *memprof != "" {
		runtime.MemProfileRate = 16 << 10
	}
	if err := run(*n, *opens, *dir, *profile, *memprof, *ckpt); err != nil {
		log.Fatal(err)
	}
}

// options are BenchmarkW4's.
func options() ringwal.Options {
	return ringwal.Options{Durability: ringwal.Buffered, TierCapacity: 1 << 20, MaxMessages: 1 << 21}
}

func run(n, opens int, dir, profile, memprof string, ckpt bool) error {
	if dir == "" {
		tmp, err := os.MkdirTemp("", "ringwal-w4prof-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	if _, err := os.Stat(filepath.Join(dir, "FORMAT")); err != nil { // nothing there yet
		start := time.Now()
		if err := build(dir, n, ckpt); err != nil {
			return err
		}
		fmt.Printf("built a store of %d pending messages in %v\n", n, time.Since(start).Round(time.Millisecond))
	}
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	for i := range opens {
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		start := time.Now()
		e, err := ringwal.Open(dir, options())
		if err != nil {
			return err
		}
		d, ok := e.TryDequeue()
		took := time.Since(start)
		runtime.ReadMemStats(&m1)
		if memprof != "" && i == opens-1 {
			if err := writeAllocs(memprof); err != nil {
				return err
			}
		}
		if !ok {
			e.Close()
			return fmt.Errorf("nothing to dequeue after Open")
		}
		fmt.Printf("restart %d: %v to first delivery (%d pending; %d MB allocated, %d GC cycles)\n", i, took.Round(time.Millisecond),
			e.Stats().Pending, (m1.TotalAlloc-m0.TotalAlloc)>>20, m1.NumGC-m0.NumGC)
		if err := e.Ack(d.Lease); err != nil {
			e.Close()
			return err
		}
		if err := e.Close(); err != nil {
			return err
		}
	}
	return nil
}

// writeAllocs writes the allocation profile: a profile reflects the
// allocations of the last completed GC cycle, so two cycles run first.
func writeAllocs(path string) error {
	runtime.GC()
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func build(dir string, n int, ckpt bool) error {
	e, err := ringwal.Open(dir, options())
	if err != nil {
		return err
	}
	pl := make([]byte, 128)
	for i := range pl {
		pl[i] = 'a' + byte(i%26)
	}
	batch := make([]ringwal.Message, 1000)
	for i := range batch {
		batch[i] = ringwal.Message{Payload: pl}
	}
	for left := n; left > 0; left -= len(batch) {
		if _, err := e.EnqueueBatch(context.Background(), batch[:min(left, len(batch))]); err != nil {
			e.Close()
			return err
		}
	}
	if ckpt {
		if err := e.Checkpoint(); err != nil {
			e.Close()
			return err
		}
	}
	return e.Close()
}
