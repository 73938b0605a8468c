package ringwal

import (
	"bytes"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringwal/ringwal/clock"
)

// These tests drive the coarse clock's ticker from a clock.Fake: a tick is
// an Advance of coarseTick, and the test waits (polling, with no timed
// assertion) until the ticker goroutine has handled it, so every step of
// the park/wake protocol is deterministic.

// newFakeCoarse starts a coarse clock on a fake source; closed at cleanup
// unless the test closed it.
func newFakeCoarse(t *testing.T) (*coarseClock, *clock.Fake) {
	t.Helper()
	f := clock.NewFake(time.Time{})
	c := newCoarseClockOn(f)
	t.Cleanup(func() {
		select {
		case <-c.stop:
		default:
			c.close()
		}
	})
	return c, f
}

// step fires one tick and waits until the ticker has handled it. The
// ticker must be running (armed).
func step(t *testing.T, c *coarseClock, f *clock.Fake) {
	t.Helper()
	if c.ns.Load() == 0 {
		t.Fatal("cannot tick a parked clock")
	}
	// Armed: at start, or after a wake's Reset (polled rather than
	// f.BlockUntil, which would hang a test that went wrong).
	waitFor(t, "the ticker to be armed", func() bool { return f.Waiters() > 0 })
	n := c.ticks.Load()
	f.Advance(coarseTick)
	waitFor(t, "a tick to be handled", func() bool { return c.ticks.Load() > n })
}

// parkNow steps an unread clock until it parks, and waits until it is
// blocked with its ticker stopped.
func parkNow(t *testing.T, c *coarseClock, f *clock.Fake) {
	t.Helper()
	parks := c.parks.Load()
	for i := 0; c.ns.Load() != 0; i++ {
		if i > 2*coarseAskEvery {
			t.Fatalf("not parked after %d unread ticks", i)
		}
		step(t, c, f)
	}
	waitFor(t, "the ticker to park", func() bool { return c.parks.Load() > parks })
}

func fakeNs(f *clock.Fake) int64 { return f.Now().UnixNano() }

// Unread, the ticker asks at tick coarseAskEvery and parks at the next
// question; until then it keeps the cache current.
func TestCoarseClockParksWhenUnread(t *testing.T) {
	c, f := newFakeCoarse(t)
	if got := c.ns.Load(); got != fakeNs(f) {
		t.Fatalf("at start the cache holds %d, want the time %d", got, fakeNs(f))
	}
	for i := 1; i < 2*coarseAskEvery; i++ {
		step(t, c, f)
		want := fakeNs(f)
		if i >= coarseAskEvery {
			want = -want // asked, and nobody answered
		}
		if got := c.ns.Load(); got != want {
			t.Fatalf("after tick %d the cache holds %d, want %d", i, got, want)
		}
	}
	step(t, c, f)
	if got := c.ns.Load(); got != 0 {
		t.Fatalf("after %d unread ticks the cache holds %d, want 0 (parked)", 2*coarseAskEvery, got)
	}
	waitFor(t, "the ticker to park", func() bool { return c.parks.Load() == 1 })
	if n := f.Waiters(); n != 0 {
		t.Fatalf("parked ticker has %d timers armed, want 0", n)
	}
	if n := c.wakes.Load(); n != 0 {
		t.Fatalf("%d wakes without a read", n)
	}
}

// A reader answers the question: a clock read once per question never
// parks, and every read returns the latest tick's time.
func TestCoarseClockReadKeepsItRunning(t *testing.T) {
	c, f := newFakeCoarse(t)
	for i := 1; i <= 10*coarseAskEvery; i++ {
		step(t, c, f)
		if i%coarseAskEvery != 1 {
			continue // read once per question, just after it
		}
		if got, want := c.now(), fakeNs(f); got != want {
			t.Fatalf("tick %d: read %d, want %d", i, got, want)
		}
		if got := c.ns.Load(); got <= 0 {
			t.Fatalf("tick %d: after a read the cache holds %d, want the time (answered)", i, got)
		}
	}
	if n := c.parks.Load(); n != 0 {
		t.Fatalf("parked %d times while read", n)
	}
}

