package bench

// W5: latency under a fixed offered load. Open-loop producers send at
// intended times fixed in advance (message i at start + i/rate), whatever
// the peer's answers; each latency is measured from the message's
// intended send time, so a peer that stalls is charged for every message
// that should have gone out meanwhile (no coordinated omission). A pool of
// producers takes the slots in order: a producer that is free sleeps (then
// yields in a loop for the last 2.5 ms) until its slot's time, stamps the intended time
// into the payload, and calls the peer's enqueue; a consumer's handler
// reads the stamp as it starts.
//
//	BenchmarkW5/<peer>/<rate>    rate: 1k, 10k, 100k, 1M msgs/s (those the peer can reach), or
//	                             10pct, 50pct, 80pct of the peer's W2 capacity (when known, see w5Capacity)
//	BenchmarkW5/fsync-floor/128B this machine's write(2)+fsync(2) latency on b.TempDir()'s file system
//	BenchmarkW5/fsync-floor/128B-beside-16-yielders  the same beside 16 goroutines yielding in a loop
//
// Each run offers rate × 2 s of messages (-short: 300 at the first rate),
// 128 B each, and reports, in µs: e2e-p50-us … e2e-max-us (intended send →
// handler start) and enq-p50-us … enq-max-us (intended send → the enqueue
// call's return); offered-msgs/s; msgs/s, the rate achieved; and
// sustained, 0 when the producers fell more than w5MaxBehind behind the
// schedule (the run then stops offering: the peer cannot carry that rate).
// Run W5 with -benchtime 1x: b.N is ignored (a run is its rate × duration).

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ringwal/ringwal"
)

// w5Peer is one W5 peer: how to open it, the cap its producer pool may
// grow to (enough concurrent calls to carry the highest rate through its
// enqueue latency) and the highest absolute rate it is offered when its
// W2 capacity is not given (see w5Capacity).
type w5Peer struct {
	name      string
	open      peerOpener
	producers int
	reach     float64
}

// w5Peers: reach is a guess from past W2 results (64P4C 128 B), used only
// when the run is not given the capacity (then 90 % of it is the reach).
// The first rate, 1k, runs whatever the reach.
var w5Peers = []w5Peer{
	{"chan", openChan, 1, 1e6},
	{"ringwal-memory", openRingwal(ringwal.Buffered, true), 1, 1e6},
	{"ringwal-write", openRingwal(ringwal.Write, false), 16, 1e5},
	{"ringwal-fsync", openRingwal(ringwal.Fsync, false), 64, 1e5},
	{"jetstream", openJetStream(false), 64, 1e4},
	{"jetstream-sync", openJetStream(true), 64, 1e3},
	{"goqite", openGoqite, 64, 1e3},
	{"river-sqlite", openRiverSQLite, 64, 1e3},
	{"river-postgres", openRiverPostgres, 64, 1e3},
	{"asynq-everysec", openAsynq("everysec"), 64, 1e4},
	{"asynq-always", openAsynq("always"), 64, 1e4},
}

var w5Rates = []struct {
	name string
	rate float64
}{{"1k", 1e3}, {"10k", 1e4}, {"100k", 1e5}, {"1M", 1e6}}

var w5Fractions = []struct {
	name string
	frac float64
}{{"10pct", 0.10}, {"50pct", 0.50}, {"80pct", 0.80}}

// w5Duration is how long each run offers its rate.
const w5Duration = 2 * time.Second

// w5Pool0 is how many producers a run starts with; w5Grow is how late a
// slot must be when a producer takes it for the pool to grow by one.
const (
	w5Pool0 = 4
	w5Grow  = 200 * time.Microsecond
)

// w5MaxBehind: a producer that returns this long after its slot's
// intended time ends the offering; the rate is not sustained.
const w5MaxBehind = time.Second

// w5Capacity reads RINGWAL_BENCH_W5_CAPACITY ("peer=msgs/s,peer=msgs/s",
// which go run ./report sets from the W1 and W2 results it has just
// measured): each peer's capacity, or 0 when not given.
func w5Capacity(peer string) float64 {
	for _, kv := range strings.Split(os.Getenv("RINGWAL_BENCH_W5_CAPACITY"), ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok && strings.TrimSpace(k) == peer {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f
		}
	}
	return 0
}

