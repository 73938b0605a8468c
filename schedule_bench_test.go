package ringwal_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/ringwal/ringwal"
)

// BenchmarkScheduleMemory reports what a schedule costs in memory: the
// heap of an engine with 10,000 daily schedules less an empty engine's,
// per schedule (B/schedule), and the goroutines they add (none).
func BenchmarkScheduleMemory(b *testing.B) {
	const n = 10000
	for range b.N {
		e, err := ringwal.Open("", ringwal.Options{})
		if err != nil {
			b.Fatal(err)
		}
		g0 := runtime.NumGoroutine()
		h0 := heapInUse()
		for i := range n {
			if err := e.AddSchedule(ringwal.Schedule{Name: fmt.Sprint("report-", i), Spec: "0 3 * * *",
				Message: ringwal.Message{Queue: "reports", Payload: []byte(`{"report":"daily"}`)}}); err != nil {
				b.Fatal(err)
			}
		}
		h1 := heapInUse()
		b.ReportMetric(float64(h1-h0)/n, "B/schedule")
		b.ReportMetric(float64(runtime.NumGoroutine()-g0), "goroutines")
		_ = e.Close()
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
