package ringwal_test

// The helpers the black-box tests (package ringwal_test) share: each
// test file is named after the source file that owns what it tests; the
// internal tests (package ringwal) have theirs in helpers_internal_test.go.
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
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
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

func transient(msg string) error { return classify.Mark(errors.New(msg), classify.Transient) }

func permanent(msg string) error { return classify.Mark(errors.New(msg), classify.Permanent) }

// deadEntry returns the dead-letter entry of id.
func deadEntry(t testing.TB, e *ringwal.Engine, id ringwal.ID) ringwal.DeadLetter {
	t.Helper()
	es, err := e.DeadLetters(dlq.Query{})
	require.NoError(t, err)
	for _, x := range es {
		if x.ID == id {
			return x
		}
	}
	require.FailNow(t, "no dead letter", "ID %d not in DeadLetters (%d entries)", id, len(es))
	return ringwal.DeadLetter{}
}

// stateNot polls Get(id) until its State is not s.
func stateNot(t testing.TB, e *ringwal.Engine, id ringwal.ID, s ringwal.State) ringwal.Info {
	t.Helper()
	var info ringwal.Info
	require.Eventually(t, func() bool {
		var err error
		info, err = e.Get(id)
		return err == nil && info.State != s
	}, waitFor, tick, "ID %d stayed %v", id, s)
	return info
}

// stays checks that Get(id) keeps State s for a short while.
func stays(t testing.TB, e *ringwal.Engine, id ringwal.ID, s ringwal.State, why string) {
	t.Helper()
	deadline := time.Now().Add(quiet)
	for time.Now().Before(deadline) {
		info, err := e.Get(id)
		if !assert.NoError(t, err, why) || !assert.Equal(t, s, info.State, why) {
			return
		}
		time.Sleep(tick)
	}
}

// errText is a helper for tests that only care about an error's message.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return strings.ToLower(err.Error())
}

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// hookHandler is a slog handler that calls fn, synchronously, for every
// record whose message is msg: a way to run an operation at exactly the
// point where the engine logs that message, as a concurrent caller
// scheduled at that moment would.
type hookHandler struct {
	msg string
	mu  sync.Mutex
	fn  func()
}

func (h *hookHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *hookHandler) WithAttrs([]slog.Attr) slog.Handler { return h }

func (h *hookHandler) WithGroup(string) slog.Handler { return h }

func (h *hookHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message != h.msg {
		return nil
	}
	h.mu.Lock()
	fn := h.fn
	h.fn = nil
	h.mu.Unlock()
	if fn != nil {
		fn()
	}
	return nil
}

func (h *hookHandler) set(fn func()) {
	h.mu.Lock()
	h.fn = fn
	h.mu.Unlock()
}

// noAging keeps aging out of tests that are about something else (the fake
// clock does not move in them anyway).
const noAging = time.Hour

// callOpen opens a memory engine with o, turning a panic into a failure.
func callOpen(t *testing.T, o ringwal.Options) (e *ringwal.Engine, err error) {
	t.Helper()
	_, _ = callNoPanic(t, func() error {
		e, err = ringwal.Open("", o)
		return err
	})
	return e, err
}

func deadIDs(t testing.TB, e *ringwal.Engine) []ringwal.ID {
	t.Helper()
	ds, err := e.DeadLetters(dlq.Query{})
	require.NoError(t, err)
	out := make([]ringwal.ID, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

// sameFailures compares two failure histories entry by entry (times by
// instant).
func sameFailures(t *testing.T, want, got []dlq.Failure) {
	t.Helper()
	if !assert.Len(t, got, len(want), "failures: want %+v, got %+v", want, got) {
		return
	}
	for i := range want {
		assert.True(t, want[i].At.Equal(got[i].At), "failure %d at %v, want %v", i, got[i].At, want[i].At)
		assert.Equal(t, want[i].Category, got[i].Category, "failure %d", i)
		assert.Equal(t, want[i].Error, got[i].Error, "failure %d", i)
	}
}

func sameDeadLetter(t *testing.T, want, got ringwal.DeadLetter) {
	t.Helper()
	sameFailures(t, want.Failures, got.Failures)
	assert.True(t, want.FirstFailedAt.Equal(got.FirstFailedAt), "FirstFailedAt %v, want %v", got.FirstFailedAt, want.FirstFailedAt)
	assert.True(t, want.DeadAt.Equal(got.DeadAt), "DeadAt %v, want %v", got.DeadAt, want.DeadAt)
	assert.Equal(t, want.Category, got.Category)
	assert.Equal(t, want.Attempts, got.Attempts)
}

func policyFor(p ringwal.KeyPolicy) func(string) ringwal.KeyPolicy {
	return func(string) ringwal.KeyPolicy { return p }
}

func mustEnqueue(t *testing.T, e *ringwal.Engine, m ringwal.Message) ringwal.ID {
	t.Helper()
	id, err := e.TryEnqueue(m)
	require.NoError(t, err)
	return id
}

// drainQueue takes every message deliverable from dequeue and acks it,
// returning the payloads in delivery order.
func drainQueue(t *testing.T, e *ringwal.Engine, try func() (ringwal.Delivery, bool)) []string {
	t.Helper()
	var got []string
	for {
		d, ok := try()
		if !ok {
			return got
		}
		got = append(got, string(d.Message.Payload))
		require.NoError(t, e.Ack(d.Lease))
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// richQuiesce waits until the reopened engine's housekeeper has done what
// was due at the frozen clock's time and Stats holds still.
func richQuiesce(t *testing.T, e *ringwal.Engine, fake *clock.Fake) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for fake.Waiters() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("housekeeper never waited on the clock")
		}
		time.Sleep(time.Millisecond)
	}
	prev, stable := counts(e.Stats()), 0
	for stable < 3 {
		time.Sleep(5 * time.Millisecond)
		c := counts(e.Stats())
		if c == prev {
			stable++
		} else {
			prev, stable = c, 0
		}
		if time.Now().After(deadline) {
			t.Fatal("Stats never settled")
		}
	}
}

// reopener opens engines on one directory in turn: each reopen closes the
// previous engine (checkpointing first when asked) and opens the next one
// on a fresh fake clock set to at.
type reopener struct {
	t   *testing.T
	dir string
	o   ringwal.Options
	e   *ringwal.Engine
}

func newReopener(t *testing.T, o ringwal.Options) *reopener {
	t.Helper()
	r := &reopener{t: t, dir: t.TempDir(), o: o}
	r.e = r.open()
	return r
}

func (r *reopener) open() *ringwal.Engine {
	r.t.Helper()
	e, err := ringwal.Open(r.dir, r.o)
	require.NoError(r.t, err, "Open")
	r.t.Cleanup(func() { _ = e.Close() })
	return e
}

// reopen closes the current engine (after a checkpoint if checkpoint) and
// opens the directory again on a fake clock at at.
func (r *reopener) reopen(checkpoint bool, at time.Time) (*ringwal.Engine, *clock.Fake) {
	r.t.Helper()
	if checkpoint {
		require.NoError(r.t, r.e.Checkpoint())
	}
	require.NoError(r.t, r.e.Close())
	fake := clock.NewFake(at)
	r.o.Clock = fake
	r.e = r.open()
	return r.e, fake
}

// anyGoroutine reports whether some goroutine's stack holds every one of
// frames.
func anyGoroutine(frames ...string) bool {
	buf := make([]byte, 1<<20)
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		all := true
		for _, f := range frames {
			all = all && strings.Contains(g, f)
		}
		if all {
			return true
		}
	}
	return false
}