func BenchmarkW5(b *testing.B) {
	b.Run("fsync-floor/128B", func(b *testing.B) { w5FsyncFloor(b, 0) })
	b.Run("fsync-floor/128B-beside-16-yielders", func(b *testing.B) { w5FsyncFloor(b, 16) })
	for _, p := range w5Peers {
		b.Run(p.name, func(b *testing.B) {
			capacity := w5Capacity(p.name)
			reach := p.reach
			if capacity > 0 {
				reach = 0.9 * capacity
			}
			for i, r := range w5Rates {
				b.Run(r.name, func(b *testing.B) {
					switch {
					case testing.Short() && i > 0:
						b.Skip("-short: the first rate only")
					case r.rate > reach && i > 0:
						b.Skipf("%s: %s msgs/s is beyond its reach (%.0f msgs/s)", p.name, r.name, reach)
					}
					w5Run(b, p, r.rate)
				})
			}
			for _, f := range w5Fractions {
				b.Run(f.name, func(b *testing.B) {
					switch {
					case testing.Short():
						b.Skip("-short: the first rate only")
					case capacity == 0:
						b.Skipf("%s: no W2 capacity given (RINGWAL_BENCH_W5_CAPACITY; go run ./report sets it)", p.name)
					}
					w5Run(b, p, f.frac*capacity)
				})
			}
		})
	}
}

// clock0 is the origin of the monotonic nanoseconds W5 stamps into payloads.
var clock0 = time.Now()

func nowNs() int64 { return int64(time.Since(clock0)) }

// stamp writes t into the payload's first 16 bytes as hex (printable, for
// the peers that store text).
func stamp(pl []byte, t int64) {
	const hex = "0123456789abcdef"
	for i := 15; i >= 0; i-- {
		pl[i] = hex[t&15]
		t >>= 4
	}
}

func stampOf(pl []byte) int64 {
	var t int64
	for _, c := range pl[:16] {
		d := int64(c - '0')
		if c >= 'a' {
			d = int64(c-'a') + 10
		}
		t = t<<4 | d
	}
	return t
}

// recorder is a set of HDR histograms (ns, 3 significant digits, up to a
// minute), sharded so that concurrent handlers do not share a lock.
type recorder struct {
	next   atomic.Uint32
	shards [8]struct {
		mu sync.Mutex
		h  *hdrhistogram.Histogram
		_  [64 - 16]byte // a cache line each
	}
}

const recorderMax = int64(time.Minute)

func newRecorder() *recorder {
	r := &recorder{}
	for i := range r.shards {
		r.shards[i].h = hdrhistogram.New(1, recorderMax, 3)
	}
	return r
}

func (r *recorder) record(ns int64) {
	s := &r.shards[r.next.Add(1)%uint32(len(r.shards))]
	s.mu.Lock()
	s.h.RecordValue(min(max(ns, 1), recorderMax))
	s.mu.Unlock()
}

// merged is every shard's histogram in one.
func (r *recorder) merged() *hdrhistogram.Histogram {
	h := hdrhistogram.New(1, recorderMax, 3)
	for i := range r.shards {
		r.shards[i].mu.Lock()
		h.Merge(r.shards[i].h)
		r.shards[i].mu.Unlock()
	}
	return h
}

// reportPercentiles reports h's p50, p99, p99.9 and max in µs as
// <prefix>-p50-us and so on.
func reportPercentiles(b *testing.B, prefix string, h *hdrhistogram.Histogram) {
	us := func(v int64) float64 { return float64(v) / 1e3 }
	b.ReportMetric(us(h.ValueAtQuantile(50)), prefix+"-p50-us")
	b.ReportMetric(us(h.ValueAtQuantile(99)), prefix+"-p99-us")
	b.ReportMetric(us(h.ValueAtQuantile(99.9)), prefix+"-p99.9-us")
	b.ReportMetric(us(h.Max()), prefix+"-max-us")
}

// waitUntil returns at t (nowNs's clock): it sleeps while t is more than
// 3 ms away, then yields (runtime.Gosched) until t. On the 2-core VM
// these results come from, time.Sleep overshoots by about 1 ms (p50; 2.6 ms
// p99 for a 200 µs sleep), which a finer sleep would charge to the peer.
func waitUntil(t int64) {
	for {
		d := t - nowNs()
		switch {
		case d <= 0:
			return
		case d > 3_000_000:
			time.Sleep(time.Duration(d - 2_500_000))
		default:
			runtime.Gosched()
		}
	}
}

