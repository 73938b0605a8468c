package ringwal_test

// Disk full: a child process runs the engine under RLIMIT_FSIZE, so that
// the log's writes fail with EFBIG (SIGXFSZ ignored) as they would on a
// full disk. The caller must see errors (not a hang, not a panic), reads
// must keep working, the engine must take writes again once space
// returns (the child raises its limit), and the parent, reopening the
// directory without a limit, must find every message whose Enqueue
// returned nil.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
)

const diskFullEnv = "RINGWAL_TEST_DISKFULL_DIR"

// diskFullLimit is the largest file the child may write: below a log
// segment (1 MiB), so the first segment fills.
const diskFullLimit = 256 << 10

func TestDiskFull(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("RLIMIT_FSIZE and SIGXFSZ as on Linux")
	}
	if dir := os.Getenv(diskFullEnv); dir != "" {
		diskFullChild(t, dir)
		return
	}
	dir := t.TempDir()
	out := runChild(t, "TestDiskFull", diskFullEnv+"="+dir)
	ids := childIDs(t, out)
	acked := map[ringwal.ID]bool{}
	for _, id := range ids["ENQUEUED"] {
		acked[id] = true
	}
	settled := ids["ACKED"]
	require.NotEmpty(t, acked, "child output:\n%s", out)
	for _, id := range settled {
		delete(acked, id)
	}

	// Space is back: the directory opens, and nothing acknowledged is lost.
	e := open(t, dir, ringwal.Options{})
	lost := 0
	for id := range acked {
		if _, err := e.Get(id); err != nil {
			lost++
			t.Errorf("message %d, whose Enqueue returned nil, is gone: %v", id, err)
		}
	}
	for _, id := range settled {
		_, err := e.Get(id)
		assert.ErrorIs(t, err, ringwal.ErrNotFound, "acked message %d comes back", id)
	}
	t.Logf("REPORT parent: %d acknowledged messages checked after reopen, %d lost", len(acked), lost)
}

// diskFullChild is the child's side: it prints ENQUEUED <id> for each
// Enqueue that returned nil, ACKED <id> for each Ack that did, and
// REPORT lines.
func diskFullChild(t *testing.T, dir string) {
	setLimit, unlimited := fileSizeLimit(t)
	setLimit(diskFullLimit)

	e, err := ringwal.Open(dir, ringwal.Options{Durability: ringwal.Write})
	require.NoError(t, err)
	defer func() { _ = e.Close() }()

	payload := make([]byte, 1024)
	enq := func() (ringwal.ID, error) {
		for i := range payload {
			payload[i] = byte(rand.Uint32()) // incompressible
		}
		ctx, cancel := context.WithTimeout(ctxBG, waitFor)
		defer cancel()
		id, err := e.Enqueue(ctx, ringwal.Message{Payload: bytes.Clone(payload), Key: "k"})
		require.NotErrorIs(t, err, context.DeadlineExceeded, "Enqueue hung on a full disk")
		if err == nil {
			fmt.Printf("ENQUEUED %d\n", id)
		}
		return id, err
	}

	// Three dead letters, for the bulk verbs on a full disk.
	for range 3 {
		_, err := e.Enqueue(ctxBG, ringwal.Message{Payload: []byte("d"), Key: "dead"})
		require.NoError(t, err)
		d, ok := e.TryDequeue()
		require.True(t, ok)
		require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("no"), classify.Permanent)))
	}

	// Fill the disk.
	var ids []ringwal.ID
	var full error
	for i := 0; i < 4*diskFullLimit/len(payload) && full == nil; i++ {
		id, err := enq()
		if err != nil {
			full = err
			break
		}
		ids = append(ids, id)
	}
	require.Error(t, full, "the log never hit its file size limit")
	require.NotEmpty(t, ids)
	fmt.Printf("REPORT disk full after %d enqueues: %v\n", len(ids), full)
	require.NotErrorIs(t, full, ringwal.ErrClosed)
	// A small record may still fit below the limit; a full disk takes
	// none: lower the limit to what the log holds.
	setLimit(uint64(largestFile(t, dir)))

	// While it is full: writes fail, each with an error.
	for i := 0; i < 3; i++ {
		_, err := enq()
		assert.Error(t, err, "an enqueue on a full disk")
	}
	_, err = e.EnqueueBatch(ctxBG, []ringwal.Message{{Payload: payload}, {Payload: payload}})
	assert.Error(t, err, "an enqueue batch on a full disk")
	// Reads keep working.
	for _, id := range []ringwal.ID{ids[0], ids[len(ids)-1]} {
		info, err := e.Get(id)
		require.NoError(t, err)
		assert.Equal(t, ringwal.Pending, info.State)
	}
	s := e.Stats()
	assert.Equal(t, len(ids), s.Pending, "Stats on a full disk")
	_, err = e.DeadLetters(dlq.Query{})
	assert.NoError(t, err)
	// A bulk redrive fails as a whole page of redrives whose records the
	// log refused: each dead letter goes back to the store.
	n, err := e.RedriveMatching(dlq.Query{})
	assert.Error(t, err, "a bulk redrive on a full disk")
	assert.Zero(t, n, "redriven on a full disk")
	dead, err := e.DeadLetters(dlq.Query{})
	require.NoError(t, err)
	assert.Len(t, dead, 3, "every dead letter back in the store after a failed bulk redrive")
	s = e.Stats()
	assert.Equal(t, len(ids), s.Pending, "Stats after a failed bulk redrive")
	assert.NotEmpty(t, e.Peek(3))
	d, ok := e.TryDequeue()
	require.True(t, ok, "TryDequeue of what was there")
	ackErr := e.Ack(d.Lease)
	fmt.Printf("REPORT ack on a full disk: %v\n", ackErr)
	if ackErr == nil {
		fmt.Printf("ACKED %d\n", d.ID)
	} else {
		info, err := e.Get(d.ID)
		require.NoError(t, err, "a message whose ack failed is still there")
		assert.Equal(t, ringwal.Pending, info.State)
		assert.Equal(t, 1, info.Attempts)
	}
	// A checkpoint may fail (its snapshot is a file too) or succeed and
	// free the log it covers; either way nothing is lost.
	ckErr := e.Checkpoint()
	fmt.Printf("REPORT checkpoint on a full disk: %v\n", ckErr)

	// Space returns: the engine takes writes again without a restart.
	setLimit(unlimited)
	var after error
	for i := 0; i < 10; i++ {
		if _, after = enq(); after == nil {
			break
		}
	}
	require.NoError(t, after, "the engine does not recover once space returns")
	n, err = e.RedriveMatching(dlq.Query{})
	assert.NoError(t, err, "a bulk redrive once space returns")
	assert.Equal(t, 3, n)
	d, ok = e.TryDequeue()
	require.True(t, ok)
	require.NoError(t, e.Ack(d.Lease))
	fmt.Printf("ACKED %d\n", d.ID)
	require.NoError(t, e.Checkpoint(), "a checkpoint once space returns")
	_, err = enq()
	require.NoError(t, err)
	err = e.Close()
	if err != nil && !errors.Is(err, syscall.EFBIG) {
		t.Errorf("Close: %v", err)
	}
	fmt.Printf("REPORT close: %v\n", err)
}
