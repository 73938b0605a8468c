package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/classify"
)

// The three simulated downstream targets; each is a message Key, so each
// has its own circuit breaker.
const (
	keyHealthy = "healthy"
	keyFlaky   = "flaky"
	keyDown    = "down"
)

// targets lists the three keys in display order.
var targets = []string{keyHealthy, keyFlaky, keyDown}

// poisonPrefix marks a payload the demo handler cannot process: it panics.
var poisonPrefix = []byte("POISON")

// Demo tuning. The retry policies are the defaults (classify.DefaultPolicy)
// with every delay divided by policyScale, so that a 20-second demo shows
// retries, backoff and give-ups.
const (
	policyScale = 20
	producers   = 3
	perTick     = 5 // messages per producer every producerTick
	workers     = 16
)

const producerTick = 10 * time.Millisecond

// httpError is what the simulated HTTP clients return: a status code and,
// for a 429, the server's Retry-After. The default classifier reads both
// methods: 429 (or a Retry-After) is RateLimited, 5xx Transient, other 4xx
// Permanent.
type httpError struct {
	code       int
	retryAfter time.Duration
}

// Error returns the status as a client would report it.
func (e *httpError) Error() string {
	if e.retryAfter > 0 {
		return fmt.Sprintf("HTTP %d (Retry-After %s)", e.code, e.retryAfter)
	}
	return fmt.Sprintf("HTTP %d", e.code)
}

// StatusCode returns the HTTP status.
func (e *httpError) StatusCode() int { return e.code }

// RetryAfter returns the server's Retry-After, 0 if none.
func (e *httpError) RetryAfter() time.Duration { return e.retryAfter }

// liveAct is the first act: producers, three downstreams and Run workers
// over one engine, watched on a board.
type liveAct struct {
	dir      string
	duration time.Duration
	out      io.Writer

	start                 time.Time
	outageFrom, outageTil time.Duration // when "down" is down, from start

	mu       sync.Mutex
	breakers map[string]breaker.State
	opened   map[string]int
	events   chan string

	duplicates atomic.Uint64
	enqErrs    atomic.Uint64
	lastErr    atomic.Pointer[error]
}

// liveResult is what the live act leaves for the summary.
type liveResult struct {
	stats    ringwal.Stats
	opened   map[string]int
	breakers map[string]breaker.State
	elapsed  time.Duration
}

// newLiveAct prepares the act: the outage of "down" covers 25% to 55% of it.
func newLiveAct(dir string, d time.Duration, out io.Writer) *liveAct {
	return &liveAct{
		dir: dir, duration: d, out: out,
		outageFrom: d / 4, outageTil: d * 55 / 100,
		breakers: map[string]breaker.State{keyHealthy: breaker.Closed, keyFlaky: breaker.Closed, keyDown: breaker.Closed},
		opened:   map[string]int{},
		events:   make(chan string, 256),
	}
}

// options are the engine options of the live act.
func (l *liveAct) options() ringwal.Options {
	policies := map[classify.Category]classify.RetryPolicy{}
	for _, c := range classify.Categories() {
		p := classify.DefaultPolicy(c)
		p.Base /= policyScale
		p.Max /= policyScale
		policies[c] = p
	}
	return ringwal.Options{
		Durability:   ringwal.Write,
		LeaseTimeout: 2 * time.Second,
		Policies:     policies,
		Breaker: breaker.Options{
			// Ten in a row: the flaky target (about 18% failures) almost
			// never trips, the target that is down trips at once.
			ConsecutiveFailures: 10,
			OpenTimeout:         300 * time.Millisecond,
			MaxOpenTimeout:      1200 * time.Millisecond,
			OnStateChange:       l.onBreaker,
		},
	}
}

// onBreaker records a breaker transition. It runs on an engine goroutine
// and must not block: the event goes to a buffered channel or is dropped.
func (l *liveAct) onBreaker(key string, from, to breaker.State) {
	l.mu.Lock()
	l.breakers[key] = to
	if to == breaker.Open {
		l.opened[key]++
	}
	l.mu.Unlock()
	select {
	case l.events <- fmt.Sprintf("breaker %s: %s -> %s", key, from, to):
	default:
	}
}

