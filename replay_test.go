package ringwal_test

// Facts that must survive a checkpoint and a reopen: every test here runs
// a scenario, closes the engine (after a checkpoint in the "checkpoint"
// subtest), reopens the directory and compares what the public API reads
// before and after.

import (
	"log/slog"
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

// TestRequeueBeforeDelaySurvivesReopen: a message requeued before its
// Delay ended is pending, and stays pending after a reopen, with its
// Delay still in its Message.
func TestRequeueBeforeDelaySurvivesReopen(t *testing.T) {
	forLogAndCheckpoint(t, func(t *testing.T, checkpoint bool) {
		fake := clock.NewFake(time.Time{})
		r := newReopener(t, ringwal.Options{Clock: fake})
		m := ringwal.Message{Payload: []byte("soon"), Delay: time.Hour}
		id := enqueue(t, r.e, m)
		require.NoError(t, r.e.Requeue(id))
		before, err := r.e.Get(id)
		require.NoError(t, err)
		require.Equal(t, ringwal.Pending, before.State)

		e2, _ := r.reopen(checkpoint, fake.Now())
		after, err := e2.Get(id)
		require.NoError(t, err)
		assert.Equal(t, ringwal.Pending, after.State, "a requeued message is ready now, not at enqueue+Delay")
		assert.Equal(t, m.Delay, after.Message.Delay)
		d := dequeue(t, e2)
		assert.Equal(t, id, d.ID)
	})
}

// TestOpenAppliesDueAndExpired: Open returns with what the housekeeper's
// first pass would give: messages that came due while the engine was
// closed are pending (ready since their due time), and those whose TTL
// ended are dead-lettered as Expired, with a record of their own.
func TestOpenAppliesDueAndExpired(t *testing.T) {
	forLogAndCheckpoint(t, func(t *testing.T, checkpoint bool) {
		fake := clock.NewFake(time.Time{})
		r := newReopener(t, ringwal.Options{Clock: fake, Policies: fastPolicies(5)})
		const n = 200 // enough that a housekeeper racing Open cannot hide the difference
		var delayed, expiring, retried []ringwal.ID
		for i := 0; i < n; i++ {
			delayed = append(delayed, enqueue(t, r.e, ringwal.Message{Delay: 10 * time.Second}))
			expiring = append(expiring, enqueue(t, r.e, ringwal.Message{TTL: 10 * time.Second, Delay: 5 * time.Second}))
		}
		for i := 0; i < 3; i++ {
			retried = append(retried, enqueue(t, r.e, ringwal.Message{}))
			d := dequeue(t, r.e)
			require.NoError(t, r.e.Nack(d.Lease, transient("later")))
		}
		plain := enqueue(t, r.e, ringwal.Message{TTL: time.Hour})
		waitCounts(t, r.e, stateCounts{Pending: 1, Delayed: 2*n + 3})

		e2, fake2 := r.reopen(checkpoint, fake.Now().Add(time.Minute))
		// No polling: this is what Open returned with.
		s := e2.Stats()
		assert.Equal(t, stateCounts{Pending: n + 3 + 1, Dead: n}, counts(s))
		assert.Equal(t, uint64(n), s.Expired)
		for _, id := range append(delayed, retried...) {
			info, err := e2.Get(id)
			require.NoError(t, err)
			assert.Equal(t, ringwal.Pending, info.State, "%d", id)
		}
		for _, id := range expiring {
			info, err := e2.Get(id)
			require.NoError(t, err)
			assert.Equal(t, ringwal.Dead, info.State, "%d", id)
			assert.Equal(t, classify.Expired, info.LastCategory)
		}
		info, err := e2.Get(plain)
		require.NoError(t, err)
		assert.Equal(t, ringwal.Pending, info.State)
		// The oldest is the plain one, ready since its enqueue.
		assert.Equal(t, time.Minute, s.OldestPending)

		// The expiries were logged: the dead letters come back as they are.
		dead := deadEntry(t, e2, expiring[0])
		e3, _ := r.reopen(false, fake2.Now())
		sameDeadLetter(t, dead, deadEntry(t, e3, expiring[0]))
		assert.Equal(t, stateCounts{Pending: n + 3 + 1, Dead: n}, counts(e3.Stats()))
	})
}

// TestRedriveTTLStableAcrossReopen: a redriven message's TTL counts from
// the redrive, exactly, however often the directory is reopened: the TTL
// Get reports and the moment it expires stay where they were.
func TestRedriveTTLStableAcrossReopen(t *testing.T) {
	forLogAndCheckpoint(t, func(t *testing.T, checkpoint bool) {
		t.Run("fake clock", func(t *testing.T) {
			fake := clock.NewFake(time.Time{})
			r := newReopener(t, ringwal.Options{Clock: fake})
			const ttl = time.Minute
			id := enqueue(t, r.e, ringwal.Message{TTL: ttl})
			d := dequeue(t, r.e)
			require.NoError(t, r.e.Nack(d.Lease, permanent("no")))
			fake.Advance(10 * time.Second)
			require.NoError(t, r.e.Redrive(id))
			redrivenAt := fake.Now()
			e := r.e
			for i := 0; i < 3; i++ {
				e, fake = r.reopen(checkpoint, fake.Now().Add(time.Second))
				info, err := e.Get(id)
				require.NoError(t, err)
				assert.Equal(t, ttl, info.Message.TTL, "reopen %d", i)
				assert.True(t, redrivenAt.Equal(info.EnqueuedAt), "reopen %d: EnqueuedAt %v, want %v", i, info.EnqueuedAt, redrivenAt)
			}
			fake.Set(redrivenAt.Add(ttl - time.Millisecond))
			assertNothingReadyState(t, e, id, ringwal.Pending)
			fake.Set(redrivenAt.Add(ttl))
			info := waitState(t, e, id, ringwal.Dead)
			assert.Equal(t, classify.Expired, info.LastCategory)
			assert.True(t, deadEntry(t, e, id).DeadAt.Equal(redrivenAt.Add(ttl)))
		})
		t.Run("real clock", func(t *testing.T) {
			dir := t.TempDir()
			o := ringwal.Options{}
			e := open(t, dir, o)
			id := enqueue(t, e, ringwal.Message{TTL: time.Hour})
			d := dequeue(t, e)
			require.NoError(t, e.Nack(d.Lease, permanent("no")))
			require.NoError(t, e.Redrive(id))
			before, err := e.Get(id)
			require.NoError(t, err)
			for i := 0; i < 3; i++ {
				if checkpoint {
					require.NoError(t, e.Checkpoint())
				}
				require.NoError(t, e.Close())
				e = open(t, dir, o)
				after, err := e.Get(id)
				require.NoError(t, err)
				assert.Equal(t, before.Message.TTL, after.Message.TTL, "reopen %d", i)
				assert.True(t, before.EnqueuedAt.Equal(after.EnqueuedAt), "reopen %d", i)
			}
		})
	})
}

// assertNothingReadyState checks for a short while that id stays in state
// want (a timer must not move it yet).
func assertNothingReadyState(t *testing.T, e *ringwal.Engine, id ringwal.ID, want ringwal.State) {
	t.Helper()
	deadline := time.Now().Add(quiet)
	for time.Now().Before(deadline) {
		info, err := e.Get(id)
		require.NoError(t, err)
		if !assert.Equal(t, want, info.State, "ID %d moved early", id) {
			return
		}
		time.Sleep(tick)
	}
}

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

// TestDeadLetterRaceWithOperatorSurvivesRestart: an operator acting on a
// dead letter the instant it became visible (review, purge, redrive)
// must find that action in place after a restart, even though the
// engine's dead-letter record may reach the log after the operator's.
func TestDeadLetterRaceWithOperatorSurvivesRestart(t *testing.T) {
	for _, op := range []string{"review", "purge", "redrive", "redrive and ack"} {
		t.Run(op, func(t *testing.T) {
			dir := t.TempDir()
			hook := &hookHandler{msg: "ringwal: dead-lettered"}
			fake := clock.NewFake(time.Time{})
			o := ringwal.Options{Clock: fake, Logger: slog.New(hook)}
			e1, err := ringwal.Open(dir, o)
			require.NoError(t, err)
			closed := false
			t.Cleanup(func() {
				if !closed {
					_ = e1.Close()
				}
			})

			id := enqueue(t, e1, ringwal.Message{Payload: []byte("x")})
			d := dequeue(t, e1)
			require.Equal(t, id, d.ID)
			var opErr error
			hook.set(func() {
				switch op {
				case "review":
					opErr = e1.MarkReviewed(id, "seen")
				case "purge":
					_, opErr = e1.PurgeDeadLetters(dlq.Query{})
				case "redrive", "redrive and ack":
					opErr = e1.Redrive(id)
				}
			})
			require.NoError(t, e1.Nack(d.Lease, permanent("rejected")))
			require.NoError(t, opErr)

			if op == "redrive and ack" {
				d := dequeue(t, e1)
				require.Equal(t, id, d.ID)
				require.NoError(t, e1.Ack(d.Lease))
			}
			require.NoError(t, e1.Close())
			closed = true

			o.Logger = nil
			o.Clock = clock.NewFake(fake.Now())
			e2 := open(t, dir, o)
			info, err := e2.Get(id)
			switch op {
			case "review":
				require.NoError(t, err)
				require.Equal(t, ringwal.Dead, info.State)
				dl := deadEntry(t, e2, id)
				assert.True(t, dl.Reviewed, "the review survives the restart")
				assert.Equal(t, "seen", dl.Note)
			case "redrive":
				require.NoError(t, err)
				assert.Equal(t, ringwal.Pending, info.State, "the redriven message stays pending")
				assert.Equal(t, 0, info.Attempts)
			case "purge", "redrive and ack":
				assert.ErrorIs(t, err, ringwal.ErrNotFound, "%s: got %+v", op, info)
			}
			if op != "review" {
				dls, err := e2.DeadLetters(dlq.Query{})
				require.NoError(t, err)
				assert.Empty(t, dls, "%s: no dead letter comes back", op)
			}
		})
	}
}
