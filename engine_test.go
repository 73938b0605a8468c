package ringwal_test

// The engine's life: Open (the data directory, its lock), Close and the
// engine after it: errors wrap ErrClosed, blocked calls wake up, handlers'
// contexts end after the grace, and no goroutine outlives Close.

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/dlq"
)

func TestAfterClose(t *testing.T) {
	for _, mode := range []struct {
		name string
		dir  bool
	}{{"memory", false}, {"dir", true}} {
		t.Run(mode.name, func(t *testing.T) {
			dir := ""
			if mode.dir {
				dir = t.TempDir()
			}
			e, err := ringwal.Open(dir, ringwal.Options{})
			require.NoError(t, err)
			id := enqueueP(t, e, ringwal.Normal, "x")
			d := dequeue(t, e)
			require.NoError(t, e.Close())
			assert.NoError(t, e.Close(), "Close is idempotent")

			calls := map[string]func() error{
				"Enqueue":    func() error { _, err := e.Enqueue(ctxBG, ringwal.Message{}); return err },
				"TryEnqueue": func() error { _, err := e.TryEnqueue(ringwal.Message{}); return err },
				"EnqueueBatch": func() error {
					_, err := e.EnqueueBatch(ctxBG, []ringwal.Message{{}})
					return err
				},
				"Dequeue":      func() error { _, err := e.Dequeue(ctxBG); return err },
				"DequeueBatch": func() error { _, err := e.DequeueBatch(ctxBG, 3); return err },
				"Ack":          func() error { return e.Ack(d.Lease) },
				"Nack":         func() error { return e.Nack(d.Lease, errors.New("x")) },
				"Extend":       func() error { return e.Extend(d.Lease, time.Second) },
				"Get":          func() error { _, err := e.Get(id); return err },
				"Requeue":      func() error { return e.Requeue(id) },
				"DeadLetters":  func() error { _, err := e.DeadLetters(dlq.Query{}); return err },
				"Redrive":      func() error { return e.Redrive(id) },
				"MarkReviewed": func() error { return e.MarkReviewed(id, "n") },
				"PurgeDeadLetters": func() error {
					_, err := e.PurgeDeadLetters(dlq.Query{})
					return err
				},
				"Checkpoint": func() error { return e.Checkpoint() },
			}
			for name, call := range calls {
				var err error
				if assert.NotPanics(t, func() { err = call() }, name) {
					assert.ErrorIs(t, err, ringwal.ErrClosed, name)
				}
			}
			assert.NotPanics(t, func() {
				_, ok := e.TryDequeue()
				assert.False(t, ok, "TryDequeue after Close")
				_ = e.Stats()
				_ = e.Peek(3)
			})
			runDone := make(chan error, 1)
			go func() { runDone <- e.Run(ctxBG, 2, func(context.Context, ringwal.Delivery) error { return nil }) }()
			select {
			case err := <-runDone:
				assert.True(t, err == nil || errors.Is(err, ringwal.ErrClosed), "Run after Close: %v", err)
			case <-time.After(waitFor):
				t.Error("Run on a closed engine did not return")
			}
		})
	}
}

func TestCloseWakesBlockedCalls(t *testing.T) {
	e, err := ringwal.Open("", ringwal.Options{MaxMessages: 1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })

	errs := make(chan error, 4)
	go func() { _, err := e.Dequeue(ctxBG); errs <- err }()
	go func() { _, err := e.DequeueBatch(ctxBG, 5); errs <- err }()
	time.Sleep(quiet) // let them block
	// Fill the engine: one message, leased by whichever dequeuer wins; then
	// Enqueue blocks on MaxMessages 1.
	_, err = e.Enqueue(ctxBG, ringwal.Message{})
	require.NoError(t, err)
	var first error
	select {
	case first = <-errs:
		require.NoError(t, first, "one dequeuer got the message")
	case <-time.After(waitFor):
		t.Fatal("no dequeuer got the message")
	}
	go func() { _, err := e.Enqueue(ctxBG, ringwal.Message{}); errs <- err }()
	run := make(chan error, 1)
	go func() {
		run <- e.Run(ctxBG, 2, func(context.Context, ringwal.Delivery) error { return nil })
	}()
	time.Sleep(quiet)

	require.NoError(t, e.Close())
	for i := 0; i < 2; i++ { // the other dequeuer and the blocked Enqueue
		select {
		case err := <-errs:
			assert.ErrorIs(t, err, ringwal.ErrClosed, "a blocked call returns ErrClosed on Close")
		case <-time.After(waitFor):
			t.Fatal("a blocked call did not return on Close")
		}
	}
	select {
	case err := <-run:
		assert.NoError(t, err, "Run returns nil when the engine closes")
	case <-time.After(waitFor):
		t.Fatal("Run did not return on Close")
	}
}

