package ringwal_test

// A richer SIGKILL crash test than TestCrashRecovery: the child runs
// producers (Delay, TTL, DedupID, Key), consumers (Ack, transient and
// permanent Nack, Extend, abandoned leases) and an operator (Redrive,
// MarkReviewed, PurgeDeadLetters, Checkpoint) concurrently, reporting each
// call on stdout only after it returned nil. The parent kills it at a
// random moment, reopens the directory on a frozen fake clock and checks
// every ID against what the acknowledged calls allow.
//
// Reporting protocol (one write(2) per line, so lines never interleave):
//
//	E id dedup ttl key payload   Enqueue returned (dedup, key "-" when unset; ttl 0/1)
//	? <op line>                  the call <op line> is about to be made
//	A id                         Ack returned nil
//	N id permanent|transient k   Nack of attempt k returned nil
//	Z id                         a lease was abandoned, or a settle found it stale
//	R id / F id                  Redrive returned nil / ErrFull
//	V id note category           MarkReviewed returned nil
//	P id                         PurgeDeadLetters (of the ID's unique Key) deleted it
//	C                            Checkpoint returned nil
//	X text                       the child failed
//
// Every line about a message except E is printed under a per-ID lock held
// across the call, so for one ID the lines are in the order the calls
// happened, and at most one call on it (the last "?" line) was in flight
// at the kill. E is printed after Enqueue returned, without the lock: a
// consumer may report on the message first, which the model allows (E
// only says the enqueue was acknowledged).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/dlq"
)

const (
	richDirEnv  = "RINGWAL_RICH_CRASH_DIR"
	richModeEnv = "RINGWAL_RICH_CRASH_MODE"
	// richTransientMax is the Transient policy's MaxAttempts: a transient
	// nack of attempt k >= richTransientMax dead-letters the message.
	richTransientMax = 3
	richProducers    = 3
	richConsumers    = 3
)

// richOptions are the child's options (and the parent's, plus a clock).
// Breakers never trip: held messages would only blur the model.
func richOptions(mode ringwal.Durability) ringwal.Options {
	fast := func(n int) classify.RetryPolicy {
		return classify.RetryPolicy{MaxAttempts: n, Base: 2 * time.Millisecond, Max: 10 * time.Millisecond,
			Multiplier: 2, Jitter: classify.NoJitter}
	}
	return ringwal.Options{
		Durability:   mode,
		LeaseTimeout: 100 * time.Millisecond,
		Breaker:      breaker.Options{ConsecutiveFailures: -1, FailureRate: -1},
		Policies: map[classify.Category]classify.RetryPolicy{
			classify.Transient: fast(richTransientMax),
			classify.Timeout:   fast(3),
		},
	}
}

// richChild is the child's shared state.
type richChild struct {
	e     *ringwal.Engine
	locks [64]sync.Mutex
}

func (c *richChild) lock(id ringwal.ID) *sync.Mutex { return &c.locks[id%uint64(len(c.locks))] }

// TestCrashRichChild is the child half of TestCrashRichRecovery.
func TestCrashRichChild(t *testing.T) {
	dir := os.Getenv(richDirEnv)
	if dir == "" {
		t.Skip("helper process for TestCrashRichRecovery")
	}
	mode := ringwal.Write
	if os.Getenv(richModeEnv) == "fsync" {
		mode = ringwal.Fsync
	}
	e := childOpen(dir, richOptions(mode))
	ctx, cancel := context.WithTimeout(ctxBG, 30*time.Second)
	defer cancel()
	c := &richChild{e: e}
	var wg sync.WaitGroup
	for g := 0; g < richProducers; g++ {
		wg.Add(1)
		go func() { defer wg.Done(); c.produce(ctx, g) }()
	}
	for g := 0; g < richConsumers; g++ {
		wg.Add(1)
		go func() { defer wg.Done(); c.consume(ctx, g) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); c.operate(ctx) }()
	wg.Wait()
	os.Exit(4) // never killed: the parent took too long
}

