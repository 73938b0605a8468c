// Package enginetest holds the helpers that the tests of the root package
// and of the packages built on it (admin, prom) share: opening an engine
// that closes with the test, waiting for a delivery, filling the
// dead-letter store, and measuring bytes allocated. It is imported
// by tests only; nothing in the engine depends on it.
package enginetest

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
)

// WaitFor is how long Dequeue waits, in real time, for a delivery.
const WaitFor = 5 * time.Second

// Open opens an engine on dir ("" for memory only) and closes it when the
// test ends.
func Open(t testing.TB, dir string, o ringwal.Options) *ringwal.Engine {
	t.Helper()
	e, err := ringwal.Open(dir, o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// Dequeue waits (real time, up to WaitFor) until a delivery is ready and
// returns it; the test fails if none is.
func Dequeue(t testing.TB, e *ringwal.Engine) ringwal.Delivery {
	t.Helper()
	var d ringwal.Delivery
	require.Eventually(t, func() bool {
		var ok bool
		d, ok = e.TryDequeue()
		return ok
	}, WaitFor, time.Millisecond, "no delivery became ready")
	return d
}

// DeadLetterN enqueues n messages of key and dead-letters each at once (a
// Permanent nack), in batches, returning their IDs in order.
func DeadLetterN(t testing.TB, e *ringwal.Engine, key string, n int) []ringwal.ID {
	t.Helper()
	ctx := context.Background()
	cause := classify.Mark(errors.New("rejected"), classify.Permanent)
	ids := make([]ringwal.ID, 0, n)
	for len(ids) < n {
		batch := make([]ringwal.Message, min(n-len(ids), 512))
		for i := range batch {
			batch[i] = ringwal.Message{Key: key, Payload: []byte("x")}
		}
		got, err := e.EnqueueBatch(ctx, batch)
		require.NoError(t, err)
		ds, err := e.DequeueBatch(ctx, len(got))
		require.NoError(t, err)
		require.Len(t, ds, len(got))
		for _, d := range ds {
			require.NoError(t, e.Nack(d.Lease, cause))
			ids = append(ids, d.ID)
		}
	}
	return ids
}

// BytesPerRun is the average heap allocation, in bytes, of a call of f
// (testing.AllocsPerRun counts allocations, not their size).
func BytesPerRun(runs int, f func()) uint64 {
	f() // warm up
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(runs)
}

// AwaitSamples moves the engine's fake clock on in 1-second steps (each a
// maintenance pass of the engine's timer goroutine, which takes a sample
// every 10 s of engine time) until the engine has taken n more samples.
// Before each step it waits until the goroutine has armed its next timer
// (the engine's one clock timer), so that every step is one pass and the
// clock never runs ahead of the samples.
func AwaitSamples(t testing.TB, e *ringwal.Engine, fake *clock.Fake, n int) {
	t.Helper()
	newest := func() time.Time {
		if h := e.History(); len(h) > 0 {
			return h[len(h)-1].Start
		}
		return time.Time{}
	}
	for range n {
		was := newest()
		for steps := 0; ; steps++ {
			fake.BlockUntil(1) // the last pass is over
			if !newest().Equal(was) {
				break
			}
			require.Less(t, steps, 20, "no sample came")
			fake.Advance(time.Second)
		}
	}
}

// KeyPaused reports whether e's Stats list key as paused.
func KeyPaused(e *ringwal.Engine, key string) bool {
	for _, k := range e.Stats().Keys {
		if k.Key == key {
			return k.Paused
		}
	}
	return false
}

// QueueInfo returns the QueueInfo e lists for the queue named name.
func QueueInfo(e *ringwal.Engine, name string) (ringwal.QueueInfo, bool) {
	for _, in := range e.Queues() {
		if in.Name == name {
			return in, true
		}
	}
	return ringwal.QueueInfo{}, false
}

// Schedule returns the ScheduleInfo e lists for the schedule named name;
// the test fails at once if there is none.
func Schedule(t testing.TB, e *ringwal.Engine, name string) ringwal.ScheduleInfo {
	t.Helper()
	for _, in := range e.Schedules() {
		if in.Name == name {
			return in
		}
	}
	t.Fatalf("no schedule %q", name)
	return ringwal.ScheduleInfo{}
}