// TestCloseGraceEndsHandlers: Close cancels a handler's ctx once
// CloseGrace has passed, and Run returns nil. Real clock: the grace is the
// only timing here and it is short.
func TestCloseGraceEndsHandlers(t *testing.T) {
	e, err := ringwal.Open("", ringwal.Options{CloseGrace: 50 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	started := make(chan struct{})
	ended := make(chan struct{})
	run := make(chan error, 1)
	go func() {
		run <- e.Run(ctxBG, 1, func(ctx context.Context, d ringwal.Delivery) error {
			close(started)
			<-ctx.Done()
			close(ended)
			return ctx.Err()
		})
	}()
	enqueueP(t, e, ringwal.Normal, "stuck")
	select {
	case <-started:
	case <-time.After(waitFor):
		t.Fatal("handler not called")
	}
	closed := make(chan error, 1)
	go func() { closed <- e.Close() }()
	select {
	case <-ended:
	case <-time.After(waitFor):
		t.Fatal("the handler's ctx did not end after CloseGrace")
	}
	select {
	case err := <-closed:
		assert.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("Close did not return")
	}
	select {
	case err := <-run:
		assert.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("Run did not return")
	}
}

// TestCloseStopsEveryGoroutine: after Close (and the callers' own
// goroutines returning), nothing the engine started is left, in every mode.
func TestCloseStopsEveryGoroutine(t *testing.T) {
	for _, mode := range []struct {
		name string
		d    ringwal.Durability
		dir  bool
	}{{"memory", ringwal.Write, false}, {"write", ringwal.Write, true}, {"fsync", ringwal.Fsync, true}, {"buffered", ringwal.Buffered, true}} {
		t.Run(mode.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			dir := ""
			if mode.dir {
				dir = t.TempDir()
			}
			e, err := ringwal.Open(dir, ringwal.Options{Durability: mode.d, LeaseTimeout: time.Hour})
			require.NoError(t, err)
			for i := 0; i < 10; i++ {
				_, err := e.Enqueue(ctxBG, ringwal.Message{Payload: []byte("p"), Delay: time.Duration(i%2) * time.Hour, TTL: time.Hour})
				require.NoError(t, err)
			}
			d := dequeue(t, e) // a live lease
			_ = d
			ctx, cancel := context.WithCancel(ctxBG)
			defer cancel()
			run := make(chan error, 1)
			go func() {
				run <- e.Run(ctx, 3, func(context.Context, ringwal.Delivery) error { return nil })
			}()
			blocked := make(chan error, 1)
			go func() {
				_, err := e.Dequeue(ctxBG)
				for err == nil { // Run and this race for the ready messages
					_, err = e.Dequeue(ctxBG)
				}
				blocked <- err
			}()
			time.Sleep(quiet)
			require.NoError(t, e.Close())
			for _, ch := range []chan error{run, blocked} {
				select {
				case <-ch:
				case <-time.After(waitFor):
					t.Fatal("a caller goroutine did not return after Close")
				}
			}
		})
	}
}

// The data directory holds every message and dead letter, payloads
// included: its files are the owner's alone unless Options.GroupReadable,
// whatever the umask, and Open refuses a directory others may write.

func TestDataDirectoryIsOwnerOnlyAfterACheckpoint(t *testing.T) {
	for _, group := range []bool{false, true} {
		t.Run(map[bool]string{false: "owner only", true: "GroupReadable"}[group], func(t *testing.T) {
			old := syscall.Umask(0o022)
			t.Cleanup(func() { syscall.Umask(old) })
			wantFile, wantDir := fs.FileMode(0o600), fs.FileMode(0o700)
			if group {
				wantFile, wantDir = 0o640, 0o750
			}
			dir := filepath.Join(t.TempDir(), "data")
			e, err := ringwal.Open(dir, ringwal.Options{GroupReadable: group})
			require.NoError(t, err)
			for i := 0; i < 10; i++ {
				_, err := e.Enqueue(ctxBG, ringwal.Message{Payload: []byte("secret")})
				require.NoError(t, err)
			}
			require.NoError(t, e.Checkpoint())
			require.NoError(t, e.Close())

			files := 0
			require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				require.NoError(t, err)
				fi, err := os.Lstat(p)
				require.NoError(t, err)
				if fi.IsDir() {
					assert.Equal(t, wantDir, fi.Mode().Perm(), "directory %s", p)
				} else {
					files++
					assert.True(t, fi.Mode().IsRegular(), "%s", p)
					assert.Equal(t, wantFile, fi.Mode().Perm(), "file %s", p)
				}
				return nil
			}))
			assert.GreaterOrEqual(t, files, 4, "FORMAT, LOCK, a snapshot and a segment at least")
		})
	}
}

