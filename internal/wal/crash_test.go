package wal_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/internal/wal"
)

// The tests in this file run parts of themselves in a child process: the
// test binary re-executed with -test.run=^TestHelperProcess$ and
// RINGWAL_WAL_CHILD naming the role. The child talks to the parent through
// stdout, one line per event.
const (
	envRole = "RINGWAL_WAL_CHILD"
	envDir  = "RINGWAL_WAL_DIR"
	envBase = "RINGWAL_WAL_BASE"
)

// TestHelperProcess is the child's entry point; it does nothing in a
// normal test run.
func TestHelperProcess(t *testing.T) {
	role := os.Getenv(envRole)
	if role == "" {
		return
	}
	var err error
	switch role {
	case "crash":
		err = childCrash(os.Getenv(envDir), os.Getenv(envBase))
	case "efbig":
		err = childEFBIG(os.Getenv(envDir))
	case "lock":
		err = childLock(os.Getenv(envDir))
	case "failpoint":
		err = childFailpoint(os.Getenv(envDir), os.Getenv(envBase), os.Getenv(envFailpoint), os.Getenv(envFailHit))
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(3)
	}
	os.Exit(0)
}

func child(t *testing.T, role, dir string, extraEnv ...string) (*exec.Cmd, io.ReadCloser) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), envRole+"="+role, envDir+"="+dir), extraEnv...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	return cmd, out
}

// say writes one line to the parent. A write of a short line to a pipe is
// atomic, so goroutines need no lock.
func say(format string, args ...any) {
	os.Stdout.Write([]byte(fmt.Sprintf(format, args...) + "\n"))
}

// childCrash appends in Write mode from several goroutines, reporting each
// acknowledged ID, and checkpoints now and then, until it is killed.
func childCrash(dir, baseStr string) error {
	base, err := strconv.ParseUint(baseStr, 10, 64)
	if err != nil {
		return err
	}
	l, err := wal.Open(dir, wal.Options{Mode: wal.Write, SegmentSize: 32 << 10})
	if err != nil {
		return err
	}
	var mu sync.Mutex
	live := map[uint64]bool{}
	if _, err := l.Replay(func(r *wal.Record) error { live[r.ID] = true; return nil }); err != nil {
		return err
	}
	say("ready")
	var next atomic.Uint64
	next.Store(base)
	errc := make(chan error, 8)
	for g := 0; g < 4; g++ {
		go func() {
			for {
				id := next.Add(1)
				r := wal.Record{Kind: wal.KindEnqueue, ID: id, Time: int64(id), Payload: []byte("crash-test-payload")}
				mu.Lock()
				live[id] = true // state first, then the log (the engine's rule)
				mu.Unlock()
				var err error
				if id%7 == 0 {
					err = l.AppendBatch([]wal.Record{r})
				} else {
					err = l.Append(&r)
				}
				if err != nil {
					errc <- err
					return
				}
				say("%d", id)
			}
		}()
	}
	tick := time.NewTicker(3 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-errc:
			return err
		case <-tick.C:
			_, err := l.Checkpoint(func(emit func(*wal.Record) error) error {
				mu.Lock()
				ids := make([]uint64, 0, len(live))
				for id := range live {
					ids = append(ids, id)
				}
				mu.Unlock()
				for _, id := range ids {
					if err := emit(&wal.Record{Kind: wal.KindEnqueue, ID: id, Time: int64(id)}); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
	}
}

func TestCrashKeepsAcknowledged(t *testing.T) {
	rounds := 200
	if testing.Short() {
		rounds = 20
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	acked := map[uint64]bool{}
	var dir string
	var totalAcked, torn int
	for round := 0; round < rounds; round++ {
		if round%20 == 0 { // a fresh directory now and then keeps replays short
			dir = t.TempDir()
			acked = map[uint64]bool{}
		}
		cmd, out := child(t, "crash", dir, envBase+"="+strconv.Itoa((round+1)*1_000_000_000))
		ready := make(chan struct{})
		var got []uint64
		readDone := make(chan error, 1)
		go func() {
			sc := bufio.NewScanner(out)
			first := true
			for sc.Scan() {
				line := sc.Text()
				if line == "ready" && first {
					first = false
					close(ready)
					continue
				}
				if id, err := strconv.ParseUint(line, 10, 64); err == nil {
					got = append(got, id)
				}
			}
			if first {
				close(ready)
			}
			readDone <- sc.Err()
		}()
		select {
		case <-ready:
		case <-time.After(30 * time.Second):
			t.Fatal("child did not start")
		}
		time.Sleep(time.Duration(1+rng.IntN(15)) * time.Millisecond)
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		require.NoError(t, <-readDone) // everything the child printed before dying
		err := cmd.Wait()
		var ee *exec.ExitError
		require.True(t, errors.As(err, &ee), "child must die by the signal, got %v", err)
		require.Equal(t, syscall.SIGKILL, ee.Sys().(syscall.WaitStatus).Signal(), "child exited early")

		for _, id := range got {
			acked[id] = true
		}
		totalAcked += len(got)
		l, err := wal.Open(dir, wal.Options{})
		require.NoError(t, err, "round %d", round)
		if l.Repair().Bytes > 0 {
			torn++
		}
		found := map[uint64]bool{}
		_, err = l.Replay(func(r *wal.Record) error { found[r.ID] = true; return nil })
		require.NoError(t, err)
		require.NoError(t, l.Close())
		missing := 0
		for id := range acked {
			if !found[id] {
				missing++
			}
		}
		require.Zero(t, missing, "round %d: %d acknowledged records lost", round, missing)
	}
	t.Logf("%d rounds, %d acknowledged records checked, %d reopenings cut a torn tail", rounds, totalAcked, torn)
	assert.Positive(t, totalAcked)
}

// childEFBIG hits RLIMIT_FSIZE (write fails with EFBIG; Go ignores
// SIGXFSZ) with concurrent producers, checks that the log stays usable,
// lifts the limit and appends more. Reports "ack ID" and "fail ID".
func childEFBIG(dir string) error {
	l, err := wal.Open(dir, wal.Options{Mode: wal.Write, SegmentSize: 4 << 20, CompressAbove: -1})
	if err != nil {
		return err
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		return err
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 64 << 10, Max: old.Max}); err != nil {
		return err
	}
	payload := []byte(strings.Repeat("x", 200))
	var next atomic.Uint64
	var wg sync.WaitGroup
	var bad atomic.Value
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				id := next.Add(1)
				r := wal.Record{Kind: wal.KindEnqueue, ID: id, Payload: payload}
				if err := l.Append(&r); err != nil {
					if !errors.Is(err, syscall.EFBIG) {
						bad.Store(err)
					}
					say("fail %d", id)
					return
				}
				say("ack %d", id)
			}
		}()
	}
	wg.Wait()
	if err, ok := bad.Load().(error); ok {
		return fmt.Errorf("an append failed with something other than EFBIG: %w", err)
	}
	// Still at the limit: appending one at a time fills what the cut freed,
	// then fails again, cleanly, and the log is not dead.
	fails := 0
	for i := 0; i < 10_000 && fails < 3; i++ {
		id := next.Add(1)
		r := wal.Record{Kind: wal.KindEnqueue, ID: id, Payload: payload}
		if err := l.Append(&r); err != nil {
			if !errors.Is(err, syscall.EFBIG) {
				return fmt.Errorf("append over the limit: got %v, want EFBIG", err)
			}
			fails++
			say("fail %d", id)
			continue
		}
		say("ack %d", id)
	}
	if fails < 3 {
		return errors.New("appends kept succeeding over the file size limit")
	}
	if st := l.Stats(); st.Failed != nil {
		return fmt.Errorf("log marked unusable after a failed write: %w", st.Failed)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		return err
	}
	for i := 0; i < 50; i++ {
		id := next.Add(1)
		r := wal.Record{Kind: wal.KindEnqueue, ID: id, Payload: payload}
		if err := l.Append(&r); err != nil {
			return fmt.Errorf("append after lifting the limit: %w", err)
		}
		say("ack %d", id)
	}
	return l.Close()
}

