package ringwal

import (
	"errors"
	"sort"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/internal/wal"
)

// errLeaseLost stands for a fleet member's fence error, which names the
// new owner when it knows it.
var errLeaseLost = errors.New("lease lost; shard 3 is owned by node-b")

// testFence is an Options.Fence that fails once failing is set.
type testFence struct{ failing atomic.Bool }

func (f *testFence) fence() error {
	if f.failing.Load() {
		return errLeaseLost
	}
	return nil
}

func sortedPayloads(e *Engine) []string {
	got := drain(e)
	sort.Strings(got)
	return got
}

// TestFenceRefusesCallsAndKeepsThemOutOfTheLog: once the fence fails,
// Enqueue, EnqueueBatch and Ack fail with ErrNotOwner (carrying the
// fence's error), and since the fence is asked before each batch is
// written, nothing refused that way is in the log: after a reopen the
// messages acknowledged before the fence failed are all there (the one
// whose ack was refused too), and the refused ones are not.
func TestFenceRefusesCallsAndKeepsThemOutOfTheLog(t *testing.T) {
	for _, d := range []Durability{Write, Fsync} {
		t.Run(d.String(), func(t *testing.T) {
			dir := t.TempDir()
			var f testFence
			e, err := Open(dir, Options{Durability: d, Fence: f.fence})
			require.NoError(t, err)
			for _, p := range []string{"kept-1", "kept-2"} {
				_, err := e.Enqueue(ctxBG, Message{Payload: []byte(p)})
				require.NoError(t, err)
			}
			del, err := e.Dequeue(ctxBG)
			require.NoError(t, err)

			f.failing.Store(true)
			_, err = e.Enqueue(ctxBG, Message{Payload: []byte("refused")})
			assert.ErrorIs(t, err, ErrNotOwner)
			assert.ErrorIs(t, err, errLeaseLost)
			_, err = e.EnqueueBatch(ctxBG, []Message{{Payload: []byte("refused-b1")}, {Payload: []byte("refused-b2")}})
			assert.ErrorIs(t, err, ErrNotOwner)
			err = e.Ack(del.Lease)
			assert.ErrorIs(t, err, ErrNotOwner)
			assert.ErrorIs(t, err, errLeaseLost)
			_ = e.Close() // may report the fenced lease record's batch

			e = openEngine(t, dir, Options{Durability: d})
			assert.Equal(t, []string{"kept-1", "kept-2"}, sortedPayloads(e))
		})
	}
}

// TestFenceRefusedAfterWriteIsReplayed: a fence that fails between a
// batch's write and its acknowledgement (the lease expired during the
// fsync) refuses the call, but the record is in the log: whoever opens
// the directory next replays it. So a refused Enqueue may still be
// delivered, once the caller retried it perhaps twice: at least once,
// as after any error whose cause is unknown to the caller.
func TestFenceRefusedAfterWriteIsReplayed(t *testing.T) {
	dir := t.TempDir()
	var f testFence
	e, err := Open(dir, Options{Durability: Fsync, Fence: f.fence})
	require.NoError(t, err)
	_, err = e.Enqueue(ctxBG, Message{Payload: []byte("acked")})
	require.NoError(t, err)
	// In Fsync mode OnBatch reports a batch's write before its fsync:
	// the fence fails while the batch is on its way to disk.
	hook := func(b wal.BatchInfo) {
		if b.Records > 0 {
			f.failing.Store(true)
		}
	}
	e.afterBatchForTest.Store(&hook)
	_, err = e.Enqueue(ctxBG, Message{Payload: []byte("refused-after-write")})
	assert.ErrorIs(t, err, ErrNotOwner)
	_ = e.Close()

	e = openEngine(t, dir, Options{Durability: Fsync})
	assert.Equal(t, []string{"acked", "refused-after-write"}, sortedPayloads(e))
}

// TestFenceIgnoredWithoutALog: a memory-only engine has no log writer to
// ask the fence, and acknowledges as before.
func TestFenceIgnoredWithoutALog(t *testing.T) {
	var f testFence
	f.failing.Store(true)
	e := openEngine(t, "", Options{Fence: f.fence})
	_, err := e.Enqueue(ctxBG, Message{Payload: []byte("x")})
	assert.NoError(t, err)
}
