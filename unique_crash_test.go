package ringwal_test

import (
	"bufio"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

const uniqueCrashDirEnv = "RINGWAL_UNIQUE_CRASH_DIR"

// TestUniqueCrashChild is the child of TestUniqueSurvivesSIGKILL: it
// enqueues messages unique while live, each under a DedupID of its own,
// and replaces 8 delayed messages again and again, reporting each answer
// once it has it ("L <id> <dedup>", "R <id> <key> <seq>"), until killed.
func TestUniqueCrashChild(t *testing.T) {
	dir := os.Getenv(uniqueCrashDirEnv)
	if dir == "" {
		t.Skip("the child of TestUniqueSurvivesSIGKILL")
	}
	e := childOpen(dir, ringwal.Options{})
	for i := 0; ; i++ {
		d := "job-" + strconv.Itoa(i)
		id, err := e.Enqueue(ctxBG, ringwal.Message{DedupID: d, Unique: ringwal.UniqueLive, Payload: []byte(d)})
		if err != nil {
			childFail("enqueue: %v", err)
		}
		childEmit("L %d %s", id, d)
		key := "cfg-" + strconv.Itoa(i%8)
		id, err = e.Enqueue(ctxBG, ringwal.Message{DedupID: key, Unique: ringwal.UniqueQueued, Replace: true,
			Payload: []byte(strconv.Itoa(i)), Delay: time.Hour})
		if err != nil {
			childFail("replace: %v", err)
		}
		childEmit("R %d %s %d", id, key, i)
	}
}

// A SIGKILL loses no acknowledged uniqueness: after the reopen, every
// message whose enqueue was answered is live and refuses a repeat with its
// ID, and each replaced message is one message holding the last answered
// payload or a later one (a replace is logged before it is answered).
func TestUniqueSurvivesSIGKILL(t *testing.T) {
	if os.Getenv(uniqueCrashDirEnv) != "" {
		t.Skip("in the child")
	}
	for k := range 3 {
		dir := t.TempDir()
		child := startCrashChild(t, "TestUniqueCrashChild", uniqueCrashDirEnv+"="+dir)
		killAt := 50 + rand.IntN(400)
		live := map[string]ringwal.ID{}
		replaced := map[string]ringwal.ID{}
		lastSeq := map[string]int{}
		var bad []string
		readDone, reached := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(readDone)
			sc := bufio.NewScanner(child.stdout)
			lines := 0
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				n, err := strconv.ParseUint(f[min(1, len(f)-1)], 10, 64)
				switch {
				case err == nil && len(f) == 3 && f[0] == "L":
					live[f[2]] = n
				case err == nil && len(f) == 4 && f[0] == "R":
					replaced[f[2]] = n
					lastSeq[f[2]], _ = strconv.Atoi(f[3])
				default:
					bad = append(bad, sc.Text())
				}
				if lines++; lines == killAt {
					child.kill()
					close(reached)
				}
			}
		}()
		select {
		case <-reached:
		case <-readDone:
		case <-time.After(2 * time.Minute):
			t.Fatalf("kill %d: fewer than %d reports in time", k, killAt)
		}
		<-readDone
		child.wait()
		require.Empty(t, bad, "kill %d: the child's reports", k)

		e := open(t, dir, ringwal.Options{})
		for d, id := range live {
			got, err := e.Enqueue(ctxBG, ringwal.Message{DedupID: d, Unique: ringwal.UniqueLive})
			require.ErrorIs(t, err, ringwal.ErrDuplicate, "kill %d: %s refuses a repeat", k, d)
			assert.Equal(t, id, got, "kill %d: %s", k, d)
		}
		for key, id := range replaced {
			info, err := e.Get(id)
			require.NoError(t, err, "kill %d: %s", k, key)
			seq, err := strconv.Atoi(string(info.Message.Payload))
			require.NoError(t, err)
			assert.GreaterOrEqual(t, seq, lastSeq[key], "kill %d: %s holds the last answered payload or a later one", k, key)
			got, err := e.Enqueue(ctxBG, ringwal.Message{DedupID: key, Unique: ringwal.UniqueQueued})
			require.ErrorIs(t, err, ringwal.ErrDuplicate)
			assert.Equal(t, id, got, "kill %d: %s is one message", k, key)
		}
		var delayed int
		for info := range e.Messages(ringwal.Filter{States: []ringwal.State{ringwal.Delayed}}) {
			if strings.HasPrefix(info.Message.DedupID, "cfg-") {
				delayed++
			}
		}
		assert.LessOrEqual(t, delayed, 8, "kill %d: one message per replaced DedupID", k)
		require.NoError(t, e.Close())
		t.Logf("kill %d after %d reports: %d live, %d replaced", k, killAt, len(live), len(replaced))
	}
}