func (c *richChild) produce(ctx context.Context, g int) {
	rng := rand.New(rand.NewPCG(uint64(g), uint64(time.Now().UnixNano())))
	var lastDedup string
	var lastID ringwal.ID
	for n := 0; ctx.Err() == nil; n++ {
		time.Sleep(time.Duration(rng.IntN(400)) * time.Microsecond)
		if lastDedup != "" && rng.IntN(8) == 0 {
			id, err := c.e.Enqueue(ctx, ringwal.Message{DedupID: lastDedup, Payload: []byte("repeat")})
			if !errors.Is(err, ringwal.ErrDuplicate) || id != lastID {
				childFail("repeat of dedup %s (first %d): got %d, %v", lastDedup, lastID, id, err)
			}
			continue
		}
		m := ringwal.Message{
			Payload:  []byte(fmt.Sprintf("p%d-%d", g, n)),
			Priority: ringwal.Priority(rng.IntN(5) - 2),
		}
		if rng.IntN(5) == 0 {
			m.Delay = time.Duration(1+rng.IntN(20)) * time.Millisecond
		}
		ttl := 0
		if rng.IntN(5) == 0 {
			m.TTL = time.Duration(30+rng.IntN(300)) * time.Millisecond
			ttl = 1
		}
		if rng.IntN(3) == 0 {
			m.DedupID = fmt.Sprintf("d%d-%d", g, n)
		}
		if rng.IntN(2) == 0 {
			m.Key = fmt.Sprintf("k%d-%d", g, n) // unique: the operator purges by key
		}
		id, err := c.e.Enqueue(ctx, m)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			childFail("enqueue: %v", err)
		}
		childEmit("E %d %s %d %s %s", id, dash(m.DedupID), ttl, dash(m.Key), m.Payload)
		if m.DedupID != "" {
			lastDedup, lastID = m.DedupID, id
		}
	}
}

// settle reports a settling call: "? line" before, line after nil, "Z id"
// after ErrStaleLease (the lease had expired: the call did nothing).
func (c *richChild) settle(id ringwal.ID, line string, call func() error) bool {
	childEmit("? %s", line)
	switch err := call(); {
	case err == nil:
		childEmit("%s", line)
		return true
	case errors.Is(err, ringwal.ErrStaleLease):
		childEmit("Z %d", id)
		return false
	default:
		childFail("%s: %v", line, err)
		return false
	}
}

func (c *richChild) consume(ctx context.Context, g int) {
	rng := rand.New(rand.NewPCG(uint64(100+g), uint64(time.Now().UnixNano())))
	for ctx.Err() == nil {
		dctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		d, err := c.e.Dequeue(dctx)
		cancel()
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				continue
			}
			childFail("dequeue: %v", err)
		}
		id, l := d.ID, d.Lease
		mu := c.lock(id)
		mu.Lock()
		ack := func() error { return c.e.Ack(l) }
		switch r := rng.IntN(100); {
		case r < 5: // abandoned: its lease expires, a Timeout failure
			childEmit("Z %d", id)
		case r < 14:
			c.settle(id, fmt.Sprintf("N %d transient %d", id, d.Attempt), func() error {
				return c.e.Nack(l, classify.Mark(errors.New("flaky"), classify.Transient))
			})
		case r < 21:
			c.settle(id, fmt.Sprintf("N %d permanent %d", id, d.Attempt), func() error {
				return c.e.Nack(l, classify.Mark(errors.New("broken"), classify.Permanent))
			})
		case r < 29:
			switch err := c.e.Extend(l, 200*time.Millisecond); {
			case errors.Is(err, ringwal.ErrStaleLease):
				childEmit("Z %d", id)
			case err != nil:
				childFail("extend %d: %v", id, err)
			default:
				time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
				c.settle(id, fmt.Sprintf("A %d", id), ack)
			}
		default:
			c.settle(id, fmt.Sprintf("A %d", id), ack)
		}
		mu.Unlock()
	}
}