func TestWriteFailureEFBIG(t *testing.T) {
	dir := t.TempDir()
	cmd, out := child(t, "efbig", dir)
	lines, err := io.ReadAll(out)
	require.NoError(t, err)
	require.NoError(t, cmd.Wait(), "child failed")
	acked, failed := map[uint64]bool{}, map[uint64]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(lines)), "\n") {
		var id uint64
		if _, err := fmt.Sscanf(line, "ack %d", &id); err == nil {
			acked[id] = true
		} else if _, err := fmt.Sscanf(line, "fail %d", &id); err == nil {
			failed[id] = true
		}
	}
	require.NotEmpty(t, acked)
	require.GreaterOrEqual(t, len(failed), 8+3, "every producer saw the error")

	l := open(t, dir, wal.Options{})
	assert.Zero(t, l.Repair(), "the writer repaired the file itself")
	found := map[uint64]bool{}
	for _, id := range replayIDs(t, l) {
		found[id] = true
	}
	assert.Equal(t, acked, found, "exactly the acknowledged records are in the log")
	for id := range failed {
		assert.False(t, found[id], "failed record %d was written", id)
	}
	require.NoError(t, l.Close())
	_, err = wal.Verify(dir, false)
	require.NoError(t, err)
}

// childLock holds the directory open until its stdin closes.
func childLock(dir string) error {
	l, err := wal.Open(dir, wal.Options{})
	if err != nil {
		return err
	}
	say("locked")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return l.Close()
}

func TestLockOtherProcess(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), envRole+"=lock", envDir+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "locked\n", line)

	_, err = wal.Open(dir, wal.Options{})
	require.ErrorIs(t, err, wal.ErrLocked)

	require.NoError(t, stdin.Close())
	require.NoError(t, cmd.Wait())
	l, err := wal.Open(dir, wal.Options{})
	require.NoError(t, err)
	require.NoError(t, l.Close())
}
