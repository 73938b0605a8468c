package ringwal_test

// Durability: close and reopen in every mode preserves every state; the
// dedup index survives a restart; the directory lock; and a SIGKILL crash
// loses nothing a Write-mode call returned for.

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/dlq"
)

var durabilities = []ringwal.Durability{ringwal.Write, ringwal.Fsync, ringwal.Buffered}

func TestReopenPreservesEveryState(t *testing.T) {
	for _, mode := range durabilities {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			opts := func(c *clock.Fake) ringwal.Options {
				return ringwal.Options{
					Durability: mode,
					Clock:      c,
					AgingAfter: noAging,
					Breaker:    breaker.Options{ConsecutiveFailures: 1, OpenTimeout: time.Hour},
					Policies: map[classify.Category]classify.RetryPolicy{
						classify.Transient: {MaxAttempts: 5, Base: 10 * time.Second, Multiplier: 1, Jitter: classify.NoJitter},
					},
				}
			}
			f1 := clock.NewFake(time.Time{})
			t0 := f1.Now()
			e1, err := ringwal.Open(dir, opts(f1))
			require.NoError(t, err)
			closed := false
			t.Cleanup(func() {
				if !closed {
					_ = e1.Close()
				}
			})

			// F: failed once on key "down", whose breaker is now open;
			// retry due at t0+10s.
			fID := enqueue(t, e1, ringwal.Message{Key: "down", Priority: ringwal.High, Payload: []byte("f")})
			d := dequeue(t, e1)
			require.Equal(t, fID, d.ID)
			require.NoError(t, e1.Nack(d.Lease, transient("down for maintenance")))
			waitState(t, e1, fID, ringwal.Delayed)

			// H: held behind the open breaker.
			hID := enqueue(t, e1, ringwal.Message{Key: "down", Payload: []byte("h")})
			assertNothingReady(t, e1, "H's key is open")
			waitState(t, e1, hID, ringwal.Held)

			// X, R: dead; R reviewed.
			var deadIDs []ringwal.ID
			for _, p := range []string{"x", "r"} {
				id := enqueueP(t, e1, ringwal.Normal, p)
				d := dequeue(t, e1)
				require.Equal(t, id, d.ID)
				require.NoError(t, e1.Nack(d.Lease, permanent("rejected "+p)))
				waitState(t, e1, id, ringwal.Dead)
				deadIDs = append(deadIDs, id)
			}
			xID, rID := deadIDs[0], deadIDs[1]
			require.NoError(t, e1.MarkReviewed(rID, "reviewed before restart"))

			// A: acked.
			aID := enqueueP(t, e1, ringwal.Normal, "a")
			d = dequeue(t, e1)
			require.Equal(t, aID, d.ID)
			require.NoError(t, e1.Ack(d.Lease))

			// L: leased at close.
			lID := enqueue(t, e1, ringwal.Message{Payload: []byte("l"), Headers: map[string]string{"k": "v"}})
			d = dequeue(t, e1)
			require.Equal(t, lID, d.ID)

			// P: pending; D: delayed until t0+10s.
			pMsg := ringwal.Message{Key: "k", Priority: ringwal.High, Payload: []byte("p"),
				Headers: map[string]string{"trace": "1", "tenant": "acme"}, MaxAttempts: 4}
			pID := enqueue(t, e1, pMsg)
			dID := enqueue(t, e1, ringwal.Message{Payload: []byte("d"), Delay: 10 * time.Second})

			waitCounts(t, e1, stateCounts{Pending: 1, Delayed: 2, Leased: 1, Held: 1, Dead: 2})
			require.NoError(t, e1.Close())
			closed = true

			// Reopen at the same instant.
			f2 := clock.NewFake(f1.Now())
			e2 := open(t, dir, opts(f2))

			info, err := e2.Get(pID)
			require.NoError(t, err)
			assert.Equal(t, ringwal.Pending, info.State, "pending stays pending")
			assert.Equal(t, pMsg.Key, info.Message.Key)
			assert.Equal(t, pMsg.Priority, info.Message.Priority)
			assert.Equal(t, "p", string(info.Message.Payload))
			assert.Equal(t, pMsg.Headers, info.Message.Headers)
			assert.Equal(t, 4, info.Message.MaxAttempts)
			assert.True(t, info.EnqueuedAt.Equal(t0), "EnqueuedAt %v survives, want %v", info.EnqueuedAt, t0)

			info, err = e2.Get(dID)
			require.NoError(t, err)
			assert.Equal(t, ringwal.Delayed, info.State, "delayed stays delayed")
			assert.True(t, info.NextAt.Equal(t0.Add(10*time.Second)), "NextAt %v", info.NextAt)

			info, err = e2.Get(lID)
			require.NoError(t, err)
			assert.Equal(t, ringwal.Pending, info.State, "leased comes back pending")
			assert.Equal(t, 1, info.Attempts, "with its attempt counted")
			assert.Equal(t, map[string]string{"k": "v"}, info.Message.Headers)

			info, err = e2.Get(hID)
			require.NoError(t, err)
			assert.Equal(t, ringwal.Pending, info.State, "held comes back pending")
			assert.Equal(t, 0, info.Attempts)

			info, err = e2.Get(fID)
			require.NoError(t, err)
			assert.Equal(t, ringwal.Delayed, info.State, "a scheduled retry stays scheduled")
			assert.Equal(t, 1, info.Attempts)
			assert.Equal(t, "down for maintenance", info.LastError)
			assert.Equal(t, classify.Transient, info.LastCategory)
			assert.True(t, info.NextAt.Equal(t0.Add(10*time.Second)), "NextAt %v", info.NextAt)

			for _, id := range []ringwal.ID{xID, rID} {
				info, err = e2.Get(id)
				require.NoError(t, err)
				assert.Equal(t, ringwal.Dead, info.State, "dead stays dead")
				assert.Equal(t, classify.Permanent, info.LastCategory)
			}
			rev, err := e2.DeadLetters(dlq.Query{Reviewed: dlq.OnlyReviewed})
			require.NoError(t, err)
			if assert.Len(t, rev, 1) {
				assert.Equal(t, rID, rev[0].ID)
				assert.True(t, rev[0].Reviewed)
				assert.Equal(t, "reviewed before restart", rev[0].Note)
				assert.Equal(t, "r", string(rev[0].Message.Payload))
				if assert.NotEmpty(t, rev[0].Failures) {
					assert.Equal(t, "rejected r", rev[0].Failures[len(rev[0].Failures)-1].Error)
				}
			}
			unrev, err := e2.DeadLetters(dlq.Query{Reviewed: dlq.OnlyUnreviewed})
			require.NoError(t, err)
			if assert.Len(t, unrev, 1) {
				assert.Equal(t, xID, unrev[0].ID)
				assert.Equal(t, classify.Permanent, unrev[0].Category)
			}

			_, err = e2.Get(aID)
			assert.ErrorIs(t, err, ringwal.ErrNotFound, "acked stays acked")
			waitCounts(t, e2, stateCounts{Pending: 3, Delayed: 2, Dead: 2})

			// The three pending ones are delivered, once each.
			got := map[ringwal.ID]ringwal.Delivery{}
			for i := 0; i < 3; i++ {
				d := dequeue(t, e2)
				assert.NotContains(t, got, d.ID, "delivered twice")
				got[d.ID] = d
			}
			assertNothingReady(t, e2, "only P, L and H are ready")
			if assert.Contains(t, got, lID) {
				assert.Equal(t, 2, got[lID].Attempt, "L's lease before the restart counted")
			}
			if assert.Contains(t, got, hID) {
				assert.Equal(t, 1, got[hID].Attempt)
			}
			if assert.Contains(t, got, pID) {
				assert.Equal(t, 1, got[pID].Attempt)
			}

			// New IDs do not reuse old ones.
			old := map[ringwal.ID]bool{fID: true, hID: true, xID: true, rID: true, aID: true, lID: true, pID: true, dID: true}
			nID := enqueueP(t, e2, ringwal.Low, "new")
			assert.False(t, old[nID], "ID %d reused after restart", nID)

			// The delayed message and the retry come due.
			f2.Advance(10*time.Second + 5*time.Millisecond)
			for i := 0; i < 3; i++ {
				d := dequeue(t, e2)
				assert.NotContains(t, got, d.ID, "delivered twice")
				got[d.ID] = d
			}
			if assert.Contains(t, got, fID) {
				assert.Equal(t, 2, got[fID].Attempt)
			}
			assert.Contains(t, got, dID)
			assert.Contains(t, got, nID)

			// Changes made after recovery persist too.
			for _, d := range got {
				require.NoError(t, e2.Ack(d.Lease))
			}
			require.NoError(t, e2.Redrive(xID))
			n, err := e2.PurgeDeadLetters(dlq.Query{Reviewed: dlq.OnlyReviewed})
			require.NoError(t, err)
			assert.Equal(t, 1, n)
			require.NoError(t, e2.Close())

			e3 := open(t, dir, opts(clock.NewFake(f2.Now())))
			for id := range got {
				_, err := e3.Get(id)
				assert.ErrorIs(t, err, ringwal.ErrNotFound, "ID %d was acked before the second restart", id)
			}
			_, err = e3.Get(rID)
			assert.ErrorIs(t, err, ringwal.ErrNotFound, "purged stays purged")
			info, err = e3.Get(xID)
			require.NoError(t, err)
			assert.Equal(t, ringwal.Pending, info.State, "redriven stays pending")
			assert.Equal(t, 0, info.Attempts)
			waitCounts(t, e3, stateCounts{Pending: 1})
		})
	}
}

