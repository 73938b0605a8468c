package ringwal_test

// Black-box tests of the root package against the contract in DESIGN.md:
// helpers and the basic enqueue / dequeue / ack flow. The other
// engine_*_test.go files cover scheduling order, failures, durability, bad
// input and benchmarks.
//
// Time-based behaviour always runs on a *clock.Fake: a test advances it and
// then polls (in real time) for the asynchronous effect. Nothing here sleeps
// to wait for engine time.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/dlq"
	"github.com/ringwal/ringwal/internal/enginetest"
)

// TestMain fails the package if any goroutine outlives the tests (every
// engine is closed by its test's Cleanup, and Close must stop all the
// goroutines it started), and removes the directory BenchmarkRecovery
// builds once per process.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) {
		if recoveryDir != "" {
			_ = os.RemoveAll(recoveryDir)
		}
	}))
}

const (
	waitFor = 5 * time.Second // real-time bound for an asynchronous effect
	tick    = time.Millisecond
	// quiet is how long (real time) a test watches for something that must
	// not happen (a delivery before its due time, say).
	quiet = 30 * time.Millisecond
)

var ctxBG = context.Background()

// fastPolicy is a small explicit retry policy so that fake-clock tests
// advance by milliseconds: delays 10ms, 20ms, 40ms, ... capped at 100ms.
func fastPolicy(attempts int) classify.RetryPolicy {
	return classify.RetryPolicy{MaxAttempts: attempts, Base: 10 * time.Millisecond,
		Max: 100 * time.Millisecond, Multiplier: 2, Jitter: classify.NoJitter}
}

// fastPolicies uses fastPolicy(attempts) for every retryable category.
func fastPolicies(attempts int) map[classify.Category]classify.RetryPolicy {
	m := map[classify.Category]classify.RetryPolicy{}
	for _, c := range []classify.Category{classify.Unknown, classify.Transient,
		classify.Timeout, classify.RateLimited, classify.Resource} {
		m[c] = fastPolicy(attempts)
	}
	return m
}

// open opens an engine on dir and closes it when the test ends.
func open(t testing.TB, dir string, o ringwal.Options) *ringwal.Engine {
	t.Helper()
	return enginetest.Open(t, dir, o)
}

// memEngine opens a memory-only engine on a fresh fake clock (unless o
// already has a clock).
func memEngine(t testing.TB, o ringwal.Options) (*ringwal.Engine, *clock.Fake) {
	t.Helper()
	fake, _ := o.Clock.(*clock.Fake)
	if o.Clock == nil {
		fake = clock.NewFake(time.Time{})
		o.Clock = fake
	}
	return open(t, "", o), fake
}

func enqueue(t testing.TB, e *ringwal.Engine, m ringwal.Message) ringwal.ID {
	t.Helper()
	id, err := e.Enqueue(ctxBG, m)
	require.NoError(t, err, "Enqueue")
	return id
}

// enqueueP enqueues a message of priority p whose payload is s.
func enqueueP(t testing.TB, e *ringwal.Engine, p ringwal.Priority, s string) ringwal.ID {
	t.Helper()
	return enqueue(t, e, ringwal.Message{Priority: p, Payload: []byte(s)})
}

// forLogAndCheckpoint runs fn as two subtests: "log", where a reopened
// engine rebuilds from the log alone, and "checkpoint", where fn is to take
// a checkpoint before it closes.
func forLogAndCheckpoint(t *testing.T, fn func(t *testing.T, checkpoint bool)) {
	t.Run("log", func(t *testing.T) { fn(t, false) })
	t.Run("checkpoint", func(t *testing.T) { fn(t, true) })
}

// dequeue waits (real time) until a delivery is ready and returns it.
func dequeue(t testing.TB, e *ringwal.Engine) ringwal.Delivery {
	t.Helper()
	return enginetest.Dequeue(t, e)
}

// assertNothingReady checks that no delivery becomes ready for a short
// while. If one does, the test fails and the delivery is returned.
func assertNothingReady(t testing.TB, e *ringwal.Engine, why string) {
	t.Helper()
	deadline := time.Now().Add(quiet)
	for time.Now().Before(deadline) {
		if d, ok := e.TryDequeue(); ok {
			assert.Failf(t, "unexpected delivery", "%s: got ID %d (payload %q, attempt %d)",
				why, d.ID, d.Message.Payload, d.Attempt)
			return
		}
		time.Sleep(tick)
	}
}

