package ringwal_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

const (
	backupKillDirEnv = "RINGWAL_BACKUP_KILL_DIR"
	backupKillOutEnv = "RINGWAL_BACKUP_KILL_OUT"
	backupKillN      = 3000
)

// stallingWriter writes to f until it has passed after bytes, then says
// so on stdout and blocks forever: the parent kills the process there.
type stallingWriter struct {
	f     *os.File
	n     int
	after int
}

func (w *stallingWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.n += n
	if w.n >= w.after {
		childEmit("W %d", w.n)
		select {}
	}
	return n, err
}

// TestBackupKillChild is the child of TestBackupKilledMidwayLeavesSourceAndRefusesPartial.
func TestBackupKillChild(t *testing.T) {
	dir := os.Getenv(backupKillDirEnv)
	if dir == "" {
		t.Skip("the child of TestBackupKilledMidwayLeavesSourceAndRefusesPartial")
	}
	e := childOpen(dir, ringwal.Options{Durability: ringwal.Fsync})
	// Random payloads, so that the snapshot does not compress to nothing.
	payload := make([]byte, 1000)
	msgs := make([]ringwal.Message, 100)
	for range backupKillN / len(msgs) {
		for i := range msgs {
			msgs[i] = ringwal.Message{Payload: make([]byte, 1000)}
			_, _ = rand.Read(msgs[i].Payload)
		}
		if _, err := e.EnqueueBatch(ctxBG, msgs); err != nil {
			childFail("enqueue: %v", err)
		}
	}
	childEmit("E %d", backupKillN)
	f, err := os.Create(os.Getenv(backupKillOutEnv))
	if err != nil {
		childFail("create: %v", err)
	}
	// Keep producing while the backup runs: the kill finds appends in
	// flight too (not counted: they were never acknowledged to the parent).
	go func() {
		for {
			_, _ = e.Enqueue(ctxBG, ringwal.Message{Payload: payload})
		}
	}()
	if _, err := e.Backup(&stallingWriter{f: f, after: 256 << 10}); err != nil {
		childFail("backup: %v", err)
	}
	childFail("the backup finished before the kill")
}

// A process killed while it streams a backup leaves its data directory
// whole (every acknowledged message there at the next Open, and a new
// backup of it restores), and the partial stream it wrote is refused by
// Restore with ErrDamagedBackup, leaving no directory behind.
func TestBackupKilledMidwayLeavesSourceAndRefusesPartial(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	src := t.TempDir()
	out := filepath.Join(t.TempDir(), "partial.tar")
	c := startCrashChild(t, "TestBackupKillChild", backupKillDirEnv+"="+src, backupKillOutEnv+"="+out)
	sc := bufio.NewScanner(c.stdout)
	enqueued := false
	for sc.Scan() {
		line := sc.Text()
		require.False(t, strings.HasPrefix(line, "X "), "child: %s", line)
		if line == fmt.Sprintf("E %d", backupKillN) {
			enqueued = true
		}
		if strings.HasPrefix(line, "W ") {
			c.kill()
			break
		}
	}
	for sc.Scan() {
	}
	c.wait()
	require.True(t, enqueued, "the child never reported its messages")
	fi, err := os.Stat(out)
	require.NoError(t, err)
	require.Positive(t, fi.Size())

	// The partial stream is refused, and nothing is left of it.
	f, err := os.Open(out)
	require.NoError(t, err)
	defer f.Close()
	dir := filepath.Join(t.TempDir(), "restored")
	_, err = ringwal.Restore(f, dir)
	require.ErrorIs(t, err, ringwal.ErrDamagedBackup)
	assert.Contains(t, err.Error(), "partial or damaged backup")
	_, statErr := os.Stat(dir)
	assert.True(t, os.IsNotExist(statErr), "Restore left %s behind", dir)

	// The source lost nothing, and backs up again.
	e, err := ringwal.Open(src, ringwal.Options{})
	require.NoError(t, err)
	defer e.Close()
	live := e.Stats().Pending
	require.GreaterOrEqual(t, live, backupKillN)
	var buf bytes.Buffer
	_, err = e.Backup(&buf)
	require.NoError(t, err)
	dir2 := filepath.Join(t.TempDir(), "restored2")
	_, err = ringwal.Restore(&buf, dir2)
	require.NoError(t, err)
	r, err := ringwal.Open(dir2, ringwal.Options{})
	require.NoError(t, err)
	defer r.Close()
	assert.Equal(t, live, r.Stats().Pending)
}

// A backup taken while producers enqueue and consumers ack holds every
// message whose Enqueue returned before Backup was called (unless its ack
// began), and none whose Ack returned before Backup was called.
func TestBackupUnderLoadHoldsWhatWasAcknowledgedBefore(t *testing.T) {
	e, err := ringwal.Open(t.TempDir(), ringwal.Options{Durability: ringwal.Write, CheckpointBytes: 256 << 10})
	require.NoError(t, err)
	defer e.Close()
	ctx, cancel := context.WithCancel(ctxBG)
	var began atomic.Bool
	var mu sync.Mutex
	enqBefore := map[ringwal.ID]bool{}
	ackBegun := map[ringwal.ID]bool{}
	ackBefore := map[ringwal.ID]bool{}
	var wg sync.WaitGroup
	var produced atomic.Int64
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				id, err := e.Enqueue(ctx, ringwal.Message{Payload: []byte("load")})
				if err != nil {
					continue
				}
				produced.Add(1)
				if !began.Load() {
					mu.Lock()
					enqBefore[id] = true
					mu.Unlock()
				}
			}
		}()
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				d, err := e.Dequeue(ctx)
				if err != nil {
					continue
				}
				if d.ID%3 == 0 { // leave some leased
					continue
				}
				mu.Lock()
				ackBegun[d.ID] = true
				mu.Unlock()
				if e.Ack(d.Lease) == nil && !began.Load() {
					mu.Lock()
					ackBefore[d.ID] = true
					mu.Unlock()
				}
			}
		}()
	}
	for produced.Load() < 20000 {
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	began.Store(true)
	mu.Unlock()
	var buf bytes.Buffer
	_, err = e.Backup(&buf)
	require.NoError(t, err)
	cancel()
	wg.Wait()

	dir := filepath.Join(t.TempDir(), "restored")
	_, err = ringwal.Restore(&buf, dir)
	require.NoError(t, err)
	r, err := ringwal.Open(dir, ringwal.Options{})
	require.NoError(t, err)
	defer r.Close()
	held := map[ringwal.ID]bool{}
	for in := range r.Messages(ringwal.Filter{}) {
		held[in.ID] = true
	}
	require.NotEmpty(t, enqBefore)
	require.NotEmpty(t, ackBefore)
	for id := range enqBefore {
		if !ackBegun[id] {
			require.True(t, held[id], "message %d, enqueued before the backup and never acked, is not in it", id)
		}
	}
	for id := range ackBefore {
		require.False(t, held[id], "message %d, acked before the backup, is in it", id)
	}
}
