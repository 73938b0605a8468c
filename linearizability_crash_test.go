package ringwal_test

// The history test's crash variant: a child process (this test binary
// re-executed, as TestCrashRichRecovery does) runs the history workload
// on a real directory and reports every acknowledged outcome on stdout;
// the parent SIGKILLs it at a random moment, reopens the directory and
// checks what the acknowledged calls allow: nothing whose Enqueue
// returned is lost unless it was acked or cancelled, nothing acked comes
// back (nor after a later clean Close), and every DedupID answer is
// honoured: a repeat named a message that really exists, and after the
// crash a repeat still gets the first one's ID. The child works on the
// history tests' queues (linearizability_queues_test.go) and publishes to their
// topic: after the crash every message is back in its own queue, each
// queue delivers only its own, and a publish has all its copies or none
// (linearizability_crash_more_test.go). It also takes batches beside messages
// with Deadlines, repeats unique DedupIDs within batches, and adds and
// removes schedules and queues beside a checkpointer; the parent checks
// that it kept moving until the kill (linearizability_crash_more_test.go).
//
// Reporting protocol (one write(2) per line; every line about an ID but
// E and D is written under a per-ID lock held across the call, so for
// one ID those lines are in call order and at most one call, the last
// "?" line, was in flight at the kill):
//
//	E id dedup payload queue    an enqueue returned nil for a new message (dedup and queue "-" when unset),
//	                            or a Publish did, for each copy
//	D id dedup                  a repeat was answered (id, ErrDuplicate)
//	L id queue payload          a dequeue of queue returned a Publish copy (written before it is settled)
//	? <line>                    the call <line> is about to be made
//	A id / C id / Q id / R id   Ack / Cancel / Requeue / Redrive returned nil
//	N id permanent|transient k  Nack of attempt k returned nil
//	Z id                        the call had no effect (stale lease, not found, invalid)
//	X text                      the child failed

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/dlq"
)

const historyCrashDirEnv = "RINGWAL_HISTORY_CRASH_DIR"

// historyChild is the child's shared state.
type historyChild struct {
	e     *ringwal.Engine
	locks [64]sync.Mutex
	mu    sync.Mutex
	ids   []ringwal.ID
	// firsts are acknowledged DedupIDs and their IDs: the only ones
	// repeated, so that every repeat's answer names an ID whose own
	// acknowledgement the parent has read. (Repeats racing their first,
	// answered only once the first is durable, are
	// TestHistoryLinearizable's and TestDuplicateAnswerWaitsForFirstToBeDurable's.)
	firsts []struct {
		dedup string
		id    ringwal.ID
	}
	historyChildMore
}

func (c *historyChild) lock(id ringwal.ID) *sync.Mutex {
	return &c.locks[id%uint64(len(c.locks))]
}

func (c *historyChild) known(id ringwal.ID, dedup string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ids = append(c.ids, id)
	if dedup != "" {
		c.firsts = append(c.firsts, struct {
			dedup string
			id    ringwal.ID
		}{dedup, id})
	}
}

func (c *historyChild) anyID(rng *rand.Rand) ringwal.ID {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.ids) == 0 {
		return 0
	}
	return c.ids[rng.IntN(len(c.ids))]
}

// message is a fresh message, or (repeat) a repeat of an acknowledged
// DedupID with the ID it must be answered with.
func (c *historyChild) message(rng *rand.Rand, name string) (m ringwal.Message, first ringwal.ID) {
	m = ringwal.Message{Payload: []byte("c" + name), Priority: ringwal.Priority(rng.IntN(5) - 2)}
	if rng.IntN(5) == 0 {
		m.Delay = time.Duration(1+rng.IntN(60)) * time.Second
	}
	childDeadline(rng, &m)
	switch rng.IntN(6) {
	case 0, 1:
		m.DedupID = "u" + name // fresh
	case 2:
		c.mu.Lock()
		if k := len(c.firsts); k > 0 {
			f := c.firsts[rng.IntN(k)]
			m.DedupID, first = f.dedup, f.id
		}
		c.mu.Unlock()
	}
	return m, first
}