// run plays the act: producers for 90% of it, workers throughout, the
// board refreshed every 100ms. It closes the engine before returning.
func (l *liveAct) run(ctx context.Context) (res liveResult, err error) {
	e, err := ringwal.Open(l.dir, l.options())
	if err != nil {
		return res, fmt.Errorf("opening %s: %w", l.dir, err)
	}
	defer closeEngine(e, &err)

	l.start = time.Now()
	actCtx, stop := context.WithTimeout(ctx, l.duration)
	defer stop()
	prodCtx, stopProducers := context.WithTimeout(actCtx, l.duration*9/10)
	defer stopProducers()

	var wg sync.WaitGroup
	for i := 0; i < producers; i++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			l.produce(prodCtx, e, seed)
		}(uint64(i) + 1)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- e.Run(actCtx, workers, l.handle) }()

	b := newBoard(l.out, "live act", l.duration, 5, max(time.Second, l.duration/10))
	b.event(fmt.Sprintf("%d producers, %d workers; %q goes down from %.1fs to %.1fs",
		producers, workers, keyDown, l.outageFrom.Seconds(), l.outageTil.Seconds()))
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	prodDone := prodCtx.Done()
loop:
	for {
		select {
		case <-actCtx.Done():
			break loop
		case ev := <-l.events:
			b.event(ev)
		case <-prodDone:
			prodDone = nil
			b.event("producers stop; workers drain what is ready")
		case <-tick.C:
			lines, compact := l.render(e.Stats())
			b.set(lines, compact)
		}
	}
	wg.Wait()
	if err := <-runErr; err != nil {
		return res, fmt.Errorf("run: %w", err)
	}
	for drained := false; !drained; {
		select {
		case ev := <-l.events:
			b.event(ev)
		default:
			drained = true
		}
	}
	res.stats = e.Stats()
	lines, compact := l.render(res.stats)
	b.finish(lines, compact)
	res.elapsed = time.Since(l.start)
	l.mu.Lock()
	res.opened, res.breakers = maps.Clone(l.opened), maps.Clone(l.breakers)
	l.mu.Unlock()
	if n := l.enqErrs.Load(); n > 0 {
		return res, fmt.Errorf("%d enqueues failed; the last: %v", n, *l.lastErr.Load())
	}
	return res, nil
}

// produce enqueues a realistic mix until ctx ends.
func (l *liveAct) produce(ctx context.Context, e *ringwal.Engine, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, uint64(time.Now().UnixNano())))
	tick := time.NewTicker(producerTick)
	defer tick.Stop()
	var seq int
	var recent []string // dedup IDs, some sent again as client retries would
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for i := 0; i < perTick; i++ {
			seq++
			m := l.message(rng, seed, seq)
			if len(recent) > 0 && rng.IntN(100) == 0 {
				m.DedupID = recent[rng.IntN(len(recent))] // a duplicate
			} else if len(recent) < 64 {
				recent = append(recent, m.DedupID)
			} else {
				recent[rng.IntN(len(recent))] = m.DedupID
			}
			_, err := e.Enqueue(ctx, m)
			switch {
			case err == nil:
			case errors.Is(err, ringwal.ErrDuplicate):
				l.duplicates.Add(1)
			case ctx.Err() != nil || errors.Is(err, ringwal.ErrClosed):
				return
			default:
				l.enqErrs.Add(1)
				l.lastErr.Store(&err)
			}
		}
	}
}

// message makes one message: a target, a priority, sometimes a delay, a
// deadline, a TTL, and now and then a poison payload.
func (l *liveAct) message(rng *rand.Rand, producer uint64, seq int) ringwal.Message {
	var m ringwal.Message
	switch r := rng.IntN(100); {
	case r < 40:
		m.Key = keyHealthy
	case r < 75:
		m.Key = keyFlaky
	default:
		m.Key = keyDown
	}
	switch r := rng.IntN(100); {
	case r < 5:
		m.Priority = ringwal.Critical
	case r < 20:
		m.Priority = ringwal.High
	case r < 70:
		m.Priority = ringwal.Normal
	case r < 90:
		m.Priority = ringwal.Low
	default:
		m.Priority = ringwal.Background
	}
	m.DedupID = fmt.Sprintf("p%d-%d", producer, seq)
	m.Payload = fmt.Appendf(nil, `{"order":"p%d-%d","target":%q}`, producer, seq, m.Key)
	if rng.IntN(1000) < 3 {
		m.Payload = append(append([]byte(nil), poisonPrefix...), m.Payload...)
	}
	if rng.IntN(100) < 10 {
		m.Delay = time.Duration(50+rng.IntN(750)) * time.Millisecond
	}
	if rng.IntN(100) < 10 {
		m.Deadline = time.Now().Add(time.Duration(5+rng.IntN(95)) * time.Millisecond)
	}
	if rng.IntN(100) < 15 {
		m.TTL = time.Duration(300+rng.IntN(1200)) * time.Millisecond
	}
	m.Headers = map[string]string{"content-type": "application/json"}
	return m
}