func TestDedup(t *testing.T) {
	t.Run("within and after the window", func(t *testing.T) {
		e, fake := memEngine(t, ringwal.Options{DedupWindow: time.Minute})
		id1, err := e.Enqueue(ctxBG, ringwal.Message{DedupID: "order-1", Payload: []byte("first")})
		require.NoError(t, err)
		id2, err := e.Enqueue(ctxBG, ringwal.Message{DedupID: "order-1", Payload: []byte("second")})
		assert.ErrorIs(t, err, ringwal.ErrDuplicate)
		assert.Equal(t, id1, id2, "a duplicate returns the first ID")
		id3, err := e.TryEnqueue(ringwal.Message{DedupID: "order-1"})
		assert.ErrorIs(t, err, ringwal.ErrDuplicate)
		assert.Equal(t, id1, id3)

		other, err := e.Enqueue(ctxBG, ringwal.Message{DedupID: "order-2"})
		require.NoError(t, err)
		assert.NotEqual(t, id1, other)
		n1 := enqueueP(t, e, ringwal.Normal, "no dedup id")
		n2 := enqueueP(t, e, ringwal.Normal, "no dedup id")
		assert.NotEqual(t, n1, n2, "an empty DedupID never deduplicates")
		assert.Equal(t, uint64(4), e.Stats().Enqueued)

		// Acking the first does not end the window.
		d := dequeue(t, e)
		require.Equal(t, id1, d.ID)
		assert.Equal(t, "first", string(d.Message.Payload))
		require.NoError(t, e.Ack(d.Lease))
		id4, err := e.Enqueue(ctxBG, ringwal.Message{DedupID: "order-1"})
		assert.ErrorIs(t, err, ringwal.ErrDuplicate, "still within the window after Ack")
		assert.Equal(t, id1, id4)

		fake.Advance(59 * time.Second)
		_, err = e.Enqueue(ctxBG, ringwal.Message{DedupID: "order-1"})
		assert.ErrorIs(t, err, ringwal.ErrDuplicate, "1s before the window ends")

		fake.Advance(time.Second + 5*time.Millisecond)
		var id5 ringwal.ID
		assert.Eventually(t, func() bool {
			id5, err = e.Enqueue(ctxBG, ringwal.Message{DedupID: "order-1", Payload: []byte("third")})
			return err == nil
		}, waitFor, tick, "accepted again after the window: last error %v", err)
		assert.NotEqual(t, id1, id5)
	})
	t.Run("negative window turns it off", func(t *testing.T) {
		e, _ := memEngine(t, ringwal.Options{DedupWindow: -1})
		a, err := e.Enqueue(ctxBG, ringwal.Message{DedupID: "x"})
		require.NoError(t, err)
		b, err := e.Enqueue(ctxBG, ringwal.Message{DedupID: "x"})
		require.NoError(t, err)
		assert.NotEqual(t, a, b)
	})
}