// call reports a call on id under its lock: "? line", then line when it
// returned nil, "Z id" when it had no effect.
func (c *historyChild) call(id ringwal.ID, line string, fn func() error) {
	mu := c.lock(id)
	mu.Lock()
	defer mu.Unlock()
	childEmit("? %s", line)
	switch err := fn(); {
	case err == nil:
		childEmit("%s", line)
	case errors.Is(err, ringwal.ErrStaleLease), errors.Is(err, ringwal.ErrNotFound),
		errors.Is(err, ringwal.ErrInvalid), errors.Is(err, ringwal.ErrFull):
		childEmit("Z %d", id)
	default:
		childFail("%s: %v", line, err)
	}
}

// enqueued reports one message of an Enqueue or an EnqueueBatch (batchDup:
// the batch's error wraps ErrDuplicate). The child knows which messages
// repeat a DedupID (first != 0): fresh ones are unique.
func (c *historyChild) enqueued(id ringwal.ID, m ringwal.Message, first ringwal.ID, err error, batchDup bool) {
	c.enqueuedIn(id, m, m.Queue, first, err, batchDup)
}

// enqueuedIn is enqueued of a message sent to queue q.
func (c *historyChild) enqueuedIn(id ringwal.ID, m ringwal.Message, q string, first ringwal.ID, err error, batchDup bool) {
	switch {
	case first != 0:
		if !errors.Is(err, ringwal.ErrDuplicate) || id != first {
			childFail("repeat of %s (first %d): %d, %v", m.DedupID, first, id, err)
		}
		childEmit("D %d %s", id, m.DedupID)
	case err != nil && !batchDup:
		childFail("enqueue %s: %v", m.Payload, err)
	default:
		childEmit("E %d %s %s %s", id, dash(m.DedupID), m.Payload, dash(q))
		c.known(id, m.DedupID)
	}
}

func (c *historyChild) work(ctx context.Context, g int, rng *rand.Rand) {
	e := c.e
	var held []ringwal.Delivery
	pick := func() (ringwal.Delivery, bool) {
		if len(held) == 0 {
			return ringwal.Delivery{}, false
		}
		i := rng.IntN(len(held))
		d := held[i]
		held = append(held[:i], held[i+1:]...)
		return d, true
	}
	for n := 0; ctx.Err() == nil; n++ {
		c.progress[g].Add(1)
		switch r := rng.IntN(110); {
		case r < 22:
			m, first := c.message(rng, fmt.Sprintf("%d-%d", g, n))
			q := historyQueue(rng)
			var id ringwal.ID
			var err error
			if q != "" && rng.IntN(2) == 0 {
				id, err = e.Queue(q).Enqueue(ctx, m)
			} else {
				m.Queue = q
				id, err = e.Enqueue(ctx, m)
			}
			c.enqueuedIn(id, m, q, first, err, false)
		case r < 25:
			c.publish(ctx, fmt.Sprintf("%d-%d", g, n))
		case r < 33:
			ms := make([]ringwal.Message, 1+rng.IntN(4))
			firsts := make([]ringwal.ID, len(ms))
			for i := range ms {
				ms[i], firsts[i] = c.message(rng, fmt.Sprintf("%d-%d-%d", g, n, i))
				ms[i].Queue = historyQueue(rng)
			}
			ids, err := e.EnqueueBatch(ctx, ms)
			dup := errors.Is(err, ringwal.ErrDuplicate)
			if err != nil && !dup {
				childFail("enqueue batch: %v", err)
			}
			for i := range ms {
				c.enqueued(ids[i], ms[i], firsts[i], err, dup)
			}
		case r < 50:
			if len(held) < 4 {
				if d, ok := c.tryDequeue(historyQueue(rng)); ok {
					held = append(held, d)
				}
			}
		case r < 58:
			if len(held) < 8 {
				held = append(held, c.dequeueBatch(historyQueue(rng), 1+rng.IntN(16))...)
			}
		case r < 73:
			if d, ok := pick(); ok {
				c.call(d.ID, fmt.Sprintf("A %d", d.ID), func() error { return e.Ack(d.Lease) })
			}
		case r < 78:
			if d, ok := pick(); ok {
				c.call(d.ID, fmt.Sprintf("N %d transient %d", d.ID, d.Attempt), func() error {
					return e.Nack(d.Lease, classify.Mark(errors.New("flaky"), classify.Transient))
				})
			}
		case r < 82:
			if d, ok := pick(); ok {
				c.call(d.ID, fmt.Sprintf("N %d permanent %d", d.ID, d.Attempt), func() error {
					return e.Nack(d.Lease, classify.Mark(errors.New("broken"), classify.Permanent))
				})
			}
		case r < 86:
			id := c.anyID(rng)
			c.call(id, fmt.Sprintf("C %d", id), func() error { return e.Cancel(id) })
		case r < 91:
			id := c.anyID(rng)
			c.call(id, fmt.Sprintf("Q %d", id), func() error { return e.Requeue(id) })
		case r < 96:
			id := c.anyID(rng)
			if dls, err := e.DeadLetters(dlq.Query{Limit: 8}); err == nil && len(dls) > 0 {
				id = dls[rng.IntN(len(dls))].ID
			}
			c.call(id, fmt.Sprintf("R %d", id), func() error { return e.Redrive(id) })
		case r < 99:
			time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond)
		case r < 104:
			c.uniqueBatch(ctx, g, n, rng)
		case r < 109:
			c.adminOp(g, rng, n)
		default:
			if err := e.Checkpoint(); err != nil {
				childFail("checkpoint: %v", err)
			}
		}
	}
}