func (c *richChild) operate(ctx context.Context) {
	rng := rand.New(rand.NewPCG(999, uint64(time.Now().UnixNano())))
	for n := 0; ctx.Err() == nil; n++ {
		time.Sleep(time.Duration(2+rng.IntN(8)) * time.Millisecond)
		if rng.IntN(3) == 0 {
			childEmit("? C")
			if err := c.e.Checkpoint(); err != nil {
				childFail("checkpoint: %v", err)
			}
			childEmit("C")
		}
		q := dlq.Query{Limit: 40}
		if rng.IntN(2) == 0 {
			q.Reviewed = dlq.OnlyUnreviewed
		}
		dls, err := c.e.DeadLetters(q)
		if err != nil {
			childFail("dead letters: %v", err)
		}
		for i, d := range dls {
			if rng.IntN(3) != 0 {
				continue
			}
			id := d.ID
			mu := c.lock(id)
			mu.Lock()
			switch rng.IntN(3) {
			case 0:
				childEmit("? R %d", id)
				switch err := c.e.Redrive(id); {
				case err == nil:
					childEmit("R %d", id)
				case errors.Is(err, ringwal.ErrFull):
					childEmit("F %d", id)
				default:
					childFail("redrive %d: %v", id, err)
				}
			case 1:
				line := fmt.Sprintf("V %d n%d-%d %s", id, n, i, d.Category)
				childEmit("? %s", line)
				if err := c.e.MarkReviewed(id, fmt.Sprintf("n%d-%d", n, i)); err != nil {
					childFail("review %d: %v", id, err)
				}
				childEmit("%s", line)
			default:
				if d.Key == "" {
					break
				}
				childEmit("? P %d", id)
				if k, err := c.e.PurgeDeadLetters(dlq.Query{Key: d.Key}); err != nil || k != 1 {
					childFail("purge %d (key %s): %d, %v", id, d.Key, k, err)
				}
				childEmit("P %d", id)
			}
			mu.Unlock()
		}
	}
}

// ---------------------------------------------------------------------------
// The parent

func TestCrashRichRecovery(t *testing.T) {
	if os.Getenv(richDirEnv) != "" {
		t.Skip("in the child")
	}
	for _, tc := range []struct {
		mode          string
		rounds, short int
	}{{"write", 6, 2}, {"fsync", 3, 1}} {
		t.Run(tc.mode, func(t *testing.T) {
			rounds := tc.rounds
			if testing.Short() {
				rounds = tc.short
			}
			for r := 0; r < rounds; r++ {
				t.Run(fmt.Sprintf("round%d", r), func(t *testing.T) { richRound(t, tc.mode) })
				if t.Failed() {
					break
				}
			}
		})
	}
}