// waitState polls Get(id) until its State is want.
func waitState(t testing.TB, e *ringwal.Engine, id ringwal.ID, want ringwal.State) ringwal.Info {
	t.Helper()
	var info ringwal.Info
	var err error
	ok := assert.Eventually(t, func() bool {
		info, err = e.Get(id)
		return err == nil && info.State == want
	}, waitFor, tick)
	if !ok {
		t.Errorf("ID %d: want state %v, last Get = %+v, %v", id, want, info, err)
	}
	return info
}

// stateCounts is the part of Stats that tests compare.
type stateCounts struct {
	Pending, Delayed, Leased, Held, Dead int
}

func counts(s ringwal.Stats) stateCounts {
	return stateCounts{s.Pending, s.Delayed, s.Leased, s.Held, s.Dead}
}

// waitCounts polls Stats until its state counts equal want.
func waitCounts(t testing.TB, e *ringwal.Engine, want stateCounts) {
	t.Helper()
	var got stateCounts
	if !assert.Eventually(t, func() bool {
		got = counts(e.Stats())
		return got == want
	}, waitFor, tick) {
		t.Errorf("Stats counts: got %+v, want %+v", got, want)
	}
}

// deadLetterCh returns an OnDeadLetter hook and the channel it feeds.
func deadLetterCh() (func(ringwal.DeadLetter), chan ringwal.DeadLetter) {
	ch := make(chan ringwal.DeadLetter, 256)
	return func(dl ringwal.DeadLetter) { ch <- dl }, ch
}

func recvDeadLetter(t testing.TB, ch <-chan ringwal.DeadLetter) ringwal.DeadLetter {
	t.Helper()
	select {
	case dl := <-ch:
		return dl
	case <-time.After(waitFor):
		require.FailNow(t, "OnDeadLetter was not called")
		return ringwal.DeadLetter{}
	}
}

func ids(ds []ringwal.Delivery) []ringwal.ID {
	out := make([]ringwal.ID, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

// ---------------------------------------------------------------------------
// Basic flow

func TestEnqueueDequeueAck(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{})
	t0 := fake.Now()
	m := ringwal.Message{
		Key:      "api.example.com",
		Priority: ringwal.High,
		Payload:  []byte("hello"),
		Headers:  map[string]string{"trace": "abc", "x": "y"},
	}
	id := enqueue(t, e, m)

	info, err := e.Get(id)
	require.NoError(t, err)
	assert.Equal(t, id, info.ID)
	assert.Equal(t, ringwal.Pending, info.State)
	assert.Equal(t, 0, info.Attempts)
	assert.True(t, info.EnqueuedAt.Equal(t0), "EnqueuedAt %v, want the fake clock's %v", info.EnqueuedAt, t0)

	d := dequeue(t, e)
	assert.Equal(t, id, d.ID)
	assert.Equal(t, 1, d.Attempt, "first delivery is attempt 1")
	assert.True(t, d.EnqueuedAt.Equal(t0), "Delivery.EnqueuedAt %v, want %v", d.EnqueuedAt, t0)
	assert.Equal(t, "api.example.com", d.Message.Key)
	assert.Equal(t, ringwal.High, d.Message.Priority)
	assert.Equal(t, "hello", string(d.Message.Payload))
	assert.Equal(t, m.Headers, d.Message.Headers)

	info, err = e.Get(id)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Leased, info.State)
	assert.Equal(t, 1, info.Attempts)

	_, ok := e.TryDequeue()
	assert.False(t, ok, "a leased message must not be handed out twice")

	require.NoError(t, e.Ack(d.Lease))
	_, err = e.Get(id)
	assert.ErrorIs(t, err, ringwal.ErrNotFound, "Get of an acked ID")
	assert.ErrorIs(t, e.Ack(d.Lease), ringwal.ErrStaleLease, "second Ack")

	s := e.Stats()
	assert.Equal(t, uint64(1), s.Enqueued)
	assert.Equal(t, uint64(1), s.Acked)
	assert.Equal(t, stateCounts{}, counts(s))
}

func TestIDsUniqueAndFIFOWithinTier(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	const n = 500
	var want []ringwal.ID
	seen := map[ringwal.ID]bool{}
	for i := 0; i < n; i++ {
		id := enqueueP(t, e, ringwal.Normal, fmt.Sprint(i))
		require.False(t, seen[id], "ID %d assigned twice", id)
		seen[id] = true
		want = append(want, id)
	}
	var got []ringwal.ID
	for i := 0; i < n; i++ {
		d := dequeue(t, e)
		assert.Equal(t, fmt.Sprint(i), string(d.Message.Payload), "FIFO within a tier")
		got = append(got, d.ID)
		require.NoError(t, e.Ack(d.Lease))
	}
	assert.Equal(t, want, got)
}