func TestDedupSurvivesRestart(t *testing.T) {
	for _, tc := range []struct {
		name       string
		mode       ringwal.Durability
		checkpoint bool
	}{
		{"write", ringwal.Write, false},
		{"buffered", ringwal.Buffered, false},
		{"write after checkpoint", ringwal.Write, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			f1 := clock.NewFake(time.Time{})
			o := ringwal.Options{Durability: tc.mode, DedupWindow: time.Minute, Clock: f1}
			e1, err := ringwal.Open(dir, o)
			require.NoError(t, err)

			acked, err := e1.Enqueue(ctxBG, ringwal.Message{DedupID: "acked"})
			require.NoError(t, err)
			d := dequeue(t, e1)
			require.NoError(t, e1.Ack(d.Lease))
			pending, err := e1.Enqueue(ctxBG, ringwal.Message{DedupID: "pending"})
			require.NoError(t, err)
			if tc.checkpoint {
				require.NoError(t, e1.Checkpoint())
			}
			require.NoError(t, e1.Close())

			f2 := clock.NewFake(f1.Now().Add(10 * time.Second))
			o.Clock = f2
			e2 := open(t, dir, o)
			for key, want := range map[string]ringwal.ID{"acked": acked, "pending": pending} {
				id, err := e2.Enqueue(ctxBG, ringwal.Message{DedupID: key})
				assert.ErrorIs(t, err, ringwal.ErrDuplicate, "%s: dedup index survives the restart", key)
				assert.Equal(t, want, id, key)
			}
			waitCounts(t, e2, stateCounts{Pending: 1})

			f2.Advance(time.Minute)
			assert.Eventually(t, func() bool {
				_, err := e2.Enqueue(ctxBG, ringwal.Message{DedupID: "pending"})
				return err == nil
			}, waitFor, tick, "accepted again once the window has passed")
		})
	}
}

