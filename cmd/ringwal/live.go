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

// The four simulated downstream targets; each is a message Key, so each
// has its own circuit breaker, and its own pause.
const (
	keyHealthy = "healthy"
	keyFlaky   = "flaky"
	keyDown    = "down"
	keySlack   = "slack" // answers 429 with a Retry-After for a while
)

// queueEmails is the demo's named queue: a share of the messages go
// there, to workers of its own, beside the default queue. Its keys are
// the same downstreams: a key's breaker and pause hold in every queue.
const queueEmails = "emails"

// emailsShare is the percentage of messages enqueued into queueEmails.
const emailsShare = 25

// emailWorkers are the Run workers of queueEmails.
const emailWorkers = 4

// targets lists the keys in display order.
var targets = []string{keyHealthy, keyFlaky, keyDown, keySlack}

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
	limitFrom, limitTil   time.Duration // when "slack" answers 429, from start
	queuePauseAt          time.Duration // when queueEmails is paused, from start
	queuePauseFor         time.Duration // for how long
	retryAfter            time.Duration // the Retry-After it sends
	acked                 map[string]*atomic.Uint64
	pauses                int    // times slack's key was seen newly paused
	ackedWhilePaused      uint64 // acks of the other keys while it was

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
	// pauses counts the times slack's key was paused by a Retry-After;
	// ackedWhilePaused the other keys' acks meanwhile.
	pauses           int
	ackedWhilePaused uint64
	// queuePaused: queueEmails was paused for a while, and the default
	// queue acked defaultAckedWhile meanwhile.
	queuePaused       bool
	defaultAckedWhile uint64
}

// newLiveAct prepares the act: the outage of "down" covers 25% to 55% of
// it; "slack" answers 429 with a Retry-After of a tenth of the act from
// 60% to 80% of it.
func newLiveAct(dir string, d time.Duration, out io.Writer) *liveAct {
	acked := map[string]*atomic.Uint64{}
	for _, k := range targets {
		acked[k] = new(atomic.Uint64)
	}
	return &liveAct{
		dir: dir, duration: d, out: out,
		outageFrom: d / 4, outageTil: d * 55 / 100,
		limitFrom: d * 60 / 100, limitTil: d * 80 / 100, retryAfter: d / 10,
		queuePauseAt: d * 40 / 100, queuePauseFor: d / 10,
		acked:    acked,
		breakers: map[string]breaker.State{keyHealthy: breaker.Closed, keyFlaky: breaker.Closed, keyDown: breaker.Closed, keySlack: breaker.Closed},
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
	runErr := make(chan error, 2)
	go func() { runErr <- e.Run(actCtx, workers, l.handle) }()
	go func() { runErr <- e.Queue(queueEmails).Run(actCtx, emailWorkers, l.handle) }()

	b := newBoard(l.out, "live act", l.duration, 7, max(time.Second, l.duration/10))
	b.event(fmt.Sprintf("two queues: the default one with %d workers, %q with %d (%d%% of the messages); %q is paused from %.1fs to %.1fs",
		workers, queueEmails, emailWorkers, emailsShare, queueEmails, l.queuePauseAt.Seconds(), (l.queuePauseAt + l.queuePauseFor).Seconds()))
	b.event(fmt.Sprintf("%d producers; %q goes down from %.1fs to %.1fs; %q answers 429 Retry-After %s from %.1fs to %.1fs",
		producers, keyDown, l.outageFrom.Seconds(), l.outageTil.Seconds(),
		keySlack, dur(l.retryAfter), l.limitFrom.Seconds(), l.limitTil.Seconds()))
	var lastOthers, defaultAckedAtPause uint64
	slackPaused, queuePaused := false, false
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
			st := e.Stats()
			paused, waiting := slackState(st)
			others := l.othersAcked()
			if paused {
				l.ackedWhilePaused += others - lastOthers
			}
			lastOthers = others
			if paused && !slackPaused {
				l.pauses++
				b.event(fmt.Sprintf("%s answered 429 Retry-After: its key is paused, %d waiting; the other keys go on", keySlack, waiting))
			}
			slackPaused = paused
			if !queuePaused && time.Since(l.start) >= l.queuePauseAt {
				queuePaused = true
				if err := e.Queue(queueEmails).Pause(time.Now().Add(l.queuePauseFor)); err != nil {
					return res, fmt.Errorf("pausing queue %s: %w", queueEmails, err)
				}
				defaultAckedAtPause = defaultAcked(st)
				b.event(fmt.Sprintf("queue %s paused for %s: its messages wait, the default queue goes on", queueEmails, dur(l.queuePauseFor)))
			}
			if queuePaused && !res.queuePaused && time.Since(l.start) >= l.queuePauseAt+l.queuePauseFor {
				res.queuePaused = true
				res.defaultAckedWhile = defaultAcked(st) - defaultAckedAtPause
				b.event(fmt.Sprintf("queue %s resumed by itself; the default queue acked %s meanwhile", queueEmails, count(res.defaultAckedWhile)))
			}
			lines, compact := l.render(st)
			b.set(lines, compact)
		}
	}
	wg.Wait()
	for range 2 {
		if err := <-runErr; err != nil {
			return res, fmt.Errorf("run: %w", err)
		}
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
	res.pauses, res.ackedWhilePaused = l.pauses, l.ackedWhilePaused
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
	case r < 35:
		m.Key = keyHealthy
	case r < 65:
		m.Key = keyFlaky
	case r < 85:
		m.Key = keyDown
	default:
		m.Key = keySlack
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
	if rng.IntN(100) < emailsShare {
		m.Queue = queueEmails
	}
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
	rng := rand.New(rand.NewPCG(d.ID, uint64(d.Attempt)))
	err := l.call(rng, d.Message.Key)
	if err == nil {
		if n := l.acked[d.Message.Key]; n != nil {
			n.Add(1)
		}
	}
	return err
}