func TestEnqueueBatch(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	ms := make([]ringwal.Message, 10)
	for i := range ms {
		ms[i] = ringwal.Message{Payload: []byte(fmt.Sprint(i))}
	}
	got, err := e.EnqueueBatch(ctxBG, ms)
	require.NoError(t, err)
	require.Len(t, got, len(ms))
	for i, id := range got {
		d := dequeue(t, e)
		assert.Equal(t, id, d.ID, "batch order is FIFO order")
		assert.Equal(t, fmt.Sprint(i), string(d.Message.Payload))
	}
	assert.Equal(t, uint64(10), e.Stats().Enqueued)
}

func TestDequeueBlocksUntilEnqueue(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	type res struct {
		d   ringwal.Delivery
		err error
	}
	ch := make(chan res, 1)
	go func() {
		d, err := e.Dequeue(ctxBG)
		ch <- res{d, err}
	}()
	select {
	case r := <-ch:
		t.Fatalf("Dequeue returned on an empty engine: %+v", r)
	case <-time.After(quiet):
	}
	id := enqueueP(t, e, ringwal.Low, "x")
	select {
	case r := <-ch:
		require.NoError(t, r.err)
		assert.Equal(t, id, r.d.ID)
	case <-time.After(waitFor):
		t.Fatal("Dequeue did not wake up on Enqueue")
	}

	// A canceled ctx ends a blocked Dequeue with the ctx's error.
	ctx, cancel := context.WithCancel(ctxBG)
	errc := make(chan error, 1)
	go func() {
		_, err := e.Dequeue(ctx)
		errc <- err
	}()
	time.Sleep(quiet) // let it block (real time; nothing engine-timed)
	cancel()
	select {
	case err := <-errc:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(waitFor):
		t.Fatal("Dequeue ignored its ctx")
	}
}

func TestDequeueBatch(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	var want []ringwal.ID
	for i := 0; i < 5; i++ {
		want = append(want, enqueueP(t, e, ringwal.Normal, fmt.Sprint(i)))
	}
	waitCounts(t, e, stateCounts{Pending: 5})
	b1, err := e.DequeueBatch(ctxBG, 3)
	require.NoError(t, err)
	assert.Len(t, b1, 3, "5 ready, max 3")
	b2, err := e.DequeueBatch(ctxBG, 10)
	require.NoError(t, err)
	assert.Len(t, b2, 2, "the 2 left, without waiting for more")
	assert.Equal(t, want, append(ids(b1), ids(b2)...))
	for _, d := range append(b1, b2...) {
		assert.Equal(t, 1, d.Attempt)
		assert.NoError(t, e.Ack(d.Lease))
	}

	// Blocks for the first only.
	ch := make(chan []ringwal.Delivery, 1)
	go func() {
		ds, _ := e.DequeueBatch(ctxBG, 4)
		ch <- ds
	}()
	time.Sleep(quiet)
	id := enqueueP(t, e, ringwal.Normal, "late")
	select {
	case ds := <-ch:
		require.NotEmpty(t, ds)
		assert.Equal(t, id, ds[0].ID)
	case <-time.After(waitFor):
		t.Fatal("DequeueBatch did not return after the first message")
	}
}

func TestGetStates(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{})
	t0 := fake.Now()

	_, err := e.Get(ringwal.ID(987654321))
	assert.ErrorIs(t, err, ringwal.ErrNotFound, "Get of an unknown ID")

	pending := enqueueP(t, e, ringwal.Normal, "p")
	delayed := enqueue(t, e, ringwal.Message{Payload: []byte("d"), Delay: 10 * time.Second})

	leased := dequeue(t, e)
	require.Equal(t, pending, leased.ID)
	deadID := enqueueP(t, e, ringwal.Normal, "x")
	dd := dequeue(t, e)
	require.Equal(t, deadID, dd.ID)
	require.NoError(t, e.Nack(dd.Lease, classify.Mark(errors.New("bad request body"), classify.Permanent)))

	info, err := e.Get(delayed)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Delayed, info.State)
	assert.True(t, info.NextAt.Equal(t0.Add(10*time.Second)), "NextAt %v, want enqueue+Delay %v", info.NextAt, t0.Add(10*time.Second))
	assert.Equal(t, "d", string(info.Message.Payload))

	info, err = e.Get(pending)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Leased, info.State)

	info = waitState(t, e, deadID, ringwal.Dead)
	assert.Equal(t, classify.Permanent, info.LastCategory)
	assert.Equal(t, "bad request body", info.LastError)
	assert.Equal(t, 1, info.Attempts)
	assert.Equal(t, "x", string(info.Message.Payload))
}

