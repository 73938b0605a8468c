package wal

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Checkpoint's contract: fn's state must include every record appended
// before Checkpoint was called and MAY include later ones, which are then
// replayed from the log. A record appended after the call must therefore
// survive the truncation even when fn leaves it out. Here such a record is
// forced into the same batch as Checkpoint's own fsync request (the writer
// is held in OnBatch while both are queued).
func TestCheckpointKeepsRecordsAppendedDuringIt(t *testing.T) {
	dir := t.TempDir()
	var block atomic.Bool
	var done atomic.Uint64 // OnBatch calls finished
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	l, err := Open(dir, Options{OnBatch: func(BatchInfo) {
		if block.CompareAndSwap(true, false) {
			entered <- struct{}{}
			<-release
		}
		done.Add(1)
	}})
	require.NoError(t, err)
	appendIDs(t, l, 1, 1)
	// Append returns before its batch's OnBatch runs: arm the block only
	// once batch 1's has finished, or it would hold the writer before
	// batch 2 is written and the Append below would wait for ever.
	require.Eventually(t, func() bool { return done.Load() >= l.Stats().Batches },
		5*time.Second, time.Millisecond)

	block.Store(true)
	require.NoError(t, l.Append(&Record{Kind: KindEnqueue, ID: 2, Time: 1})) // released before OnBatch
	<-entered                                                                // writer held after batch 2

	var wg sync.WaitGroup
	var ckErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, ckErr = l.Checkpoint(emitIDs(1, 2)) // the state as of the call
	}()
	// Wait until Checkpoint's fsync request is queued in the current batch.
	for deadline := time.Now().Add(5 * time.Second); ; {
		l.mu.Lock()
		queued := l.cur.needSync
		l.mu.Unlock()
		if queued {
			break
		}
		require.True(t, time.Now().Before(deadline), "checkpoint never queued its sync")
		time.Sleep(time.Millisecond)
	}
	// Appended after Checkpoint was called: fn does not include it.
	c, err := l.AppendCommit(&Record{Kind: KindEnqueue, ID: 3, Time: 1})
	require.NoError(t, err)
	close(release)
	require.NoError(t, c.Wait()) // acknowledged
	wg.Wait()
	require.NoError(t, ckErr)
	require.NoError(t, l.Close())

	l, err = Open(dir, Options{})
	require.NoError(t, err)
	defer l.Close()
	ids, _ := replayedIDs(t, l)
	require.Equal(t, []uint64{1, 2, 3}, ids, "record 3 was acknowledged but lost by the checkpoint's truncation")
}
