package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringwal/ringwal"
)

// Payload sizes. W1, W3 and W4 use Small; W2 uses both.
const (
	Small = 128
	Large = 1024
)

// shape is a producer/consumer count.
type shape struct{ P, C int }

func (s shape) String() string { return fmt.Sprintf("%dP%dC", s.P, s.C) }

// handoffShapes are W1's and W3's: as many consumers as producers.
var handoffShapes = []shape{{1, 1}, {4, 4}, {16, 16}}

// w2Consumers is the fixed number of consumers every W2 peer gets (but
// River, configured as its maintainers benchmark it: riverConfig).
const w2Consumers = 4

// durableShapes are W2's: 1, 8 and 64 producers, always w2Consumers consumers.
var durableShapes = []shape{{1, w2Consumers}, {8, w2Consumers}, {64, w2Consumers}}

// share is producer i's part of n messages split over p producers.
func share(n, p, i int) int {
	s := n / p
	if i < n%p {
		s++
	}
	return s
}

// payload returns a printable payload of size bytes (printable so that the
// SQL peers can store it in a TEXT column unchanged).
func payload(size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}

// countdown counts consumed messages; the consumer that takes the last one
// closes done, which the peers use to stop or wake the other consumers.
// run also closes it (abort) when a producer or consumer fails, so that the
// others return and the failure is reported instead of hanging until the
// watchdog fires.
type countdown struct {
	left  atomic.Int64
	done  chan struct{}
	close sync.Once
}

func newCountdown(n int) *countdown {
	c := &countdown{done: make(chan struct{})}
	c.left.Store(int64(n))
	if n <= 0 {
		c.abort()
	}
	return c
}

// take records one consumed message and reports whether it was the last.
func (c *countdown) take() bool {
	if c.left.Add(-1) == 0 {
		c.abort()
		return true
	}
	return false
}

// takeN records n consumed messages at once (a batch consumer's) and
// reports whether they included the last.
func (c *countdown) takeN(n int) bool {
	if v := c.left.Add(-int64(n)); v <= 0 && v+int64(n) > 0 {
		c.abort()
		return true
	}
	return false
}

// abort closes done (once): every consumer stops.
func (c *countdown) abort() { c.close.Do(func() { close(c.done) }) }

func (c *countdown) finished() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// run is one measured hand-off of b.N messages: c consumers are started,
// then p producers, each sending its share of b.N; the timer covers the
// span from the first start to the last consumer's return. produce(i, n)
// sends n messages as producer i; consume(i) loops until every message has
// been consumed (it calls take on cd, the caller's countdown of b.N, for
// each, and returns once cd is done). The first error aborts cd, so that
// the others stop, and fails the benchmark.
// ns/op is per message; msgs/s is reported alongside.
func run(b *testing.B, s shape, cd *countdown, produce func(i, n int) error, consume func(i int) error) {
	b.Helper()
	n := b.N
	var wg sync.WaitGroup
	errs := make(chan error, s.P+s.C)
	runtime.GC()
	defer watchdog(watchdogTimeout(), b.Name())()
	b.ResetTimer()
	for i := 0; i < s.C; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := consume(i); err != nil {
				errs <- fmt.Errorf("consumer %d: %w", i, err)
				cd.abort()
			}
		}()
	}
	for i := 0; i < s.P; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := produce(i, share(n, s.P, i)); err != nil {
				errs <- fmt.Errorf("producer %d: %w", i, err)
				cd.abort()
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Error(err)
	}
	if b.Failed() {
		b.FailNow()
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "msgs/s")
}

// runRingwal is run for a ringwal engine (W1, W2, W3): producers Enqueue
// size-byte payloads, consumers Dequeue and Ack. With retry (W3), consumer
// i fails 10 % of its handlings, drawing from newRNG(i+1), and Nacks them
// with errTransient instead; only Acks count towards b.N.
func runRingwal(b *testing.B, s shape, e *ringwal.Engine, size int, retry bool) {
	b.Helper()
	runRingwalWith(b, s, e, size, func(ctx context.Context, cd *countdown) func(int) error {
		return func(i int) error {
			r := newRNG(i + 1)
			for !cd.finished() {
				d, err := e.Dequeue(ctx)
				if err != nil {
					if cd.finished() {
						return nil
					}
					return err
				}
				if retry && r.failOneIn10() {
					if err := e.Nack(d.Lease, errTransient); err != nil {
						return err
					}
					continue
				}
				if err := e.Ack(d.Lease); err != nil {
					return err
				}
				cd.take()
			}
			return nil
		}
	})
}

