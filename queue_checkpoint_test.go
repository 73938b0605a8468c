package ringwal_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

// Queue verbs (declare, pause, resume, delete) taken while checkpoints run
// back to back are each wholly in the snapshot or in the log after its
// cut: a reopen finds every queue whose declaration returned, none whose
// deletion returned, and every pause in force, and opening never fails.
func TestQueueVerbsBesideCheckpointsSurviveAReopen(t *testing.T) {
	dir := t.TempDir()
	e, err := ringwal.Open(dir, ringwal.Options{Durability: ringwal.Fsync})
	require.NoError(t, err)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			assert.NoError(t, e.Checkpoint())
		}
	}()
	declared := map[string]bool{}
	paused := map[string]bool{}
	deadline := time.Now().Add(2 * time.Second)
	for i := 0; time.Now().Before(deadline) && i < 400; i++ {
		name := fmt.Sprintf("q%d", i)
		require.NoError(t, e.DeclareQueue(name, ringwal.QueueOptions{MaxMessages: i + 1}))
		declared[name] = true
		switch i % 4 {
		case 1:
			require.NoError(t, e.Queue(name).Pause(time.Time{}))
			paused[name] = true
		case 2:
			require.NoError(t, e.Queue(name).Pause(time.Time{}))
			require.NoError(t, e.Queue(name).Resume())
		case 3:
			require.NoError(t, e.DeleteQueue(name))
			delete(declared, name)
		}
	}
	stop.Store(true)
	wg.Wait()
	require.NoError(t, e.Close())

	e = open(t, dir, ringwal.Options{})
	got := map[string]ringwal.QueueInfo{}
	for _, qi := range e.Queues() {
		got[qi.Name] = qi
	}
	for name := range declared {
		qi, ok := got[name]
		if assert.True(t, ok, "queue %s lost", name) {
			assert.Equal(t, paused[name], qi.Paused, "queue %s's pause", name)
		}
	}
	for name := range got {
		if name != "" {
			assert.True(t, declared[name], "queue %s came back", name)
		}
	}
}