func richRound(t *testing.T, mode string) {
	dir := t.TempDir()
	child := startCrashChild(t, "TestCrashRichChild", richDirEnv+"="+dir, richModeEnv+"="+mode)

	rep := &richReport{msgs: map[ringwal.ID]*richMsg{}}
	first := make(chan struct{})
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(child.stdout)
		once := sync.Once{}
		for sc.Scan() {
			rep.mu.Lock()
			rep.parse(sc.Text())
			rep.mu.Unlock()
			once.Do(func() { close(first) })
		}
	}()
	select {
	case <-first:
	case <-readDone:
		t.Fatalf("child exited before reporting: %v", rep.bad)
	case <-time.After(30 * time.Second):
		t.Fatal("child did not start")
	}
	time.Sleep(time.Duration(80+rand.IntN(370)) * time.Millisecond) // random kill moment
	child.kill()
	<-readDone
	child.wait()

	rep.mu.Lock()
	defer rep.mu.Unlock()
	require.Empty(t, rep.bad, "child reported errors")

	// Reopen on a clock frozen at the reopening: only what was already due
	// (TTLs, delays, backoffs) moves, once; then Get and Stats hold still.
	fake := clock.NewFake(time.Now())
	opts := richOptions(ringwal.Write)
	opts.Clock = fake
	e := open(t, dir, opts)
	richQuiesce(t, e, fake)

	deadMap := map[ringwal.ID]ringwal.DeadLetter{}
	dls, err := e.DeadLetters(dlq.Query{})
	require.NoError(t, err)
	for _, d := range dls {
		deadMap[d.ID] = d
	}

	// Every ID the child could have created: reported ones and, past the
	// highest, the enqueues in flight at the kill.
	got := map[ringwal.ID]richGot{}
	var byState [ringwal.Dead + 1]int
	byCat := map[classify.Category]int{}
	s1 := e.Stats()
	for id := ringwal.ID(1); id <= rep.maxID+1000; id++ {
		info, err := e.Get(id)
		if errors.Is(err, ringwal.ErrNotFound) {
			if _, ok := deadMap[id]; ok {
				t.Errorf("ID %d: Get says not found, DeadLetters lists it", id)
			}
			if rep.msgs[id] != nil {
				got[id] = richGot{kind: 'a'}
			}
			continue
		}
		require.NoError(t, err, "Get(%d)", id)
		byState[info.State]++
		g := richGot{kind: 'l', state: info.State, attempts: info.Attempts}
		switch info.State {
		case ringwal.Pending, ringwal.Delayed:
		case ringwal.Dead:
			d, ok := deadMap[id]
			if !ok {
				t.Errorf("ID %d: Get says dead, DeadLetters does not list it", id)
			}
			g = richGot{kind: 'd', state: info.State, attempts: info.Attempts, cat: info.LastCategory,
				reviewed: d.Reviewed, note: d.Note}
			byCat[info.LastCategory]++
			assert.Equal(t, d.Category, info.LastCategory, "ID %d: Get's category vs DeadLetters'", id)
			assert.Equal(t, d.Attempts, info.Attempts, "ID %d: Get's attempts vs DeadLetters'", id)
		default:
			t.Errorf("ID %d is %v right after reopening", id, info.State)
		}
		got[id] = g
		if m := rep.msgs[id]; m != nil && m.enqueued {
			assert.Equal(t, m.payload, string(info.Message.Payload), "ID %d payload", id)
			assert.Equal(t, m.dedup, info.Message.DedupID, "ID %d DedupID", id)
			assert.Equal(t, m.key, info.Message.Key, "ID %d Key", id)
		}
	}
	s2 := e.Stats()
	require.Equal(t, counts(s1), counts(s2), "Stats moved while the clock stood still")
	assert.Equal(t, stateCounts{byState[ringwal.Pending], byState[ringwal.Delayed], byState[ringwal.Leased],
		byState[ringwal.Held], byState[ringwal.Dead]}, counts(s1), "Stats counts vs Get")
	assert.Equal(t, len(deadMap), s1.Dead, "Stats.Dead vs DeadLetters")
	for _, cat := range classify.Categories() {
		assert.Equal(t, byCat[cat], s1.DeadByCategory[cat], "Stats.DeadByCategory[%v] vs Get", cat)
	}

	// The model: each ID's outcome must be one the acknowledged calls allow.
	unreported := 0
	for id, g := range got {
		m := rep.msgs[id]
		if m == nil {
			unreported++
			if g.kind != 'l' && !(g.kind == 'd' && g.cat == classify.Expired) {
				t.Errorf("unreported ID %d (an enqueue in flight at the kill) is %v", id, g)
			}
			continue
		}
		allowed := m.allowed()
		ok := false
		for _, w := range allowed {
			if w.matches(g) {
				ok = true
				break
			}
		}
		if !ok {
			var fails []string
			for _, ev := range m.events {
				fails = append(fails, ev.line)
			}
			t.Errorf("ID %d (enqueue acknowledged %v, ttl %v, abandoned %v) is %v; allowed %v; reported: %q",
				id, m.enqueued, m.ttl, m.abandoned, g, allowed, fails)
		}
	}
	assert.LessOrEqual(t, unreported, richProducers, "IDs nobody reported")

	// Drain: every live message is delivered exactly once (or expires),
	// and nothing else is.
	delivered := map[ringwal.ID]bool{}
	drain := func() {
		for {
			d, ok := e.TryDequeue()
			if !ok {
				return
			}
			if delivered[d.ID] {
				t.Errorf("ID %d delivered twice", d.ID)
			}
			delivered[d.ID] = true
			if g := got[d.ID]; g.kind != 'l' {
				t.Errorf("ID %d delivered, but Get said %v", d.ID, g)
			}
			require.NoError(t, e.Ack(d.Lease))
		}
	}
	drain()
	fake.Advance(time.Minute) // every delay, backoff and TTL is due
	deadline := time.Now().Add(waitFor)
	for {
		drain()
		s := e.Stats()
		if s.Pending+s.Delayed+s.Leased+s.Held == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not drained: %+v", counts(s))
		}
		time.Sleep(time.Millisecond)
	}
	for id, g := range got {
		if g.kind != 'l' || delivered[id] {
			continue
		}
		info, err := e.Get(id)
		if err != nil || info.State != ringwal.Dead || info.LastCategory != classify.Expired {
			t.Errorf("ID %d was live at reopening, never delivered, now %+v, %v", id, info, err)
		}
	}

	// The dedup index survived: a repeat of every acknowledged DedupID is
	// refused with the first message's ID.
	dedups := 0
	for id, m := range rep.msgs {
		if !m.enqueued || m.dedup == "" {
			continue
		}
		dedups++
		again, err := e.TryEnqueue(ringwal.Message{DedupID: m.dedup, Payload: []byte("again")})
		if !errors.Is(err, ringwal.ErrDuplicate) || again != id {
			t.Errorf("repeat of DedupID %s (ID %d) after reopening: %d, %v", m.dedup, id, again, err)
		}
	}
	// A second recovery (of a log that now holds the first one's requeue
	// records, the drain's acks and a clean Close) rebuilds the same dead
	// letters and nothing else.
	before := richDeadSummary(t, e)
	require.NoError(t, e.Close())
	e2 := open(t, dir, opts)
	richQuiesce(t, e2, fake)
	assert.Equal(t, stateCounts{Dead: len(before)}, counts(e2.Stats()), "Stats after a second reopening")
	assert.Equal(t, before, richDeadSummary(t, e2), "dead letters after a second reopening")
	for id, m := range rep.msgs {
		if m.enqueued && m.dedup != "" {
			again, err := e2.TryEnqueue(ringwal.Message{DedupID: m.dedup, Payload: []byte("again")})
			if !errors.Is(err, ringwal.ErrDuplicate) || again != id {
				t.Errorf("repeat of DedupID %s (ID %d) after a second reopening: %d, %v", m.dedup, id, again, err)
			}
		}
	}

	ops, inflight, deadN := map[string]int{}, 0, 0
	for _, m := range rep.msgs {
		for i, ev := range m.events {
			switch {
			case ev.intent && i == len(m.events)-1:
				inflight++
			case ev.op == 'N' && ev.perm:
				ops["N-perm"]++
			case ev.op == 'N':
				ops["N-trans"]++
			case !ev.intent:
				ops[string(ev.op)]++
			}
		}
	}
	for _, g := range got {
		if g.kind == 'd' {
			deadN++
		}
	}
	t.Logf("%s: %d lines, %d IDs, acknowledged %v, %d checkpoints, %d calls in flight; after reopening %d dead, %d delivered, %d dedup checks, %d unreported",
		mode, rep.lines, len(rep.msgs), ops, rep.checkpoints, inflight, deadN, len(delivered), dedups, unreported)
}

// richDeadSummary lists an engine's dead letters by what recovery must keep.
func richDeadSummary(t *testing.T, e *ringwal.Engine) []string {
	t.Helper()
	dls, err := e.DeadLetters(dlq.Query{})
	require.NoError(t, err)
	out := make([]string, len(dls))
	for i, d := range dls {
		out[i] = fmt.Sprintf("%d %v attempts %d key %q dedup %q reviewed %v %q failures %d",
			d.ID, d.Category, d.Attempts, d.Key, d.Message.DedupID, d.Reviewed, d.Note, len(d.Failures))
	}
	return out
}