// handle is the Run handler: it calls the message's downstream. A poison
// payload panics, as a decoding bug would; Run turns that into a Poison
// failure.
func (l *liveAct) handle(_ context.Context, d ringwal.Delivery) error {
	if bytes.HasPrefix(d.Message.Payload, poisonPrefix) {
		panic(fmt.Sprintf("cannot decode order %q", d.Message.Payload))
	}
	rng := rand.New(rand.NewPCG(uint64(d.ID), uint64(d.Attempt)))
	switch d.Message.Key {
	case keyFlaky:
		return l.flaky(rng)
	case keyDown:
		if at := time.Since(l.start); at >= l.outageFrom && at < l.outageTil {
			work(time.Millisecond)
			return fmt.Errorf("POST https://down.example/v1/orders: dial tcp: %w", syscall.ECONNREFUSED)
		}
		work(jitter(rng, 300*time.Microsecond, 2*time.Millisecond))
		return nil
	default:
		work(jitter(rng, 200*time.Microsecond, 1500*time.Microsecond))
		return nil
	}
}

// flaky is a target that fails about one call in five: timeouts, 5xx,
// 429 with Retry-After, and a few 400s that no retry can fix.
func (l *liveAct) flaky(rng *rand.Rand) error {
	r := rng.IntN(100)
	if r < 6 { // our client gives up after 20ms
		work(20 * time.Millisecond)
		return fmt.Errorf("POST https://flaky.example/v1/orders: %w", context.DeadlineExceeded)
	}
	work(jitter(rng, 500*time.Microsecond, 3*time.Millisecond))
	switch {
	case r < 14:
		return &httpError{code: []int{500, 502, 503}[rng.IntN(3)]}
	case r < 18:
		return &httpError{code: 429, retryAfter: jitter(rng, 100*time.Millisecond, 400*time.Millisecond)}
	case r < 19:
		return &httpError{code: 400}
	}
	return nil
}

// work simulates a call taking d. The calls are short (20ms at most, far
// below the 2s lease), so they run to the end even when the act stops:
// stopping the demo should not fail the calls in flight.
func work(d time.Duration) { time.Sleep(d) }

// jitter returns a duration drawn uniformly from [lo, hi).
func jitter(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}

// render formats the board's lines from a stats snapshot.
func (l *liveAct) render(s ringwal.Stats) (lines []string, compact string) {
	l.mu.Lock()
	states := maps.Clone(l.breakers)
	opened := maps.Clone(l.opened)
	l.mu.Unlock()
	lines = []string{
		fmt.Sprintf("  messages  enqueued %s · acked %s · retried %s · duplicates refused %s",
			count(s.Enqueued), count(s.Acked), count(s.Retried), count(s.Duplicates)),
		fmt.Sprintf("  now       pending %s · delayed %s · leased %s · held %s (behind an open breaker)",
			count(s.Pending), count(s.Delayed), count(s.Leased), count(s.Held)),
		"  dead      " + deadLine(s.DeadLetteredByCategory),
		"  breakers  " + breakerLine(states, opened),
		fmt.Sprintf("  latency   handling p50 %s · p99 %s   wait for a worker p99 %s",
			dur(s.Handling.P50), dur(s.Handling.P99), dur(s.Wait.P99)),
	}
	compact = fmt.Sprintf("enqueued %s acked %s retried %s dead %s (%s) | pending %d delayed %d held %d | breakers: %s | p99 %s",
		count(s.Enqueued), count(s.Acked), count(s.Retried), count(s.DeadLettered), deadLine(s.DeadLetteredByCategory),
		s.Pending, s.Delayed, s.Held, breakerLine(states, opened), dur(s.Handling.P99))
	return lines, compact
}

// deadLine lists dead letters by category, the non-zero ones.
func deadLine(by map[classify.Category]uint64) string {
	var parts []string
	for _, c := range classify.Categories() {
		if n := by[c]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", c, count(n)))
		}
	}
	if len(parts) == 0 {
		return "none yet"
	}
	return strings.Join(parts, " · ")
}

// breakerLine lists the breakers' states, with how often each opened.
func breakerLine(states map[string]breaker.State, opened map[string]int) string {
	parts := make([]string, 0, len(targets))
	for _, k := range targets {
		st := states[k].String()
		if states[k] == breaker.Open {
			st = "OPEN"
		}
		if n := opened[k]; n > 0 {
			st += fmt.Sprintf(" (opened %d×)", n)
		}
		parts = append(parts, k+" "+st)
	}
	return strings.Join(parts, " · ")
}