func TestSecondOpenLocked(t *testing.T) {
	dir := t.TempDir()
	e1, err := ringwal.Open(dir, ringwal.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e1.Close() })

	e2, err := ringwal.Open(dir, ringwal.Options{})
	if e2 != nil {
		t.Cleanup(func() { _ = e2.Close() })
	}
	require.Error(t, err, "second Open of a directory in use")
	assert.ErrorIs(t, err, ringwal.ErrLocked)
	assert.Nil(t, e2)

	// The first engine is unaffected, and the lock goes with Close.
	id := enqueueP(t, e1, ringwal.Normal, "x")
	require.NoError(t, e1.Close())
	e3 := open(t, dir, ringwal.Options{})
	info, err := e3.Get(id)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Pending, info.State)
}

// ---------------------------------------------------------------------------
// SIGKILL crash test

const crashEnv = "RINGWAL_CRASH_CHILD"

// TestCrashChild is the child half of TestCrashRecovery: it runs only when
// the parent re-executes the test binary with RINGWAL_CRASH_CHILD=dir. It
// enqueues numbered messages and acks some, printing each ID only after the
// call returned ("E id seq" after Enqueue, "D id" after TryDequeue, "A id"
// after Ack), until it is killed.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashEnv)
	if dir == "" {
		t.Skip("helper process for TestCrashRecovery")
	}
	e, err := ringwal.Open(dir, ringwal.Options{Durability: ringwal.Write})
	if err != nil {
		fmt.Printf("X open: %v\n", err)
		os.Exit(3)
	}
	out := os.Stdout // unbuffered: one write(2) per line, atomic on a pipe
	stop := time.Now().Add(30 * time.Second)
	for seq := 0; time.Now().Before(stop); seq++ {
		id, err := e.Enqueue(ctxBG, ringwal.Message{Payload: []byte(strconv.Itoa(seq))})
		if err != nil {
			fmt.Fprintf(out, "X enqueue: %v\n", err)
			os.Exit(3)
		}
		fmt.Fprintf(out, "E %d %d\n", id, seq)
		if seq%3 == 2 {
			for i := 0; i < 2; i++ {
				d, ok := e.TryDequeue()
				if !ok {
					break
				}
				fmt.Fprintf(out, "D %d\n", d.ID) // ack in flight from here on
				if err := e.Ack(d.Lease); err != nil {
					fmt.Fprintf(out, "X ack: %v\n", err)
					os.Exit(3)
				}
				fmt.Fprintf(out, "A %d\n", d.ID)
			}
		}
	}
	os.Exit(4) // never killed: the parent took too long
}