// call is one call of key's downstream.
func (l *liveAct) call(rng *rand.Rand, key string) error {
	at := time.Since(l.start)
	switch key {
	case keyFlaky:
		return l.flaky(rng)
	case keyDown:
		if at >= l.outageFrom && at < l.outageTil {
			work(time.Millisecond)
			return fmt.Errorf("POST https://down.example/v1/orders: dial tcp: %w", syscall.ECONNREFUSED)
		}
		work(jitter(rng, 300*time.Microsecond, 2*time.Millisecond))
		return nil
	case keySlack:
		work(jitter(rng, 300*time.Microsecond, 1500*time.Microsecond))
		if at >= l.limitFrom && at < l.limitTil {
			// The whole target waits, not just this message: the engine
			// pauses the key until the Retry-After ends.
			return &httpError{code: 429, retryAfter: l.retryAfter}
		}
		return nil
	default:
		work(jitter(rng, 200*time.Microsecond, 1500*time.Microsecond))
		return nil
	}
}

// othersAcked is the acks of every key but slack.
func (l *liveAct) othersAcked() uint64 {
	var n uint64
	for _, k := range targets {
		if k != keySlack {
			n += l.acked[k].Load()
		}
	}
	return n
}

// slackState reads slack's key from Stats: paused, and how many of its
// messages wait.
func slackState(s ringwal.Stats) (paused bool, waiting int) {
	for _, k := range s.Keys {
		if k.Key == keySlack {
			return k.Paused, k.Waiting
		}
	}
	return false, 0
}

// flaky is a target that fails about one call in five: timeouts, 5xx,
// 429 without a Retry-After (the message backs off alone, its key goes
// on), and a few 400s that no retry can fix.
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
		return &httpError{code: 429} // no Retry-After: this message backs off alone
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
		"  keys      " + l.keysLine(s),
		"  queues    " + queuesLine(s),
		fmt.Sprintf("  latency   handling p50 %s · p99 %s   wait for a worker p99 %s",
			dur(s.Handling.P50), dur(s.Handling.P99), dur(s.Wait.P99)),
	}
	compact = fmt.Sprintf("enqueued %s acked %s retried %s dead %s (%s) | pending %d delayed %d held %d waiting %d | breakers: %s | keys: %s | p99 %s",
		count(s.Enqueued), count(s.Acked), count(s.Retried), count(s.DeadLettered), deadLine(s.DeadLetteredByCategory),
		s.Pending, s.Delayed, s.Held, s.Waiting, breakerLine(states, opened), l.keysLine(s), dur(s.Handling.P99))
	compact += " | queues: " + queuesLine(s)
	return lines, compact
}

// keysLine shows each target's acks, and slack's pause with its waiting
// messages while a Retry-After holds it.
func (l *liveAct) keysLine(s ringwal.Stats) string {
	paused := map[string]ringwal.KeyStats{}
	for _, k := range s.Keys {
		if k.Paused {
			paused[k.Key] = k
		}
	}
	parts := make([]string, 0, len(targets))
	for _, k := range targets {
		part := fmt.Sprintf("%s acked %s", k, count(l.acked[k].Load()))
		if ks, ok := paused[k]; ok {
			until := "until resumed"
			if !ks.PausedUntil.IsZero() {
				until = "for " + dur(time.Until(ks.PausedUntil).Round(10*time.Millisecond))
			}
			part = fmt.Sprintf("%s PAUSED %s (Retry-After), %d waiting", part, until, ks.Waiting)
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, " · ")
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

// defaultAcked is the default queue's acks in s.
func defaultAcked(s ringwal.Stats) uint64 {
	if len(s.Queues) == 0 {
		return 0
	}
	return s.Queues[0].Acked
}

// queuesLine shows each queue's pending messages and acks.
func queuesLine(s ringwal.Stats) string {
	parts := make([]string, 0, len(s.Queues))
	for _, q := range s.Queues {
		name := q.Name
		if name == "" {
			name = "default"
		}
		parts = append(parts, fmt.Sprintf("%s pending %s · acked %s · dead %s", safe(name), count(q.Pending), count(q.Acked), count(q.Dead)))
	}
	return strings.Join(parts, "  |  ")
}
