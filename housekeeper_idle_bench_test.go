//go:build unix

package ringwal

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"syscall"
	"testing"
	"time"
)

// idleSlice is one benchmark op: that long with nothing to do. Long, so
// that the benchmark's own wake-ups (one per op) do not count.
const idleSlice = 100 * time.Millisecond

// BenchmarkIdleCPU reports what an open engine with no traffic costs: the
// process's CPU (getrusage, user+sys) per wall second while it idles,
// %core, after a burst of traffic. "empty process" is the baseline (the
// runtime's own timers); run it with -run '^$' so that no test leaves
// goroutines behind, and with -benchtime of a few seconds for a stable
// figure. (TestIdleEngineWakesOnlyForDueWork counts the engine's wake-ups
// instead, which cannot fail on a loaded machine.)
func BenchmarkIdleCPU(b *testing.B) {
	for _, bc := range []struct {
		name      string
		open      bool
		disk      bool
		schedules int
	}{
		{name: "empty process"},
		{name: "memory", open: true},
		{name: "disk", open: true, disk: true},
		{name: "disk, 10000 schedules", open: true, disk: true, schedules: 10000},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.open {
				dir := ""
				if bc.disk {
					dir = b.TempDir()
				}
				e, err := Open(dir, Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer e.Close()
				for i := range bc.schedules {
					if err := e.AddSchedule(Schedule{Name: fmt.Sprint("s", i), Spec: "@daily", Message: Message{Payload: []byte("x")}}); err != nil {
						b.Fatal(err)
					}
				}
				benchTraffic(b, e)
			}
			settle()
			b.ResetTimer()
			c0, w0 := processCPU(b), time.Now()
			for range b.N {
				time.Sleep(idleSlice)
			}
			c1, w1 := processCPU(b), time.Now()
			b.StopTimer()
			b.ReportMetric(100*float64(c1-c0)/float64(w1.Sub(w0)), "%core")
		})
	}
}

// benchTraffic runs a burst of traffic through e (on the wall clock),
// leaving a few messages pending.
func benchTraffic(b *testing.B, e *Engine) {
	ctx := context.Background()
	payload := make([]byte, 256)
	for i := 0; i < 5000; i++ {
		if _, err := e.Enqueue(ctx, Message{Payload: payload, Key: fmt.Sprint("k", i%8)}); err != nil {
			b.Fatal(err)
		}
		d, err := e.Dequeue(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Ack(d.Lease); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < 10; i++ {
		if _, err := e.Enqueue(ctx, Message{Payload: payload, TTL: time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
}

// settle lets what the traffic left behind finish before a measurement:
// a collection, and the memory it frees returned to the OS now, so that
// the runtime's background scavenger does not run during the window;
// then a moment for the engine's goroutines to go quiet (the coarse clock
// parks within 32 ms of its last read).
func settle() {
	runtime.GC()
	debug.FreeOSMemory()
	time.Sleep(200 * time.Millisecond)
}

// processCPU is the user plus system CPU time this process has used.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
