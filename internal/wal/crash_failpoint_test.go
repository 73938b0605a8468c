package wal_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/internal/wal"
)

// Crashes at the failpoints: inside a checkpoint (snapshot written but not
// renamed; renamed but the log not truncated; the log front truncated but
// the directory not fsynced) and at a segment switch. A child process
// appends, checkpoints and kills itself (SIGKILL) at the n-th time it
// reaches the named point; the parent reopens the directory: Open must
// succeed and every record the child was told was written must be there.

const (
	envFailpoint = "RINGWAL_WAL_FAILPOINT"
	envFailHit   = "RINGWAL_WAL_FAILHIT"
)

var failpoints = []string{"checkpoint-before-rename", "checkpoint-before-truncate", "truncate-front-before-sync", "segment-switch"}

func childFailpoint(dir, baseStr, name, hitStr string) error {
	base, err := strconv.ParseUint(baseStr, 10, 64)
	if err != nil {
		return err
	}
	hit, err := strconv.Atoi(hitStr)
	if err != nil {
		return err
	}
	var hits atomic.Int32
	wal.SetFailpoint(func(n string) {
		if n == name && int(hits.Add(1)) == hit {
			say("crash %s", n)
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	})
	mode := wal.Fsync
	if base%2 == 0 {
		mode = wal.Write
	}
	l, err := wal.Open(dir, wal.Options{Mode: mode, SegmentSize: 4 << 10})
	if err != nil {
		return err
	}
	var mu sync.Mutex
	live := map[uint64]bool{}
	if _, err := l.Replay(func(r *wal.Record) error { live[r.ID] = true; return nil }); err != nil {
		return err
	}
	var next atomic.Uint64
	next.Store(base)
	var wg sync.WaitGroup
	errc := make(chan error, 3)
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 400; i++ {
				id := next.Add(1)
				r := wal.Record{Kind: wal.KindEnqueue, ID: id, Payload: make([]byte, 60)}
				mu.Lock()
				live[id] = true
				mu.Unlock()
				if err := l.Append(&r); err != nil {
					errc <- err
					return
				}
				say("%d", id)
				if i%40 == 39 {
					_, err := l.Checkpoint(func(emit func(*wal.Record) error) error {
						mu.Lock()
						ids := make([]uint64, 0, len(live))
						for id := range live {
							ids = append(ids, id)
						}
						mu.Unlock()
						for _, id := range ids {
							if err := emit(&wal.Record{Kind: wal.KindEnqueue, ID: id}); err != nil {
								return err
							}
						}
						return nil
					})
					if err != nil {
						errc <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return err
	}
	say("survived")
	return l.Close()
}

func TestCrashAtFailpoints(t *testing.T) {
	hits := []int{1, 2, 5}
	if testing.Short() {
		hits = []int{2}
	}
	var crashes, checked int
	for _, name := range failpoints {
		dir := t.TempDir()
		acked := map[uint64]bool{}
		for round, hit := range hits {
			// The child runs in Fsync mode for an odd base, Write mode for an even
			// one: the name length picks, so failpoints differ in mode.
			base := uint64(round+1)*1_000_000 + uint64(len(name)%2)
			cmd, out := child(t, "failpoint", dir, envBase+"="+strconv.FormatUint(base, 10),
				envFailpoint+"="+name, envFailHit+"="+strconv.Itoa(hit))
			crashed := false
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				line := sc.Text()
				if id, err := strconv.ParseUint(line, 10, 64); err == nil {
					acked[id] = true
				} else if line == "crash "+name {
					crashed = true
				}
			}
			require.NoError(t, sc.Err())
			err := cmd.Wait()
			var ee *exec.ExitError
			require.True(t, crashed, "%s hit %d: the child never reached the failpoint (exit: %v)", name, hit, err)
			require.True(t, errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL,
				"%s hit %d: the child must die by SIGKILL, got %v", name, hit, err)
			crashes++

			l, err := wal.Open(dir, wal.Options{})
			require.NoError(t, err, "%s hit %d: Open after the crash", name, hit)
			found := map[uint64]bool{}
			_, err = l.Replay(func(r *wal.Record) error { found[r.ID] = true; return nil })
			require.NoError(t, err)
			require.NoError(t, l.Close())
			for id := range acked {
				checked++
				require.True(t, found[id], "%s hit %d: acknowledged record %d lost", name, hit, id)
			}
			_, err = wal.Verify(dir, false)
			require.NoError(t, err, fmt.Sprintf("%s hit %d", name, hit))
		}
	}
	t.Logf("%d crashes at %d failpoints, %d acknowledged records checked, 0 lost", crashes, len(failpoints), checked)
}