func TestCrashRecovery(t *testing.T) {
	if os.Getenv(crashEnv) != "" {
		t.Skip("in the child")
	}
	rounds := 20
	if testing.Short() {
		rounds = 5
	}
	for r := 0; r < rounds; r++ {
		t.Run(fmt.Sprintf("round%d", r), func(t *testing.T) { crashRound(t) })
		if t.Failed() {
			break
		}
	}
}

func crashRound(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})

	var mu sync.Mutex
	enq := map[ringwal.ID]int{} // reported enqueues: ID -> seq
	acked := map[ringwal.ID]bool{}
	leased := map[ringwal.ID]bool{} // dequeued by the child; acked unless the kill came first
	var bad []string
	maxSeq := -1
	first := make(chan struct{})
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(stdout)
		once := sync.Once{}
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 0 {
				continue
			}
			mu.Lock()
			switch {
			case f[0] == "E" && len(f) == 3:
				id, err1 := strconv.ParseUint(f[1], 10, 64)
				seq, err2 := strconv.Atoi(f[2])
				if err1 != nil || err2 != nil {
					bad = append(bad, sc.Text())
					break
				}
				if _, dup := enq[id]; dup {
					bad = append(bad, "ID returned twice: "+sc.Text())
				}
				enq[id] = seq
				maxSeq = max(maxSeq, seq)
				once.Do(func() { close(first) })
			case f[0] == "D" && len(f) == 2:
				id, err := strconv.ParseUint(f[1], 10, 64)
				if err != nil {
					bad = append(bad, sc.Text())
					break
				}
				leased[id] = true
			case f[0] == "A" && len(f) == 2:
				id, err := strconv.ParseUint(f[1], 10, 64)
				if err != nil {
					bad = append(bad, sc.Text())
					break
				}
				acked[id] = true
			case f[0] == "X":
				bad = append(bad, sc.Text())
			}
			mu.Unlock()
		}
	}()

	select {
	case <-first:
	case <-readDone:
		t.Fatalf("child exited before enqueuing: %v", bad)
	case <-time.After(30 * time.Second):
		t.Fatal("child did not start enqueuing")
	}
	time.Sleep(time.Duration(50+rand.IntN(250)) * time.Millisecond) // random kill moment (real time, not engine time)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	killed = true
	<-readDone // everything the child wrote before dying
	_ = cmd.Wait()

	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, bad, "child reported errors")
	require.NotEmpty(t, enq)

	e := open(t, dir, ringwal.Options{Durability: ringwal.Write})
	delivered := map[ringwal.ID]int{}
	var unreported []ringwal.ID
	for {
		d, ok := e.TryDequeue()
		if !ok {
			break
		}
		delivered[d.ID]++
		seq, err := strconv.Atoi(string(d.Message.Payload))
		if !assert.NoError(t, err, "payload of %d: %q", d.ID, d.Message.Payload) {
			continue
		}
		if want, ok := enq[d.ID]; ok {
			assert.Equal(t, want, seq, "payload of %d", d.ID)
		} else {
			unreported = append(unreported, d.ID)
			// Only the one Enqueue in flight at the kill can be durable
			// without having been reported.
			assert.Equal(t, maxSeq+1, seq, "unreported message %d", d.ID)
		}
		require.NoError(t, e.Ack(d.Lease))
	}
	for id, n := range delivered {
		assert.Equal(t, 1, n, "ID %d delivered %d times", id, n)
		assert.False(t, acked[id], "ID %d was acked before the crash but delivered again", id)
	}
	// An Ack in flight at the kill (reported "D" but not "A") may or may
	// not have reached the log; the child acks one at a time.
	var inFlight []ringwal.ID
	for id := range leased {
		if !acked[id] {
			inFlight = append(inFlight, id)
		}
	}
	assert.LessOrEqual(t, len(inFlight), 1, "acks in flight: %v", inFlight)
	missing := 0
	for id := range enq {
		if !acked[id] && !leased[id] && delivered[id] == 0 {
			missing++
			if missing <= 5 {
				t.Errorf("reported enqueue %d (seq %d) lost in the crash", id, enq[id])
			}
		}
	}
	assert.Zero(t, missing, "lost messages")
	assert.LessOrEqual(t, len(unreported), 1, "unreported messages: %v", unreported)
	t.Logf("child enqueued %d, acked %d; recovered %d (unreported %d)", len(enq), len(acked), len(delivered), len(unreported))
}
