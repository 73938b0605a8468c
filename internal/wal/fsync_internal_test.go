package wal

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Writing never waits for an fsync in progress: these tests hold the
// writer at the "log-fsync" failpoint, its batch written and its fsync
// about to begin, and check what appenders and waiters see meanwhile.

// fsyncGate holds the first len(release) fsyncs of the writer at the
// "log-fsync" failpoint until the test closes their release channel;
// later ones pass. It counts every fsync that reached the failpoint.
type fsyncGate struct {
	entered chan int32 // the number (from 1) of each held fsync, once it waits
	release []chan struct{}
	syncs   atomic.Int32
}

func gateFsyncs(t *testing.T, held int) *fsyncGate {
	g := &fsyncGate{entered: make(chan int32, held)}
	for range held {
		g.release = append(g.release, make(chan struct{}))
	}
	hook := func(name string) {
		if name != "log-fsync" {
			return
		}
		n := g.syncs.Add(1)
		if int(n) <= len(g.release) {
			g.entered <- n
			<-g.release[n-1]
		}
	}
	failpoint.Store(&hook)
	t.Cleanup(func() {
		g.releaseAll()
		failpoint.Store(nil)
	})
	return g
}

// waitHeld waits for fsync number n to reach the gate.
func (g *fsyncGate) waitHeld(t *testing.T, n int32) {
	t.Helper()
	select {
	case got := <-g.entered:
		require.Equal(t, n, got)
	case <-time.After(10 * time.Second):
		t.Fatalf("fsync %d never began", n)
	}
}

func (g *fsyncGate) releaseAll() {
	for _, c := range g.release {
		select {
		case <-c:
		default:
			close(c)
		}
	}
}

// openFsyncLog opens an empty Fsync-mode log whose OnBatch sends the
// record count of every batch written to the returned channel.
func openFsyncLog(t *testing.T) (*Log, chan int) {
	written := make(chan int, 64)
	l, err := Open(t.TempDir(), Options{Mode: Fsync, OnBatch: func(b BatchInfo) {
		if b.Records > 0 {
			written <- b.Records
		}
	}})
	require.NoError(t, err)
	_, err = l.Replay(func(*Record) error { return nil })
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l, written
}

// appendAsync appends id in the background; the channel gets its result.
func appendAsync(l *Log, id uint64) chan error {
	c := make(chan error, 1)
	go func() { c <- l.Append(&Record{Kind: KindEnqueue, ID: id, Time: 1}) }()
	return c
}

// requireWritten waits until batches holding n more records were written.
func requireWritten(t *testing.T, written chan int, n int) {
	t.Helper()
	for n > 0 {
		select {
		case k := <-written:
			n -= k
		case <-time.After(10 * time.Second):
			t.Fatalf("%d records never written while an fsync was held: the writer waits for the fsync", n)
		}
	}
}

// durableClaims returns the durable index each batch on disk claims.
func durableClaims(t *testing.T, l *Log) []uint64 {
	t.Helper()
	segs, _, err := logView(l.logDir)
	require.NoError(t, err)
	var out []uint64
	_, err = scanLog(segs, func(_ uint64, _ []byte, h batchHeader) error {
		out = append(out, h.durable)
		return nil
	})
	require.NoError(t, err)
	return out
}

func TestAppendsAreWrittenWhileAnFsyncIsInProgress(t *testing.T) {
	l, written := openFsyncLog(t)
	g := gateFsyncs(t, 1)
	first := appendAsync(l, 1)
	g.waitHeld(t, 1) // batch 1 written, its fsync held
	requireWritten(t, written, 1)

	// A record nobody waits for (a lease), then one whose appender waits
	// for its fsync: both reach write(2) while the fsync is held.
	require.NoError(t, l.AppendNoWait(&Record{Kind: KindLease, ID: 1, Time: 1}))
	requireWritten(t, written, 1)
	second := appendAsync(l, 2)
	requireWritten(t, written, 1)
	assert.Len(t, durableClaims(t, l), 3, "all three batches are in the segment file")
	for _, c := range []chan error{first, second} {
		select {
		case err := <-c:
			t.Fatalf("an Fsync-mode Append returned (%v) while its fsync was held", err)
		default:
		}
	}
	g.releaseAll()
	require.NoError(t, <-first)
	require.NoError(t, <-second)
	require.NoError(t, l.Close())
}

func TestFsyncWaiterWaitsForTheNextFsyncWhenItsBatchWasWrittenDuringOne(t *testing.T) {
	l, written := openFsyncLog(t)
	g := gateFsyncs(t, 2)
	first := appendAsync(l, 1)
	g.waitHeld(t, 1) // covers batch 1 only
	second := appendAsync(l, 2)
	requireWritten(t, written, 2) // batch 2, written during fsync 1

	close(g.release[0])
	require.NoError(t, <-first)
	g.waitHeld(t, 2) // the fsync that covers batch 2, held
	select {
	case err := <-second:
		t.Fatalf("Append returned (%v) before the fsync covering its batch", err)
	default:
	}
	close(g.release[1])
	require.NoError(t, <-second)
	assert.EqualValues(t, 2, g.syncs.Load())
}

func TestBatchWrittenDuringAnFsyncDoesNotClaimIt(t *testing.T) {
	l, written := openFsyncLog(t)
	g := gateFsyncs(t, 1)
	first := appendAsync(l, 1)
	g.waitHeld(t, 1) // fsync of batch 1 in progress
	require.NoError(t, l.AppendNoWait(&Record{Kind: KindAck, ID: 1}))
	requireWritten(t, written, 2)
	g.releaseAll()
	require.NoError(t, <-first)
	require.NoError(t, l.AppendNoWait(&Record{Kind: KindAck, ID: 2}))
	require.NoError(t, l.Flush())
	// Batch 2 was written while batch 1's fsync ran: it may not claim
	// batch 1 durable. Batch 3 came after that fsync returned.
	assert.Equal(t, []uint64{0, 0, 1}, durableClaims(t, l))
}

func TestOneFsyncCoversEveryBatchWrittenBeforeItBegan(t *testing.T) {
	const waiters = 8
	l, written := openFsyncLog(t)
	g := gateFsyncs(t, 1)
	first := appendAsync(l, 1)
	g.waitHeld(t, 1)
	var wg sync.WaitGroup
	errs := make(chan error, waiters)
	for i := range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- l.Append(&Record{Kind: KindEnqueue, ID: uint64(2 + i), Time: 1})
		}()
	}
	requireWritten(t, written, 1+waiters) // all written while fsync 1 is held
	g.releaseAll()
	require.NoError(t, <-first)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.EqualValues(t, 2, g.syncs.Load(), "one fsync for batch 1, one shared by everything written during it")
}