func TestStatsAfterKnownWorkload(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{Policies: fastPolicies(5)})
	var ready []ringwal.ID
	for i := 0; i < 6; i++ {
		ready = append(ready, enqueueP(t, e, ringwal.Normal, fmt.Sprint(i)))
	}
	for i := 0; i < 2; i++ {
		enqueue(t, e, ringwal.Message{Payload: []byte("later"), Delay: time.Second})
	}
	waitCounts(t, e, stateCounts{Pending: 6, Delayed: 2})

	var ds []ringwal.Delivery
	for i := 0; i < 4; i++ {
		ds = append(ds, dequeue(t, e))
	}
	assert.Equal(t, ready[:4], ids(ds))
	waitCounts(t, e, stateCounts{Pending: 2, Delayed: 2, Leased: 4})

	require.NoError(t, e.Ack(ds[0].Lease))
	require.NoError(t, e.Nack(ds[1].Lease, classify.Mark(errors.New("flaky"), classify.Transient)))
	require.NoError(t, e.Nack(ds[2].Lease, classify.Mark(errors.New("nope"), classify.Permanent)))
	waitCounts(t, e, stateCounts{Pending: 2, Delayed: 3, Leased: 1, Dead: 1})

	s := e.Stats()
	assert.Equal(t, uint64(8), s.Enqueued, "Enqueued")
	assert.Equal(t, uint64(1), s.Acked, "Acked")
	assert.Equal(t, uint64(2), s.Nacked, "Nacked")
	assert.Equal(t, uint64(1), s.Retried, "Retried")
	assert.Equal(t, uint64(1), s.DeadLettered, "DeadLettered")
	assert.Equal(t, uint64(0), s.Expired, "Expired")

	// A TTL'd message expires with no consumer; the retry (10ms) comes due
	// on the way.
	enqueue(t, e, ringwal.Message{Payload: []byte("ttl"), TTL: 50 * time.Millisecond})
	fake.Advance(55 * time.Millisecond)
	waitCounts(t, e, stateCounts{Pending: 3, Delayed: 2, Leased: 1, Dead: 2})
	s = e.Stats()
	assert.Equal(t, uint64(9), s.Enqueued, "Enqueued")
	assert.Equal(t, uint64(1), s.Expired, "Expired")
	assert.GreaterOrEqual(t, s.DeadLettered, uint64(1), "DeadLettered")
	assert.Equal(t, uint64(1), s.Retried, "Retried")
}

func TestTryEnqueueFullAndEnqueueWaits(t *testing.T) {
	t.Run("MaxMessages", func(t *testing.T) {
		e, _ := memEngine(t, ringwal.Options{MaxMessages: 3})
		for i := 0; i < 3; i++ {
			_, err := e.TryEnqueue(ringwal.Message{Payload: []byte{byte(i)}})
			require.NoError(t, err)
		}
		_, err := e.TryEnqueue(ringwal.Message{Priority: ringwal.Critical})
		assert.ErrorIs(t, err, ringwal.ErrFull, "TryEnqueue past MaxMessages")

		// A leased message is still live: dequeuing frees nothing.
		d := dequeue(t, e)
		_, err = e.TryEnqueue(ringwal.Message{})
		assert.ErrorIs(t, err, ringwal.ErrFull, "leased messages count against MaxMessages")

		// Enqueue waits, and gives up with its ctx.
		ctx, cancel := context.WithTimeout(ctxBG, quiet)
		defer cancel()
		_, err = e.Enqueue(ctx, ringwal.Message{})
		assert.ErrorIs(t, err, context.DeadlineExceeded, "Enqueue on a full engine waits until its ctx ends")

		// Enqueue waits, and proceeds once there is room.
		done := make(chan error, 1)
		go func() {
			_, err := e.Enqueue(ctxBG, ringwal.Message{Payload: []byte("waited")})
			done <- err
		}()
		select {
		case err := <-done:
			t.Fatalf("Enqueue returned while full: %v", err)
		case <-time.After(quiet):
		}
		require.NoError(t, e.Ack(d.Lease))
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(waitFor):
			t.Fatal("Enqueue did not proceed after an Ack made room")
		}
	})
	t.Run("TierCapacity", func(t *testing.T) {
		e, _ := memEngine(t, ringwal.Options{TierCapacity: 3}) // rounded up to 4
		for i := 0; i < 4; i++ {
			_, err := e.TryEnqueue(ringwal.Message{Priority: ringwal.Low})
			require.NoError(t, err, "message %d of a 4-slot tier", i)
		}
		_, err := e.TryEnqueue(ringwal.Message{Priority: ringwal.Low})
		assert.ErrorIs(t, err, ringwal.ErrFull, "fifth message in a tier of capacity 4")
		_, err = e.TryEnqueue(ringwal.Message{Priority: ringwal.High})
		assert.NoError(t, err, "another tier still has room")
	})
}