// w5Run offers rate msgs/s to a fresh instance of p for w5Duration.
func w5Run(b *testing.B, p w5Peer, rate float64) {
	n := int(rate * w5Duration.Seconds())
	if testing.Short() {
		n = 300
	}
	e2e, enq := newRecorder(), newRecorder()
	var consumed atomic.Int64
	q := p.open(b, func(pl []byte) {
		e2e.record(nowNs() - stampOf(pl))
		consumed.Add(1)
	})
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			q.stop()
		}
	}
	defer stop()
	tmpl := payload(Small)
	interval := 1e9 / rate
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer watchdog(watchdogTimeout(), b.Name())()
	runtime.GC()
	b.ResetTimer()
	start := nowNs() + int64(10*time.Millisecond)
	var next, sent atomic.Int64
	var behind atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, p.producers)
	// The pool starts small and grows, up to p.producers, whenever a
	// producer takes a slot already w5Grow late while every other
	// producer is in a call: a pool sized for the highest rate would, at a low one,
	// keep dozens of producers yielding in waitUntil on 2 cores and starve
	// the peer it measures (ringwal-fsync at 1k msgs/s: p50 1.3–2.3 ms
	// with 64 producers, 0.2 ms with 8).
	var pool, busy atomic.Int32
	var producer func()
	grow := func() {
		for {
			k := pool.Load()
			if int(k) >= p.producers {
				return
			}
			if pool.CompareAndSwap(k, k+1) {
				wg.Add(1)
				go producer()
				return
			}
		}
	}
	producer = func() {
		defer wg.Done()
		for {
			i := next.Add(1) - 1
			if i >= int64(n) || behind.Load() {
				return
			}
			t := start + int64(float64(i)*interval)
			if nowNs()-t > int64(w5Grow) && busy.Load()+1 >= pool.Load() {
				grow() // late, and every other producer is in a call
			}
			// Built before the slot's time, so that its cost is not charged
			// to the peer.
			pl := make([]byte, len(tmpl)) // a peer may keep the slice it was given
			copy(pl, tmpl)
			stamp(pl, t)
			waitUntil(t)
			busy.Add(1)
			err := q.send(ctx, pl)
			busy.Add(-1)
			if err != nil {
				errs <- err
				behind.Store(true)
				return
			}
			d := nowNs() - t
			enq.record(d)
			sent.Add(1)
			if d > int64(w5MaxBehind) {
				behind.Store(true)
			}
		}
	}
	for range min(w5Pool0, p.producers) {
		grow()
	}
	wg.Wait()
	offeredFor := nowNs() - start
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	// Every message sent must reach a handler.
	for deadline := time.Now().Add(2 * time.Minute); consumed.Load() < sent.Load(); time.Sleep(100 * time.Microsecond) {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d messages handled 2 minutes after the last send", consumed.Load(), sent.Load())
		}
	}
	b.StopTimer()
	if q.settled != nil && !behind.Load() {
		if err := q.settled(int(sent.Load())); err != nil {
			b.Fatalf("after the run: %v", err)
		}
	}
	stop()
	reportPercentiles(b, "e2e", e2e.merged())
	reportPercentiles(b, "enq", enq.merged())
	b.ReportMetric(rate, "offered-msgs/s")
	b.ReportMetric(float64(sent.Load())/(float64(offeredFor)/1e9), "msgs/s")
	sustained := 1.0
	if behind.Load() {
		sustained = 0
		b.Logf("%s: not sustained at %.0f msgs/s: a send returned over %v after its intended time (%d of %d sent)",
			p.name, rate, w5MaxBehind, sent.Load(), n)
	}
	b.ReportMetric(sustained, "sustained")
}

// w5FsyncFloor measures this machine's fsync latency on the file system
// the durable peers use: a loop of a 128-byte append and fsync(2) on one
// file, 2000 times (-short: 50). Its metrics are e2e-p50-us … e2e-max-us
// (one write+fsync each) so the report puts them beside the peers'.
//
// With yielders > 0, that many goroutines run waitUntil's yield loop
// (runtime.Gosched) meanwhile, as the producers of a W5 run do while they
// wait for their slots: on 2 vCPUs the thread returning from fsync(2) then
// waits for a CPU, and this is the floor a durable peer's e2e latency
// meets under W5's open-loop producers.
func w5FsyncFloor(b *testing.B, yielders int) {
	n := 2000
	if testing.Short() {
		n = 50
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	defer func() { stop.Store(true); wg.Wait() }()
	for range yielders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				runtime.Gosched()
			}
		}()
	}
	f, err := os.Create(filepath.Join(b.TempDir(), "fsync"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	h := hdrhistogram.New(1, recorderMax, 3)
	pl := payload(Small)
	b.ResetTimer()
	for range n {
		t := time.Now()
		if _, err := f.Write(pl); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		h.RecordValue(int64(time.Since(t)))
	}
	b.StopTimer()
	reportPercentiles(b, "e2e", h)
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "msgs/s")
}
