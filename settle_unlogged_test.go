package ringwal_test

// An ack whose record cannot be logged (a full disk) has not happened:
// the message must stay, in memory and across a restart, even when a
// checkpoint runs while the ack is on its way. The checkpoint's snapshot
// may see the message gone (the ack has freed it) and let the log drop
// its enqueue record; then only a put-back that is logged again keeps it.
//
// A child process runs the engine under RLIMIT_FSIZE (see
// fileSizeLimit) and forces that interleaving with two gates that need
// no hook in the engine: its clock holds the checkpoint's snapshot just
// before it walks the messages, and its logger holds the log's writer
// when it reports the ack's failed write (before the ack's caller hears
// of it). The parent reopens the directory without a limit after the
// child's clean Close and looks for the message.
//
// In the first two cases space returns before the put-back is logged. In
// the third the disk stays full until the checkpoint would truncate the
// log, so the put-back's write fails too: the message is then in memory
// and in the log's enqueue record only, and the checkpoint must fail
// rather than put in place a snapshot without it and drop that record.

import (
	"bytes"
	"context"
	"crypto/rand"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/clock"
)

const ackUnloggedEnv = "RINGWAL_TEST_ACK_UNLOGGED"

func TestAckThatCannotBeLoggedKeepsTheMessageAcrossACheckpoint(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("RLIMIT_FSIZE and SIGXFSZ as on Linux")
	}
	if v := os.Getenv(ackUnloggedEnv); v != "" {
		f := strings.SplitN(v, ":", 3)
		ackUnloggedChild(t, f[0], f[1] == "full", f[2])
		return
	}
	for _, tc := range []struct {
		name, how string
		// full: the disk stays full until the checkpoint's truncation
		// makes room, so the put-back's write fails too.
		full bool
	}{
		{name: "Ack", how: "Ack"},
		{name: "AckBatch", how: "AckBatch"},
		{name: "AckWithTheDiskFullUntilTheCheckpointTruncates", how: "Ack", full: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			how, space := tc.how, "back"
			if tc.full {
				space = "full"
			}
			dir := t.TempDir()
			out := runChild(t, "TestAckThatCannotBeLoggedKeepsTheMessageAcrossACheckpoint",
				ackUnloggedEnv+"="+how+":"+space+":"+dir)
			ids := childIDs(t, out)
			unlogged := ids["ACKFAILED"]
			require.NotEmpty(t, unlogged, "child output:\n%s", out)

			e := open(t, dir, ringwal.Options{})
			seen := map[ringwal.ID]bool{}
			for _, id := range unlogged {
				seen[id] = true
				info, err := e.Get(id)
				if assert.NoError(t, err, "message %d, whose %s failed, is gone after a checkpoint and a restart", id, how) {
					assert.Equal(t, ringwal.Pending, info.State, "message %d", id)
				}
			}
			for _, id := range ids["ACKED"] {
				seen[id] = true
				_, err := e.Get(id)
				assert.ErrorIs(t, err, ringwal.ErrNotFound, "acked message %d comes back", id)
			}
			for _, id := range ids["ENQUEUED"] {
				if !seen[id] {
					_, err := e.Get(id)
					assert.NoError(t, err, "unacked message %d is gone", id)
				}
			}
		})
	}
}