func TestOnDeadLetterCalledForEachNewDeadLetter(t *testing.T) {
	hook, ch := deadLetterCh()
	var mu sync.Mutex
	var calls int
	e, fake := memEngine(t, ringwal.Options{
		Policies: fastPolicies(2),
		OnDeadLetter: func(dl ringwal.DeadLetter) {
			mu.Lock()
			calls++
			mu.Unlock()
			hook(dl)
		},
	})

	// 1: permanent failure.
	p := enqueueP(t, e, ringwal.Normal, "perm")
	d := dequeue(t, e)
	require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("gone"), classify.Permanent)))
	dl := recvDeadLetter(t, ch)
	assert.Equal(t, p, dl.ID)
	assert.Equal(t, classify.Permanent, dl.Category)
	assert.Equal(t, "perm", string(dl.Message.Payload))

	// 2: attempts exhausted (2).
	x := enqueueP(t, e, ringwal.Normal, "exhaust")
	d = dequeue(t, e)
	require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("flaky"), classify.Transient)))
	fake.Advance(15 * time.Millisecond)
	d = dequeue(t, e)
	require.Equal(t, x, d.ID)
	require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("flaky"), classify.Transient)))
	dl = recvDeadLetter(t, ch)
	assert.Equal(t, x, dl.ID)
	assert.Equal(t, classify.Transient, dl.Category)
	assert.Equal(t, 2, dl.Attempts)

	// 3: TTL.
	ttl := enqueue(t, e, ringwal.Message{Payload: []byte("ttl"), TTL: 20 * time.Millisecond})
	fake.Advance(25 * time.Millisecond)
	dl = recvDeadLetter(t, ch)
	assert.Equal(t, ttl, dl.ID)
	assert.Equal(t, classify.Expired, dl.Category)

	// Reviewing or purging is not a new dead letter.
	require.NoError(t, e.MarkReviewed(p, "seen"))
	select {
	case dl := <-ch:
		t.Errorf("OnDeadLetter called again for %d", dl.ID)
	case <-time.After(quiet):
	}
	mu.Lock()
	assert.Equal(t, 3, calls)
	mu.Unlock()
}

func TestDeadLettersQuery(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	kill := func(key string, cat classify.Category) ringwal.ID {
		id := enqueue(t, e, ringwal.Message{Key: key, Payload: []byte(key + "/" + cat.String())})
		d := dequeue(t, e)
		require.Equal(t, id, d.ID)
		require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("fail "+cat.String()), cat)))
		waitState(t, e, id, ringwal.Dead)
		return id
	}
	a1 := kill("a", classify.Permanent)
	b1 := kill("b", classify.Permanent)
	a2 := kill("a", classify.Poison)

	entryIDs := func(q dlq.Query) []ringwal.ID {
		t.Helper()
		es, err := e.DeadLetters(q)
		require.NoError(t, err)
		var out []ringwal.ID
		for _, x := range es {
			out = append(out, x.ID)
		}
		sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
		return out
	}
	sorted := func(xs ...ringwal.ID) []ringwal.ID {
		sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
		return xs
	}
	assert.Equal(t, sorted(a1, b1, a2), entryIDs(dlq.Query{}), "all")
	assert.Equal(t, sorted(a1, a2), entryIDs(dlq.Query{Key: "a"}), "by key")
	assert.Equal(t, sorted(a1, b1), entryIDs(dlq.Query{Categories: []classify.Category{classify.Permanent}}), "by category")
	assert.Equal(t, []ringwal.ID{a2}, entryIDs(dlq.Query{Categories: []classify.Category{classify.Poison}, Key: "a"}))
	assert.Len(t, entryIDs(dlq.Query{Limit: 2}), 2, "Limit")

	es, err := e.DeadLetters(dlq.Query{Key: "b"})
	require.NoError(t, err)
	require.Len(t, es, 1)
	x := es[0]
	assert.Equal(t, "b", x.Key)
	assert.Equal(t, classify.Permanent, x.Category)
	assert.Equal(t, "b/permanent", string(x.Message.Payload))
	assert.Equal(t, 1, x.Attempts)
	require.NotEmpty(t, x.Failures)
	assert.Equal(t, "fail permanent", x.Failures[len(x.Failures)-1].Error)
	assert.False(t, x.DeadAt.IsZero())
	assert.False(t, x.Reviewed)
	assert.True(t, strings.HasPrefix(x.Failures[0].Error, "fail"))
}

