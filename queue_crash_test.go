package ringwal_test

// A SIGKILL with several queues: producers enqueue into four queues and
// publish to a topic two of them bind, Run workers handle every queue,
// and the parent kills the child at a random point. After a reopen every
// acknowledged enqueue whose handler never succeeded is there, in its own
// queue; every acknowledged publish has all its copies (each in its own
// queue) except those handled; and each queue delivers only its own.
//
//	E id queue   Enqueue returned nil
//	P id id      Publish returned nil, with its copies' IDs
//	H id queue   the handler of queue succeeded (it returns nil next)
//	X text       the child failed

import (
	"bufio"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

const (
	queuesCrashDirEnv = "RINGWAL_TEST_QUEUES_CRASH_DIR"
	queuesCrashN      = 4000
)

var crashQueues = []string{"", "alpha", "beta", "gamma"}

func TestQueuesCrashChild(t *testing.T) {
	dir := os.Getenv(queuesCrashDirEnv)
	if dir == "" {
		t.Skip("helper process for TestQueuesSurviveSIGKILL")
	}
	e := childOpen(dir, ringwal.Options{Queues: map[string]ringwal.QueueOptions{
		"beta": {Topics: []string{"events"}}, "gamma": {Topics: []string{"events"}, MaxMessages: 5000},
	}})
	ctx, cancel := context.WithTimeout(ctxBG, time.Minute)
	defer cancel()
	for _, q := range crashQueues {
		go func() {
			err := e.Queue(q).Run(ctx, 2, func(_ context.Context, d ringwal.Delivery) error {
				childEmit("H %d %s", d.ID, queueLabel(d.Message.Queue))
				return nil
			})
			if err != nil {
				childEmit("X run %q: %v", q, err)
			}
		}()
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < queuesCrashN; i += 4 {
				if i%5 == 0 {
					ids, err := e.Publish(ctx, "events", ringwal.Message{Payload: []byte("p" + strconv.Itoa(i))})
					if err != nil {
						childFail("publish: %v", err)
					}
					childEmit("P %d %d", ids[0], ids[1])
					continue
				}
				q := crashQueues[i%len(crashQueues)]
				id, err := e.Enqueue(ctx, ringwal.Message{Queue: q, Payload: []byte("m" + strconv.Itoa(i))})
				if err != nil {
					childFail("enqueue: %v", err)
				}
				childEmit("E %d %s", id, queueLabel(q))
			}
		}()
	}
	wg.Wait()
	<-ctx.Done()
	os.Exit(4)
}

// queueLabel is a queue's name in a report line ("-" for the default).
func queueLabel(q string) string {
	if q == "" {
		return "-"
	}
	return q
}

func TestQueuesSurviveSIGKILL(t *testing.T) {
	if os.Getenv(queuesCrashDirEnv) != "" {
		t.Skip("in the child")
	}
	for k := range 3 {
		dir := t.TempDir()
		child := startCrashChild(t, "TestQueuesCrashChild", queuesCrashDirEnv+"="+dir)
		killAt := 100 + rand.IntN(queuesCrashN/2)
		enqueued := map[ringwal.ID]string{} // ID -> queue
		handled := map[ringwal.ID]string{}
		var copies [][2]ringwal.ID
		var bad []string
		readDone, reached := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(readDone)
			sc := bufio.NewScanner(child.stdout)
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				id := func(i int) ringwal.ID {
					n, err := strconv.ParseUint(f[i], 10, 64)
					if err != nil {
						bad = append(bad, sc.Text())
					}
					return n
				}
				label := func(s string) string { return strings.TrimPrefix(s, "-") }
				switch {
				case len(f) == 3 && f[0] == "E":
					enqueued[id(1)] = label(f[2])
				case len(f) == 3 && f[0] == "P":
					copies = append(copies, [2]ringwal.ID{id(1), id(2)})
				case len(f) == 3 && f[0] == "H":
					handled[id(1)] = label(f[2])
					if len(handled) == killAt {
						child.kill()
						close(reached)
					}
				default:
					bad = append(bad, sc.Text())
				}
			}
		}()
		select {
		case <-reached:
		case <-readDone:
		case <-time.After(2 * time.Minute):
			t.Fatalf("kill %d: fewer than %d handled in time", k, killAt)
		}
		<-readDone
		child.wait()
		require.Empty(t, bad, "kill %d: the child's reports", k)

		e := open(t, dir, ringwal.Options{})
		queueOf := func(id ringwal.ID) (string, bool) {
			info, err := e.Get(id)
			if errors.Is(err, ringwal.ErrNotFound) {
				return "", false
			}
			require.NoError(t, err)
			return info.Message.Queue, true
		}
		lost := 0
		for id, q := range enqueued {
			if _, ok := handled[id]; ok {
				continue
			}
			got, ok := queueOf(id)
			if !ok {
				lost++
				continue
			}
			assert.Equal(t, q, got, "kill %d: message %d back in its own queue", k, id)
		}
		for _, c := range copies {
			for i, want := range []string{"beta", "gamma"} {
				if _, ok := handled[c[i]]; ok {
					continue
				}
				got, ok := queueOf(c[i])
				if !ok {
					lost++
					continue
				}
				assert.Equal(t, want, got, "kill %d: publish copy %d in its queue", k, c[i])
			}
		}
		assert.Zero(t, lost, "kill %d: acknowledged messages lost", k)
		for _, q := range crashQueues {
			for {
				d, ok := e.Queue(q).TryDequeue()
				if !ok {
					break
				}
				require.Equal(t, q, d.Message.Queue, "kill %d: queue %q delivers only its own", k, q)
				require.NoError(t, e.Ack(d.Lease))
			}
		}
		require.NoError(t, e.Close())
		t.Logf("kill %d: %d enqueued, %d publishes, %d handled", k, len(enqueued), len(copies), len(handled))
	}
}