// TestHistorySurvivesCrashChild is the child half of TestHistorySurvivesCrash.
func TestHistorySurvivesCrashChild(t *testing.T) {
	dir := os.Getenv(historyCrashDirEnv)
	if dir == "" {
		t.Skip("helper process for TestHistorySurvivesCrash")
	}
	seed, err := strconv.ParseUint(os.Getenv("RINGWAL_HISTORY_SEED"), 10, 64)
	if err != nil {
		childFail("seed: %v", err)
	}
	e := childOpen(dir, historyOptions(ringwal.Write))
	ctx, cancel := context.WithTimeout(ctxBG, 30*time.Second)
	defer cancel()
	c := &historyChild{e: e}
	var wg sync.WaitGroup
	go c.heartbeat(ctx)
	c.checkpointer(ctx, &wg)
	for g := 0; g < historyWorkers; g++ {
		rng := rand.New(rand.NewPCG(seed, uint64(g)))
		wg.Add(1)
		go func() { defer wg.Done(); c.work(ctx, g, rng) }()
	}
	wg.Wait()
	os.Exit(4) // never killed: the parent took too long
}

// historyCrashMsg is what the child reported about one ID.
type historyCrashMsg struct {
	enqueued       bool // an E line
	dedup, payload string
	queue          string
	events         []string // A, C, Q, R, N, Z lines and "?" intents, in order
}

// allowed returns the outcomes ('a' absent, 'l' live, 'd' dead) the
// acknowledged calls allow: the last definite one, or the in-flight
// call's.
func (m *historyCrashMsg) allowed() map[byte]bool {
	step := func(s byte, line string) byte {
		f := strings.Fields(line)
		switch f[0] {
		case "A", "C":
			return 'a'
		case "Q", "R":
			return 'l'
		case "N":
			k, _ := strconv.Atoi(f[3])
			if f[2] == "permanent" || k >= historyTransientMax {
				return 'd'
			}
			return 'l'
		}
		return s
	}
	s, inflight := byte('l'), ""
	for _, ev := range m.events {
		switch {
		case strings.HasPrefix(ev, "? "):
			inflight = ev[2:]
		case strings.HasPrefix(ev, "Z "):
			inflight = ""
		default:
			inflight = ""
			s = step(s, ev)
		}
	}
	out := map[byte]bool{s: true}
	if inflight != "" {
		out[step(s, inflight)] = true
	}
	return out
}

