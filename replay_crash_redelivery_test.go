package ringwal_test

// How much a SIGKILL makes Run deliver again. Run's acks do not wait for
// the log (run.go): a kill delivers again the messages whose acks had not
// reached the page cache. The child enqueues redeliveryMessages messages
// with 8 producers while Run handles them with 8 workers, reporting each
// enqueue once it returned and each handler's success just before the
// handler returns nil (one write(2) a line):
//
//	E id   Enqueue returned nil
//	H id   the handler succeeded (it returns nil next)
//	X text the child failed
//
// The parent kills it once a random number of handlers succeeded, reopens
// the directory and checks that every reported enqueue whose handler never
// succeeded is still there (nothing acknowledged is lost), and counts the
// duplicates: messages whose handler succeeded that are still there, to
// be delivered again. Both durability modes run; the duplicates per kill
// are logged (go test -v). RINGWAL_KILLS sets the kills per mode (default
// 3, for CI).

import (
	"bufio"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

const (
	redeliveryDirEnv   = "RINGWAL_REDELIVERY_DIR"
	redeliveryModeEnv  = "RINGWAL_REDELIVERY_MODE"
	redeliveryKillsEnv = "RINGWAL_KILLS"
	redeliveryMessages = 10000
	redeliveryWorkers  = 8 // producers, and Run's workers
)

// TestCrashRedeliveryChild is the child half of TestCrashRedeliveryAfterKill.
func TestCrashRedeliveryChild(t *testing.T) {
	dir := os.Getenv(redeliveryDirEnv)
	if dir == "" {
		t.Skip("helper process for TestCrashRedeliveryAfterKill")
	}
	mode := ringwal.Write
	if os.Getenv(redeliveryModeEnv) == "fsync" {
		mode = ringwal.Fsync
	}
	e := childOpen(dir, ringwal.Options{Durability: mode})
	ctx, cancel := context.WithTimeout(ctxBG, time.Minute)
	defer cancel()
	go func() {
		err := e.Run(ctx, redeliveryWorkers, func(_ context.Context, d ringwal.Delivery) error {
			childEmit("H %d", d.ID)
			return nil
		})
		if err != nil {
			childEmit("X run: %v", err)
		}
	}()
	var wg sync.WaitGroup
	for g := range redeliveryWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < redeliveryMessages; i += redeliveryWorkers {
				id, err := e.Enqueue(ctx, ringwal.Message{Payload: []byte("m" + strconv.Itoa(i))})
				if err != nil {
					childEmit("X enqueue: %v", err)
					return
				}
				childEmit("E %d", id)
			}
		}()
	}
	wg.Wait()
	<-ctx.Done() // wait for the kill
	os.Exit(4)   // never killed: the parent took too long
}

func TestCrashRedeliveryAfterKill(t *testing.T) {
	if os.Getenv(redeliveryDirEnv) != "" {
		t.Skip("in the child")
	}
	kills := 3
	if s := os.Getenv(redeliveryKillsEnv); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "%s", redeliveryKillsEnv)
		kills = n
	}
	for _, mode := range []string{"fsync", "write"} {
		t.Run(mode, func(t *testing.T) {
			var dups []int
			for k := range kills {
				n, ok := redeliveryKill(t, mode, k)
				if !ok {
					break
				}
				dups = append(dups, n)
			}
			slices.Sort(dups)
			t.Logf("%s: duplicates per kill (sorted) %v", mode, dups)
		})
	}
}

// redeliveryKill runs one child, kills it and checks the reopened
// directory. It returns the duplicates, and false if the check failed.
func redeliveryKill(t *testing.T, mode string, k int) (dups int, ok bool) {
	dir := t.TempDir()
	child := startCrashChild(t, "TestCrashRedeliveryChild", redeliveryDirEnv+"="+dir, redeliveryModeEnv+"="+mode)

	// Kill once killAt handlers succeeded: a random point of the run, in
	// handled messages rather than time, whatever the machine's speed.
	killAt := 200 + rand.IntN(redeliveryMessages*9/10-200)
	enqueued, handled := map[ringwal.ID]bool{}, map[ringwal.ID]bool{}
	var bad []string
	readDone := make(chan struct{})
	reached := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(child.stdout)
		for sc.Scan() {
			line := sc.Text()
			var id ringwal.ID
			var err error
			if len(line) > 2 && (line[0] == 'E' || line[0] == 'H') {
				var n uint64
				n, err = strconv.ParseUint(line[2:], 10, 64)
				id = n
			}
			switch {
			case err != nil || len(line) < 3:
				bad = append(bad, line)
			case line[0] == 'E':
				enqueued[id] = true
			case line[0] == 'H':
				handled[id] = true
				if len(handled) == killAt {
					child.kill()
					close(reached)
				}
			default:
				bad = append(bad, line)
			}
		}
	}()
	select {
	case <-reached:
	case <-readDone:
	case <-time.After(2 * time.Minute):
		t.Fatalf("kill %d: the child handled fewer than %d messages in time", k, killAt)
	}
	<-readDone
	child.wait()
	// Lines already in the pipe at the kill are read too: handled may
	// exceed killAt.
	if !assert.Empty(t, bad, "kill %d: the child's reports", k) ||
		!assert.GreaterOrEqual(t, len(handled), killAt, "kill %d: the child stopped before the kill", k) {
		return 0, false
	}

	e := open(t, dir, ringwal.Options{Durability: ringwal.Write})
	present := func(id ringwal.ID) bool {
		_, err := e.Get(id)
		if errors.Is(err, ringwal.ErrNotFound) {
			return false
		}
		require.NoError(t, err, "Get(%d)", id)
		return true
	}
	var lost []ringwal.ID
	for id := range enqueued {
		if !handled[id] && !present(id) {
			lost = append(lost, id)
		}
	}
	for id := range handled {
		if present(id) {
			dups++
		}
	}
	require.NoError(t, e.Close())
	slices.Sort(lost)
	t.Logf("kill %d: after %d handled of %d enqueued: %d duplicates", k, len(handled), len(enqueued), dups)
	return dups, assert.Empty(t, lost, "kill %d: acknowledged enqueues lost", k)
}