// crashChild is a child process of this test binary that runs one test
// (the child half of a crash test) and reports on its stdout, for the
// parent to SIGKILL at a moment of its choosing.
type crashChild struct {
	cmd    *exec.Cmd
	stdout io.Reader
	killed bool
}

// startCrashChild starts the test named test in a child with env added to
// this process's environment. Whatever happens, the child is killed and
// waited for when the test ends.
func startCrashChild(t *testing.T, test string, env ...string) *crashChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	c := &crashChild{cmd: cmd, stdout: stdout}
	t.Cleanup(func() {
		if !c.killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return c
}

// kill sends SIGKILL (which fails only if the child has exited already).
// The caller reads stdout to its end, then calls wait.
func (c *crashChild) kill() { _ = c.cmd.Process.Signal(syscall.SIGKILL) }

// wait waits for the killed child once its stdout has been read to the end.
func (c *crashChild) wait() {
	c.killed = true
	_ = c.cmd.Wait()
}

// childEmit writes one line of a child's report with one write(2), so
// that the lines of its goroutines never interleave.
func childEmit(format string, args ...any) {
	_, _ = os.Stdout.WriteString(fmt.Sprintf(format, args...) + "\n")
}

// childFail reports an error the parent fails on ("X ...") and exits 3.
func childFail(format string, args ...any) {
	childEmit("X "+format, args...)
	os.Exit(3)
}

// childOpen opens the child's engine on dir, or fails the child.
func childOpen(dir string, o ringwal.Options) *ringwal.Engine {
	e, err := ringwal.Open(dir, o)
	if err != nil {
		childFail("open: %v", err)
	}
	return e
}

// runChild runs test in a child process of this test binary with env
// added to this process's environment, lets it finish, and returns what
// it printed (stdout and stderr together); the test fails if the child
// does.
func runChild(t *testing.T, test string, env ...string) []byte {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child:\n%s", out)
	return out
}

// childIDs collects the IDs of a child's "TAG <id>" lines by tag, and
// logs its "REPORT ..." lines.
func childIDs(t *testing.T, out []byte) map[string][]ringwal.ID {
	t.Helper()
	ids := map[string][]ringwal.ID{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 0 && f[0] == "REPORT" {
			t.Log(sc.Text())
			continue
		}
		if len(f) != 2 || strings.ToUpper(f[0]) != f[0] {
			continue
		}
		if id, err := strconv.ParseUint(f[1], 10, 64); err == nil {
			ids[f[0]] = append(ids[f[0]], id)
		}
	}
	return ids
}

// fileSizeLimit lets a child make its log's writes fail with EFBIG as on
// a full disk: set(n) sets RLIMIT_FSIZE to n bytes (a write that would
// take a file past n fails; SIGXFSZ, which would kill the process, is
// ignored from now on), and set(unlimited) gives the space back.
func fileSizeLimit(t *testing.T) (set func(n uint64), unlimited uint64) {
	signal.Ignore(syscall.SIGXFSZ)
	var old syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old))
	return func(n uint64) { require.NoError(t, setFileSize(n)) }, old.Cur
}

// setFileSize sets RLIMIT_FSIZE to n bytes (the hard limit as it is), the
// setter of fileSizeLimit: it returns its error rather than failing the
// test, so that a goroutine other than the test's may call it.
func setFileSize(n uint64) error {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		return err
	}
	return syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: n, Max: old.Max})
}

// largestFile is the size of the largest file under dir.
func largestFile(t *testing.T, dir string) int64 {
	var max int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err == nil && fi.Size() > max {
			max = fi.Size()
		}
		return err
	})
	require.NoError(t, err)
	return max
}
