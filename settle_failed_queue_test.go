package ringwal_test

// An ack that cannot be logged (the disk refuses its write) leaves its
// message pending, and counted in its named queue as before: the queue
// cannot be deleted under it, its cap still counts it, checkpoints go on
// succeeding, and the message is delivered again and acked once space
// returns. A child process makes the log's writes fail with RLIMIT_FSIZE,
// as a full disk would.

import (
	"context"
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

const failedAckEnv = "RINGWAL_TEST_FAILED_ACK_DIR"

func TestFailedAckKeepsItsMessageInItsQueue(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("RLIMIT_FSIZE and SIGXFSZ as on Linux")
	}
	if dir := os.Getenv(failedAckEnv); dir != "" {
		failedAckChild(t, dir)
		return
	}
	dir := t.TempDir()
	out := runChild(t, "TestFailedAckKeepsItsMessageInItsQueue", failedAckEnv+"="+dir)
	ids := childIDs(t, out)
	require.Len(t, ids["ACKED"], 3, "child output:\n%s", out)

	// Reopened without a limit: the queue is there and holds nothing.
	e := open(t, dir, ringwal.Options{})
	s := e.Queue("q").Stats()
	assert.Zero(t, s.Pending+s.Leased+s.Delayed+s.Held, "%+v", s)
	assert.NoError(t, e.DeleteQueue("q"))
}

func failedAckChild(t *testing.T, dir string) {
	setLimit, unlimited := fileSizeLimit(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	e, err := ringwal.Open(dir, ringwal.Options{Durability: ringwal.Write})
	require.NoError(t, err)
	defer func() { assert.NoError(t, e.Close()) }()
	require.NoError(t, e.DeclareQueue("q", ringwal.QueueOptions{MaxMessages: 2}))
	q := e.Queue("q")
	for _, p := range []string{"one", "two"} {
		_, err := q.Enqueue(ctx, ringwal.Message{Payload: []byte(p)})
		require.NoError(t, err)
	}
	d, err := q.Dequeue(ctx)
	require.NoError(t, err)
	unique := ringwal.Message{Payload: []byte("first"), DedupID: "u", Unique: ringwal.UniqueQueued}
	uid, err := e.Enqueue(ctx, unique)
	require.NoError(t, err)

	setLimit(uint64(largestFile(t, dir))) // the disk is full
	// A replacement the log refuses leaves the first as it was.
	unique.Payload, unique.Replace = []byte("replacement"), true
	_, err = e.Enqueue(ctx, unique)
	require.Error(t, err, "a replacement on a full disk")
	info, err := e.Get(uid)
	require.NoError(t, err)
	assert.Equal(t, "first", string(info.Message.Payload), "a replacement that was not logged is not visible")
	require.Error(t, e.Ack(d.Lease), "an ack on a full disk")
	ds, err := q.DequeueBatch(ctx, 2)
	require.NoError(t, err)
	require.Error(t, e.AckBatch([]ringwal.Lease{ds[0].Lease}), "an ack batch on a full disk")
	setLimit(unlimited) // space is back

	require.Len(t, ds, 2)
	info, err = e.Get(ds[0].ID)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Pending, info.State, "a message whose ack failed is pending again")
	s := q.Stats()
	assert.Equal(t, 2, s.Pending+s.Leased, "the queue counts both messages: %+v", s)
	assert.ErrorIs(t, e.DeleteQueue("q"), ringwal.ErrInvalid, "a queue holding a message is not deleted")
	_, err = q.TryEnqueue(ringwal.Message{Payload: []byte("three")})
	assert.ErrorIs(t, err, ringwal.ErrFull, "the queue's cap counts the put-back messages")
	// The first checkpoint reports the writes the full disk refused (the
	// batch's lease records); the next must succeed.
	_ = e.Checkpoint()
	require.NoError(t, e.Checkpoint())

	require.NoError(t, e.Ack(ds[1].Lease))
	childEmit("ACKED %d", ds[1].ID)
	for acked := 1; acked < 2; {
		d, err := q.Dequeue(ctx)
		require.NoError(t, err)
		require.NoError(t, e.Ack(d.Lease))
		childEmit("ACKED %d", d.ID)
		acked++
	}
	require.NoError(t, e.Checkpoint())
	got, err := e.Dequeue(ctx)
	require.NoError(t, err)
	assert.Equal(t, uid, got.ID)
	require.NoError(t, e.Ack(got.Lease))
	childEmit("ACKED %d", got.ID)
}
