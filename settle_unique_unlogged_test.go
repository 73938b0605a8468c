package ringwal_test

// A UniqueLive message's DedupID is taken until it is acked, and an ack
// whose record cannot be logged has not happened: a repeat judged while
// the ack is on its way must not be let in on the strength of it. If it
// were, the ack's failure would leave two live messages of one DedupID.
// A child process makes the ack's write fail (RLIMIT_FSIZE, see
// fileSizeLimit) and holds the log's writer as it reports the failure
// (writeFailHandler), the ack's message freed in memory; the repeat is
// made then, and space returns before the writer goes on.

import (
	"context"
	"log/slog"
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

const ackUniqueEnv = "RINGWAL_TEST_ACK_UNIQUE_DIR"

func TestUniqueLiveRepeatWaitsForTheAckOfTheFirst(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("RLIMIT_FSIZE and SIGXFSZ as on Linux")
	}
	for _, how := range []string{"Ack", "AckBatch"} {
		t.Run(how, func(t *testing.T) {
			if dir := os.Getenv(ackUniqueEnv); dir != "" {
				if os.Getenv(ackUniqueEnv+"_HOW") == how {
					ackUniqueChild(t, how, dir)
				}
				return
			}
			dir := t.TempDir()
			out := runChild(t, "TestUniqueLiveRepeatWaitsForTheAckOfTheFirst/"+how,
				ackUniqueEnv+"="+dir, ackUniqueEnv+"_HOW="+how)
			ids := childIDs(t, out)
			require.Len(t, ids["FIRST"], 1, "child output:\n%s", out)

			// After a restart the first is the one live message of its
			// DedupID, and a repeat is refused as its duplicate.
			e := open(t, dir, ringwal.Options{})
			assert.Equal(t, 2, e.Stats().Pending, "the first and the message after its lease")
			id, err := e.TryEnqueue(ringwal.Message{DedupID: "u", Unique: ringwal.UniqueLive, Payload: []byte("again")})
			assert.ErrorIs(t, err, ringwal.ErrDuplicate)
			assert.Equal(t, ids["FIRST"][0], id)
		})
	}
}

func ackUniqueChild(t *testing.T, how, dir string) {
	setLimit, unlimited := fileSizeLimit(t)
	writeFail := newGate()
	e, err := ringwal.Open(dir, ringwal.Options{
		Durability: ringwal.Write,
		Logger:     slog.New(writeFailHandler{gate: writeFail}),
	})
	require.NoError(t, err)
	defer func() { _ = e.Close() }()
	defer writeFail.open() // should the child fail while the gate holds the writer
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()

	m := ringwal.Message{DedupID: "u", Unique: ringwal.UniqueLive, Payload: []byte("first")}
	first, err := e.Enqueue(ctx, m)
	require.NoError(t, err)
	childEmit("FIRST %d", first)
	d, err := e.Dequeue(ctx)
	require.NoError(t, err)
	require.Equal(t, first, d.ID)
	// Waited for: the lease's record, which nothing waits for, is written
	// before it, so that the write the full disk fails is the ack's.
	_, err = e.Enqueue(ctx, ringwal.Message{Payload: []byte("after the lease")})
	require.NoError(t, err)

	setLimit(uint64(largestFile(t, dir))) // the disk is full
	writeFail.arm()
	ackDone := make(chan error, 1)
	go func() {
		if how == "AckBatch" {
			ackDone <- e.AckBatch([]ringwal.Lease{d.Lease})
			return
		}
		ackDone <- e.Ack(d.Lease)
	}()
	writeFail.waitHeld(t, "the ack's write did not fail")

	type result struct {
		id  ringwal.ID
		err error
	}
	repeated := make(chan result, 1)
	go func() {
		m.Payload = []byte("repeat")
		id, err := e.Enqueue(ctx, m)
		repeated <- result{id, err}
	}()
	// The repeat is judged (and, were the first gone, would be on its way
	// to the held writer) before the ack hears its write failed.
	require.Eventually(t, func() bool {
		return anyGoroutine("(*Engine).Enqueue(", "awaitUnique") ||
			anyGoroutine("(*Engine).Enqueue(", "Wait(")
	}, waitFor, tick, "the repeat never came to wait")
	setLimit(unlimited)
	writeFail.open()

	require.Error(t, <-ackDone, "the ack whose write failed")
	got := <-repeated
	assert.ErrorIs(t, got.err, ringwal.ErrDuplicate, "a repeat of a first whose ack failed")
	assert.Equal(t, first, got.id, "the repeat names the first")
	info, err := e.Get(first)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Pending, info.State, "the first, its ack failed, is pending again")
	assert.Equal(t, 2, e.Stats().Pending, "one live message of the DedupID, and the message after its lease")
	require.NoError(t, e.Close())
}