// historyCrashReport reads the child's lines.
type historyCrashReport struct {
	msgs map[ringwal.ID]*historyCrashMsg
	// copies are the IDs of Publish copies (E and L lines) by payload
	// and queue.
	copies map[string]map[string][]ringwal.ID
	dups   [][2]string // a D line's id and DedupID
	bad    []string
	lines  int
	maxID  ringwal.ID
	historyCrashMore
}

func (r *historyCrashReport) msg(id ringwal.ID) *historyCrashMsg {
	m := r.msgs[id]
	if m == nil {
		m = &historyCrashMsg{}
		r.msgs[id] = m
	}
	r.maxID = max(r.maxID, id)
	return m
}

func (r *historyCrashReport) parse(text string) {
	r.lines++
	f := strings.Fields(text)
	if len(f) > 0 && f[0] == "X" {
		r.bad = append(r.bad, text)
		return
	}
	if r.parseMore(f) {
		return
	}
	g := f
	if len(g) > 0 && g[0] == "?" {
		g = g[1:]
	}
	if len(g) < 2 {
		r.bad = append(r.bad, "malformed: "+text)
		return
	}
	n, err := strconv.ParseUint(g[1], 10, 64)
	if err != nil {
		r.bad = append(r.bad, "malformed: "+text)
		return
	}
	id := n
	m := r.msg(id)
	switch {
	case f[0] == "E" && len(f) == 5:
		m.enqueued, m.payload, m.queue = true, f[3], undash(f[4])
		if f[2] != "-" {
			m.dedup = f[2]
		}
		r.copyOf(id, m.payload, m.queue)
	case f[0] == "L" && len(f) == 4:
		r.copyOf(id, f[3], undash(f[2]))
	case f[0] == "D" && len(f) == 3:
		r.dups = append(r.dups, [2]string{f[1], f[2]})
	default:
		m.events = append(m.events, text)
	}
}

func TestHistorySurvivesCrash(t *testing.T) {
	historyRuns(t, func(t *testing.T, seed uint64, _ int) {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) { historyCrashRound(t, seed) })
	})
}