func TestOpenRefusesAnUnsafeDataDirectory(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o777))
	_, err := ringwal.Open(dir, ringwal.Options{})
	require.ErrorIs(t, err, ringwal.ErrUnsafeDir)
	assert.Contains(t, err.Error(), "chmod 700 "+dir)

	if os.Geteuid() != 0 {
		t.Skip("needs root to give a directory to another user")
	}
	dir = t.TempDir()
	require.NoError(t, os.Chown(dir, 65534, 65534))
	_, err = ringwal.Open(dir, ringwal.Options{})
	require.ErrorIs(t, err, ringwal.ErrUnsafeDir)
	assert.Contains(t, err.Error(), "uid 65534")
}

// A handler that calls Close (a "shutdown" message, say) used to hang
// Close and Run for good: Close waited for the handler, which waited for
// Close. Close now returns after the grace and one more; the message,
// leased when the engine closed, is pending after a reopen.
func TestCloseFromHandlerReturns(t *testing.T) {
	dir := t.TempDir()
	e, err := ringwal.Open(dir, ringwal.Options{CloseGrace: 30 * time.Millisecond})
	require.NoError(t, err)
	closed := make(chan error, 1)
	run := make(chan error, 1)
	go func() {
		run <- e.Run(ctxBG, 2, func(ctx context.Context, d ringwal.Delivery) error {
			closed <- e.Close()
			return nil
		})
	}()
	id := enqueue(t, e, ringwal.Message{Payload: []byte("shutdown")})
	select {
	case err := <-closed:
		assert.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("Close called from a handler does not return")
	}
	select {
	case err := <-run:
		assert.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("Run does not return after its handler's Close")
	}
	e2 := open(t, dir, ringwal.Options{})
	info, err := e2.Get(id)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Pending, info.State)
	assert.Equal(t, 1, info.Attempts)
}

// After Close every method says ErrClosed, even to bad arguments.
func TestClosedWinsOverBadArguments(t *testing.T) {
	e, err := ringwal.Open("", ringwal.Options{})
	require.NoError(t, err)
	require.NoError(t, e.Close())
	assert.ErrorIs(t, e.Run(ctxBG, 0, nil), ringwal.ErrClosed)
	assert.ErrorIs(t, e.Extend(ringwal.Lease{}, 0), ringwal.ErrClosed)
	_, err = e.DequeueBatch(ctxBG, 0)
	assert.ErrorIs(t, err, ringwal.ErrClosed)
}

func TestSecondOpenLocked(t *testing.T) {
	dir := t.TempDir()
	e1, err := ringwal.Open(dir, ringwal.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e1.Close() })

	e2, err := ringwal.Open(dir, ringwal.Options{})
	if e2 != nil {
		t.Cleanup(func() { _ = e2.Close() })
	}
	require.Error(t, err, "second Open of a directory in use")
	assert.ErrorIs(t, err, ringwal.ErrLocked)
	assert.Nil(t, e2)

	// The first engine is unaffected, and the lock goes with Close.
	id := enqueueP(t, e1, ringwal.Normal, "x")
	require.NoError(t, e1.Close())
	e3 := open(t, dir, ringwal.Options{})
	info, err := e3.Get(id)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Pending, info.State)
}

// ---------------------------------------------------------------------------
// SIGKILL crash test
