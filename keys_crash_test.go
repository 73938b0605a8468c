package ringwal_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

const keysCrashEnv = "RINGWAL_KEYS_CRASH_DIR"

func orderedPolicy(key string) ringwal.KeyPolicy {
	return ringwal.KeyPolicy{Ordered: strings.HasPrefix(key, "chat")}
}

// TestKeysCrashChild is the child of TestKeyControlsSurviveSIGKILL: it
// enqueues to an ordered key, pauses a key, cancels a message, leases and
// nacks the ordered key's head, prints the IDs, and waits to be killed.
func TestKeysCrashChild(t *testing.T) {
	dir := os.Getenv(keysCrashEnv)
	if dir == "" {
		t.Skip("the child of TestKeyControlsSurviveSIGKILL")
	}
	e, err := ringwal.Open(dir, ringwal.Options{Durability: ringwal.Fsync, KeyPolicy: orderedPolicy})
	require.NoError(t, err)
	ctx := context.Background()
	var chat []ringwal.ID
	for i := range 6 {
		id, err := e.Enqueue(ctx, ringwal.Message{Key: "chat", Priority: ringwal.Priority(i%3 - 1)})
		require.NoError(t, err)
		chat = append(chat, id)
	}
	paused, err := e.Enqueue(ctx, ringwal.Message{Key: "paused"})
	require.NoError(t, err)
	require.NoError(t, e.PauseKey("paused", time.Time{}))
	gone, err := e.Enqueue(ctx, ringwal.Message{Key: "other"})
	require.NoError(t, err)
	require.NoError(t, e.Cancel(gone))
	d, err := e.Dequeue(ctx)
	require.NoError(t, err)
	require.Equal(t, chat[0], d.ID)
	// The head stays leased when the process dies. A lease record is never
	// waited for; a waited record after it (a pause of an unused key) makes
	// it durable, so that the crashed attempt is counted.
	require.NoError(t, e.PauseKey("barrier", time.Time{}))
	fmt.Printf("ids %d %d %v\n", paused, gone, chat)
	fmt.Println("ready")
	select {}
}

func TestKeyControlsSurviveSIGKILL(t *testing.T) {
	if os.Getenv(keysCrashEnv) != "" {
		t.Skip("child")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKeysCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), keysCrashEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var paused, gone ringwal.ID
	var chat []ringwal.ID
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "ids ") {
			var list string
			_, err := fmt.Sscanf(line, "ids %d %d", &paused, &gone)
			require.NoError(t, err)
			list = line[strings.Index(line, "[")+1 : len(line)-1]
			for _, f := range strings.Fields(list) {
				var id ringwal.ID
				_, err := fmt.Sscan(f, &id)
				require.NoError(t, err)
				chat = append(chat, id)
			}
		}
		if line == "ready" {
			break
		}
	}
	require.Len(t, chat, 6, "the child did not get ready")
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()

	e, err := ringwal.Open(dir, ringwal.Options{Durability: ringwal.Fsync, KeyPolicy: orderedPolicy})
	require.NoError(t, err)
	defer e.Close()
	_, err = e.Get(gone)
	assert.ErrorIs(t, err, ringwal.ErrNotFound, "the cancel survived")
	info, err := e.Get(paused)
	require.NoError(t, err)
	assert.Equal(t, ringwal.WaitPaused, info.Waiting, "the pause survived")
	// The ordered key comes back in enqueue order, one at a time; the
	// head leased at the crash first, with that attempt counted.
	for i, want := range chat {
		d, ok := dequeueSoon(t, e)
		require.True(t, ok, "message %d of the ordered key", i)
		require.Equal(t, want, d.ID)
		if i == 0 {
			assert.Equal(t, 2, d.Attempt, "the crashed lease counted")
		}
		_, more := e.TryDequeue()
		require.False(t, more, "one at a time")
		require.NoError(t, e.Ack(d.Lease))
	}
}