// runRingwalWith runs s against e: the producers enqueue b.N messages of
// size bytes (enqueueN), and consumer gives each consumer's loop, with
// ctx, which ends once the last message was consumed, and the countdown
// it takes from. Afterwards every message must have been acked once
// (checkRingwalAcked).
func runRingwalWith(b *testing.B, s shape, e *ringwal.Engine, size int, consumer func(ctx context.Context, cd *countdown) func(int) error) {
	b.Helper()
	pl := payload(size)
	cd := newCountdown(b.N)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-cd.done; cancel() }()
	run(b, s, cd,
		enqueueN(ctx, e, pl),
		consumer(ctx, cd))
	checkRingwalAcked(b, e)
}

// enqueueN is the ringwal producers' part of run: producer i enqueues n
// messages of pl.
func enqueueN(ctx context.Context, e *ringwal.Engine, pl []byte) func(_, n int) error {
	return func(_, n int) error {
		for range n {
			if _, err := e.Enqueue(ctx, ringwal.Message{Payload: pl}); err != nil {
				return err
			}
		}
		return nil
	}
}

// consumeBatch is the batch consumers' size: DequeueBatch's max.
const consumeBatch = 64

// runRingwalBatch is runRingwal with batch consumers: each takes up to
// consumeBatch messages with DequeueBatch and settles them with one
// AckBatch (which, in a durable engine, waits for the log once).
func runRingwalBatch(b *testing.B, s shape, e *ringwal.Engine, size int) {
	b.Helper()
	runRingwalWith(b, s, e, size, func(ctx context.Context, cd *countdown) func(int) error {
		return func(int) error {
			leases := make([]ringwal.Lease, 0, consumeBatch)
			for !cd.finished() {
				ds, err := e.DequeueBatch(ctx, consumeBatch)
				if err != nil {
					if cd.finished() {
						return nil
					}
					return err
				}
				leases = leases[:0]
				for _, d := range ds {
					leases = append(leases, d.Lease)
				}
				if err := e.AckBatch(leases); err != nil {
					return err
				}
				cd.takeN(len(ds))
			}
			return nil
		}
	})
}

// checkRingwalAcked fails b unless each of b.N messages was acked exactly
// once (none lost, none delivered twice while another never came) and
// nothing is left. Untimed.
func checkRingwalAcked(b *testing.B, e *ringwal.Engine) {
	b.Helper()
	st := e.Stats()
	if live := st.Pending + st.Delayed + st.Leased + st.Held; live != 0 || st.Acked != uint64(b.N) {
		b.Fatalf("after the run: %d acked of %d, %d still live", st.Acked, b.N, live)
	}
}

// watchdog panics, naming what, unless stop is called within d: a peer
// that loses a message would otherwise hang the run.
func watchdog(d time.Duration, what string) (stop func()) {
	t := time.AfterFunc(d, func() {
		panic(fmt.Sprintf("%s: no progress after %v (lost message?)", what, d))
	})
	return func() { t.Stop() }
}

// rng is a tiny per-goroutine xorshift generator (no lock, no allocation).
type rng uint64

func newRNG(seed int) rng { return rng(uint64(seed)*0x9E3779B97F4A7C15 | 1) }

func (r *rng) next() uint64 {
	x := uint64(*r)
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	*r = rng(x)
	return x
}

// failOneIn10 reports true for 10 % of calls.
func (r *rng) failOneIn10() bool { return r.next()%10 == 0 }

// watchdogTimeout is 5 minutes, or RINGWAL_BENCH_WATCHDOG (a duration) when
// set, to chase a hang quickly.
func watchdogTimeout() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("RINGWAL_BENCH_WATCHDOG")); err == nil && d > 0 {
		return d
	}
	return 5 * time.Minute
}