// A read of a parked clock returns the current time, not the time it
// parked at, and wakes the ticker, which then ticks and parks again.
func TestCoarseClockReadWakes(t *testing.T) {
	c, f := newFakeCoarse(t)
	parkNow(t, c, f)
	f.Advance(time.Hour) // parked: no tick fires
	if n := c.ticks.Load(); n != 2*coarseAskEvery {
		t.Fatalf("%d ticks handled while parked, want %d", n, 2*coarseAskEvery)
	}
	if got, want := c.now(), fakeNs(f); got != want {
		t.Fatalf("read of a parked clock: %d, want the current time %d", got, want)
	}
	if got, want := c.now(), fakeNs(f); got != want {
		t.Fatalf("second read: %d, want %d", got, want)
	}
	if n := c.wakes.Load(); n != 1 {
		t.Fatalf("%d wakes, want 1", n)
	}
	step(t, c, f) // waits for the woken ticker to re-arm
	if got, want := c.now(), fakeNs(f); got != want {
		t.Fatalf("after a tick: read %d, want %d", got, want)
	}
	parkNow(t, c, f)
	if n := c.parks.Load(); n != 2 {
		t.Fatalf("%d parks, want 2", n)
	}
}

// Readers racing each other and the ticker, across many park/wake
// cycles, never see time go backwards, and the first reads after a wake
// are current; exactly one of them wakes the ticker. Run with -race.
func TestCoarseClockMonotonicAcrossParkWake(t *testing.T) {
	const (
		readers = 4
		cycles  = 20
	)
	c, f := newFakeCoarse(t)
	last := make([]int64, readers) // per reader, carried across cycles
	var high int64                 // the highest value read in earlier cycles
	for cycle := 0; cycle < cycles; cycle++ {
		parkNow(t, c, f)
		f.Advance(time.Duration(cycle+1) * time.Second)
		released := fakeNs(f)
		var (
			stop  atomic.Bool
			start = make(chan struct{})
			wg    sync.WaitGroup
			mu    sync.Mutex
			errs  []string
		)
		for r := 0; r < readers; r++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for n := 0; n < 100 || !stop.Load(); n++ {
					// Yield: four spinning readers on two cores would
					// starve the ticker and the driver for whole time
					// slices, and the test would crawl.
					runtime.Gosched()
					v := c.now()
					if v < last[r] || v < high || v < released {
						mu.Lock()
						errs = append(errs, "backwards or stale")
						mu.Unlock()
						t.Errorf("cycle %d reader %d: read %d after %d (reader), %d (earlier cycles), %d (time at release)",
							cycle, r, v, last[r], high, released)
						return
					}
					last[r] = v
				}
			}()
		}
		close(start) // all readers find the clock parked at once
		waitFor(t, "a reader to wake the clock", func() bool { return c.wakes.Load() > uint64(cycle) })
		for i := 0; i < 3*coarseAskEvery; i++ {
			step(t, c, f) // read throughout: must not park
		}
		stop.Store(true)
		wg.Wait()
		if len(errs) > 0 {
			t.FailNow()
		}
		for _, v := range last {
			high = max(high, v)
		}
		if n := c.wakes.Load(); n != uint64(cycle+1) {
			t.Fatalf("cycle %d: %d wakes in all, want %d (one per park)", cycle, n, cycle+1)
		}
		if n := c.parks.Load(); n != uint64(cycle+1) {
			t.Fatalf("cycle %d: parked %d times, want %d (not while read)", cycle, n, cycle+1)
		}
	}
}