func historyCrashRound(t *testing.T, seed uint64) {
	dir := t.TempDir()
	child := startCrashChild(t, "TestHistorySurvivesCrashChild", historyCrashDirEnv+"="+dir, fmt.Sprintf("RINGWAL_HISTORY_SEED=%d", seed))
	rep := &historyCrashReport{msgs: map[ringwal.ID]*historyCrashMsg{}, copies: map[string]map[string][]ringwal.ID{}}
	first, readDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(child.stdout)
		var once sync.Once
		for sc.Scan() {
			rep.parse(sc.Text())
			once.Do(func() { close(first) })
		}
	}()
	select {
	case <-first:
	case <-readDone:
		t.Fatal("child exited before reporting")
	case <-time.After(30 * time.Second):
		t.Fatal("child did not start")
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	time.Sleep(time.Duration(100+rng.IntN(500)) * time.Millisecond) // a random kill moment
	rep.awaitBeat(func(format string, args ...any) { t.Errorf("seed %d: %s", seed, fmt.Sprintf(format, args...)) })
	child.kill()
	<-readDone // the reader owns rep until here
	child.wait()
	require.Empty(t, rep.bad, "seed %d: the child reported errors", seed)

	// Reopen on a frozen clock: nothing moves until the jump below.
	fake := clock.NewFake(time.Now())
	opts := historyOptions(ringwal.Write)
	opts.Clock = fake
	e := open(t, dir, opts)
	richQuiesce(t, e, fake)
	failures := 0
	fail := func(format string, args ...any) {
		if failures++; failures <= 10 {
			t.Errorf("seed %d (rerun with RINGWAL_HISTORY_SEED=%d): %s", seed, seed, fmt.Sprintf(format, args...))
		}
	}
	defer func() {
		if failures > 10 {
			t.Errorf("seed %d: %d more failures like these", seed, failures-10)
		}
	}()
	got, found := map[ringwal.ID]byte{}, map[ringwal.ID]ringwal.Info{}
	for id := ringwal.ID(1); id <= rep.maxID+100; id++ {
		info, err := e.Get(id)
		if err == nil {
			found[id] = info
		}
		switch {
		case errors.Is(err, ringwal.ErrNotFound):
			got[id] = 'a'
		case err != nil:
			fail("Get(%d): %v", id, err)
		case info.State == ringwal.Dead:
			got[id] = 'd'
		case info.State == ringwal.Pending || info.State == ringwal.Delayed:
			got[id] = 'l'
		default:
			fail("ID %d is %v after reopening", id, info.State)
		}
		m := rep.msgs[id]
		if m == nil || err != nil {
			continue
		}
		if m.enqueued && (string(info.Message.Payload) != m.payload || info.Message.DedupID != m.dedup || info.Message.Queue != m.queue) {
			fail("ID %d: payload %q dedup %q queue %q, enqueued as %q, %q into queue %q", id, info.Message.Payload, info.Message.DedupID,
				info.Message.Queue, m.payload, m.dedup, m.queue)
		}
		if allowed := m.allowed(); !allowed[got[id]] {
			fail("ID %d is %s after the crash; the acknowledged calls allow %s; the child reported %q",
				id, outcomeNames[got[id]], keysOf(allowed), m.events)
		}
	}
	// Dedup answers: a repeat named a reported message with its DedupID,
	// and a repeat after the crash still gets that message's ID.
	for _, d := range rep.dups {
		n, _ := strconv.ParseUint(d[0], 10, 64)
		if m := rep.msgs[n]; m == nil || !m.enqueued || m.dedup != d[1] {
			fail("a repeat of DedupID %s was answered with ID %d, which no acknowledged enqueue of it created", d[1], n)
		}
	}
	dedups := 0
	for id, m := range rep.msgs {
		if m.enqueued && m.dedup != "" && childUnique(m.dedup) == ringwal.UniqueWindow {
			dedups++
			again, err := e.TryEnqueue(ringwal.Message{DedupID: m.dedup, Payload: []byte("again")})
			if !errors.Is(err, ringwal.ErrDuplicate) || again != id {
				fail("a repeat of DedupID %s (ID %d) after the crash: %d, %v", m.dedup, id, again, err)
			}
		}
	}
	publishes := rep.checkCopies(found, fail)
	uniques := rep.checkUnique(e, got, fail)
	names := rep.checkAdmin(e, fail)
	// Drain: every live message is delivered once, by its own queue,
	// nothing else is.
	fake.Advance(historyJump)
	delivered := drainQueues(t, e, got, found, fail)
	for id, g := range got {
		if g == 'l' {
			fail("ID %d was live after the crash and never delivered", id)
		}
	}
	// A clean Close then Open: what was acked stays acked.
	require.NoError(t, e.Close())
	e2 := open(t, dir, opts)
	for _, q := range historyQueues {
		if d, ok := e2.Queue(q).TryDequeue(); ok {
			fail("ID %d delivered by queue %q after a clean Close that followed its Ack", d.ID, q)
		}
	}
	if c := counts(e2.Stats()); c.Pending+c.Delayed+c.Leased+c.Held != 0 {
		fail("live messages after a clean Close of a drained engine: %+v", c)
	}
	t.Logf("seed %d: %d lines, %d IDs, %d repeats answered, %d DedupIDs checked, %d publishes with copies found, %d delivered after the crash",
		seed, rep.lines, len(rep.msgs), len(rep.dups), dedups, publishes, delivered)
	t.Logf("seed %d: %d heartbeats, %d unique DedupIDs live after the crash checked, %d schedule and queue names checked",
		seed, rep.beats.Load(), uniques, names)
}

var outcomeNames = map[byte]string{'a': "absent", 'l': "live", 'd': "dead", 'x': "delivered"}

func keysOf(m map[byte]bool) string {
	var out []string
	for k := range m {
		out = append(out, outcomeNames[k])
	}
	sort.Strings(out)
	return strings.Join(out, " or ")
}