// ackUnloggedChild is the child's side for how ("Ack" or "AckBatch"). It
// prints ENQUEUED <id> for each Enqueue that returned nil, ACKED <id> for
// each message whose ack did, ACKFAILED <id> for each whose ack failed.
func ackUnloggedChild(t *testing.T, how string, full bool, dir string) {
	setLimit, unlimited := fileSizeLimit(t)
	snap, writeFail := newGate(), newGate()
	e, err := ringwal.Open(dir, ringwal.Options{
		Durability: ringwal.Write,
		Clock:      snapshotClock{Clock: clock.Real(), gate: snap},
		Logger:     slog.New(writeFailHandler{gate: writeFail}),
	})
	require.NoError(t, err)
	defer func() { _ = e.Close() }()
	defer snap.open() // should the child fail while a gate holds the engine
	defer writeFail.open()

	// Most of what the log holds is acked, so that the snapshot is far
	// smaller than the log: it must fit under the limit the log is at.
	payload := make([]byte, 256)
	enq := func() {
		_, _ = rand.Read(payload) // incompressible
		id, err := e.Enqueue(ctxBG, ringwal.Message{Payload: bytes.Clone(payload)})
		require.NoError(t, err)
		childEmit("ENQUEUED %d", id)
	}
	for range 64 {
		enq()
	}
	for range 48 {
		d, ok := e.TryDequeue()
		require.True(t, ok)
		require.NoError(t, e.Ack(d.Lease))
		childEmit("ACKED %d", d.ID)
	}
	n := 1
	if how == "AckBatch" {
		n = 3
	}
	var ds []ringwal.Delivery
	for range n {
		d, ok := e.TryDequeue()
		require.True(t, ok)
		ds = append(ds, d)
	}
	enq() // waited for: the lease records are written before it
	// The disk is full: the log's next write fails.
	setLimit(uint64(largestFile(t, dir)))

	// A checkpoint starts (its fsync needs no room) and is held before it
	// walks the messages.
	snap.arm()
	ckDone := make(chan error, 1)
	go func() { ckDone <- e.Checkpoint() }()
	snap.waitHeld(t, "the checkpoint's snapshot never read the clock")

	// The ack frees what it acks and its write fails; the writer is held
	// before the ack hears of it.
	writeFail.arm()
	ackDone := make(chan error, 1)
	go func() {
		if how == "AckBatch" {
			ls := make([]ringwal.Lease, len(ds))
			for i, d := range ds {
				ls[i] = d.Lease
			}
			ackDone <- e.AckBatch(ls)
			return
		}
		ackDone <- e.Ack(ds[0].Lease)
	}()
	writeFail.waitHeld(t, "the ack's write did not fail")

	if full {
		// An enqueue commits a message after the acked one (a slot
		// follows its ID) and waits for
		// the held writer; the snapshot, let go, passes the acked message
		// (free) and waits for that commit. Then the writer goes on: the
		// enqueue fails, and so does the ack's put-back, written before
		// the checkpoint can ask for its truncation.
		pending := e.Stats().Pending
		enqDone := make(chan error, 1)
		go func() {
			_, err := e.Enqueue(ctxBG, ringwal.Message{Payload: []byte("after")})
			enqDone <- err
		}()
		require.Eventually(t, func() bool { return e.Stats().Pending > pending }, waitFor, tick)
		snap.open()
		require.Eventually(t, snapshotWaitsForACommit, waitFor, tick)
		writeFail.open()
		require.Error(t, <-enqDone, "an enqueue on a full disk")
	} else {
		// Meanwhile the snapshot walks the messages (and is written, or
		// waits for the log to say whether every write it reflects
		// succeeded).
		snap.open()
		require.Eventually(t, func() bool { return snapshotInPlace(dir) || checkpointWaitsForTheLog() }, waitFor, tick,
			"the snapshot neither was written nor waits for the log")
		// Space returns before the ack hears its write failed.
		setLimit(unlimited)
		writeFail.open()
	}
	ackErr := <-ackDone
	require.Error(t, ackErr, "the ack whose write failed")
	childEmit("REPORT %s on a full disk: %v", how, ackErr)
	for _, d := range ds {
		childEmit("ACKFAILED %d", d.ID)
		info, err := e.Get(d.ID)
		require.NoError(t, err, "a message whose ack failed is still there")
		assert.Equal(t, ringwal.Pending, info.State)
	}
	// A checkpoint that ran while a write failed may fail (it cannot tell
	// whether its snapshot holds a change the log lost); what matters is
	// that no message is lost.
	if ckErr := <-ckDone; ckErr != nil {
		childEmit("REPORT the checkpoint: %v", ckErr)
	}
	setLimit(unlimited)
	require.NoError(t, e.Close())
}

// gate holds the first goroutine that comes to it after arm until open.
type gate struct {
	armed atomic.Bool
	held  chan struct{} // closed once a goroutine is held
	rel   chan struct{} // closed by open
	once  sync.Once
}

func newGate() *gate { return &gate{held: make(chan struct{}), rel: make(chan struct{})} }

func (g *gate) arm() { g.armed.Store(true) }

func (g *gate) open() { g.once.Do(func() { close(g.rel) }) }

func (g *gate) pass() {
	if g.armed.CompareAndSwap(true, false) {
		close(g.held)
		<-g.rel
	}
}

func (g *gate) waitHeld(t *testing.T, why string) {
	select {
	case <-g.held:
	case <-time.After(waitFor):
		require.FailNow(t, why)
	}
}

// snapshotClock is a real clock whose gate, once armed, holds a
// checkpoint's snapshot when it reads the time, before it walks the
// messages. (Any other clock reading passes; a renamed snapshot function
// fails the child, which then waits in vain.)
type snapshotClock struct {
	clock.Clock
	gate *gate
}

func (c snapshotClock) Now() time.Time {
	if c.gate.armed.Load() && calledFrom("github.com/ringwal/ringwal.(*Engine).snapshot") {
		c.gate.pass()
	}
	return c.Clock.Now()
}

// calledFrom reports whether the function named fn is on the caller's
// stack.
func calledFrom(fn string) bool {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		if f.Function == fn {
			return true
		}
		if !more {
			return false
		}
	}
}

// writeFailHandler is a slog.Handler whose gate, once armed, holds the
// log's writer when it reports a failed write: it does that before it
// repairs the log and answers the batch's waiters. It prints the
// engine's errors as REPORT lines.
type writeFailHandler struct{ gate *gate }

func (h writeFailHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h writeFailHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Level < slog.LevelError {
		return nil
	}
	childEmit("REPORT log: %s", r.Message)
	if strings.Contains(r.Message, "write failed") {
		h.gate.pass()
	}
	return nil
}

func (h writeFailHandler) WithAttrs([]slog.Attr) slog.Handler { return h }

func (h writeFailHandler) WithGroup(string) slog.Handler { return h }

// snapshotInPlace reports whether a snapshot file is in place under dir.
func snapshotInPlace(dir string) bool {
	found := false
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), "snap-") && strings.HasSuffix(d.Name(), ".zst") {
			found = true
		}
		return nil
	})
	return found
}

// checkpointWaitsForTheLog reports whether a checkpoint whose snapshot
// walked the messages waits for the log to write what was appended.
func checkpointWaitsForTheLog() bool {
	return anyGoroutine(".(*Log).syncResult(", ".(*Log).Checkpoint.func")
}

// snapshotWaitsForACommit reports whether a checkpoint's snapshot waits
// for a record being committed (an enqueue waiting for the log).
func snapshotWaitsForACommit() bool {
	return anyGoroutine(".(*rec).ownAny(", ".(*Engine).snapshot(")
}