// close stops the goroutine whether it is running or parked, and reads
// after close return the current time.
func TestCoarseClockClose(t *testing.T) {
	for _, parked := range []bool{false, true} {
		name := map[bool]string{false: "running", true: "parked"}[parked]
		t.Run(name, func(t *testing.T) {
			before := tickerGoroutines()
			c, f := newFakeCoarse(t)
			if parked {
				parkNow(t, c, f)
			} else {
				step(t, c, f)
			}
			c.close()
			waitFor(t, "the ticker goroutine to exit", func() bool { return tickerGoroutines() <= before })
			for i := 0; i < 3; i++ {
				f.Advance(time.Minute)
				if got, want := c.now(), fakeNs(f); got != want {
					t.Fatalf("read after close: %d, want the current time %d", got, want)
				}
			}
			if n := c.wakes.Load(); n != 0 {
				t.Fatalf("reads after close woke the ticker %d times", n)
			}
		})
	}
}

// Many clocks started and closed in every state leave no goroutine.
func TestCoarseClockNoLeak(t *testing.T) {
	before := tickerGoroutines()
	var cs []*coarseClock
	for i := 0; i < 12; i++ {
		c, f := newFakeCoarse(t)
		switch i % 3 {
		case 1:
			step(t, c, f)
		case 2:
			parkNow(t, c, f)
		}
		cs = append(cs, c)
	}
	if n := tickerGoroutines(); n < before+len(cs) {
		t.Fatalf("%d ticker goroutines with %d clocks open, %d before", n, len(cs), before)
	}
	for _, c := range cs {
		c.close()
	}
	waitFor(t, "every ticker goroutine to exit", func() bool { return tickerGoroutines() <= before })
}

// tickerGoroutines counts the coarse clock goroutines in the process.
func tickerGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Count(buf[:n], []byte("ringwal.(*coarseClock).run("))
		}
		buf = make([]byte, 2*len(buf))
	}
}

// On the wall clock, in an engine: an idle engine's clock parks, and the
// next enqueue is stamped with the current time, not the time it parked.
func TestCoarseClockEngineStampAfterPark(t *testing.T) {
	e := openEngine(t, "", Options{})
	// Parked now (not merely once: a slow Open may see it park and wake
	// it), so the cache holds no time and a stale stamp would be a bug.
	waitFor(t, "the idle engine's clock to park", func() bool { return e.coarse.ns.Load() == 0 })
	before := time.Now().UnixNano()
	id, err := e.TryEnqueue(Message{Payload: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now().UnixNano()
	info, err := e.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	if at := info.EnqueuedAt.UnixNano(); at < before || at > after {
		t.Fatalf("enqueued at %d, want within [%d, %d] (the read woke the clock); wakes %d parks %d ticks %d",
			at, before, after, e.coarse.wakes.Load(), e.coarse.parks.Load(), e.coarse.ticks.Load())
	}
	if e.coarse.wakes.Load() == 0 {
		t.Fatal("the enqueue did not wake the clock")
	}
}

// The hot path stays free of allocations.
func TestCoarseClockNowAllocs(t *testing.T) {
	c, _ := newFakeCoarse(t)
	if n := testing.AllocsPerRun(100, func() { _ = c.now() }); n != 0 {
		t.Fatalf("now allocates %v times per call", n)
	}
}

// sinkNs keeps the benchmarks' reads from being optimised away.
var sinkNs int64

// BenchmarkHotPathNow is Engine.now, the hot path's timestamp: one atomic
// load and a branch. The clock never parks while the benchmark reads it.
func BenchmarkHotPathNow(b *testing.B) {
	e, err := Open("", Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	b.ReportAllocs()
	var s int64
	for b.Loop() {
		s += e.now()
	}
	sinkNs = s
}

// BenchmarkHotPathNowParallel is BenchmarkHotPathNow from every core, with
// the ticker's stores (and the readers' answers to its questions)
// invalidating the readers' cache line.
func BenchmarkHotPathNowParallel(b *testing.B) {
	e, err := Open("", Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var s int64
		for pb.Next() {
			s += e.now()
		}
		atomic.AddInt64(&sinkNs, s)
	})
}
