package ringwal_test

// Facts that must survive a checkpoint and a reopen: every test here runs
// a scenario, closes the engine (after a checkpoint in the "checkpoint"
// subtest), reopens the directory and compares what the public API reads
// before and after.

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/dlq"
)

// reopener opens engines on one directory in turn: each reopen closes the
// previous engine (checkpointing first when asked) and opens the next one
// on a fresh fake clock set to at.
type reopener struct {
	t   *testing.T
	dir string
	o   ringwal.Options
	e   *ringwal.Engine
}

func newReopener(t *testing.T, o ringwal.Options) *reopener {
	t.Helper()
	r := &reopener{t: t, dir: t.TempDir(), o: o}
	r.e = r.open()
	return r
}

func (r *reopener) open() *ringwal.Engine {
	r.t.Helper()
	e, err := ringwal.Open(r.dir, r.o)
	require.NoError(r.t, err, "Open")
	r.t.Cleanup(func() { _ = e.Close() })
	return e
}

// reopen closes the current engine (after a checkpoint if checkpoint) and
// opens the directory again on a fake clock at at.
func (r *reopener) reopen(checkpoint bool, at time.Time) (*ringwal.Engine, *clock.Fake) {
	r.t.Helper()
	if checkpoint {
		require.NoError(r.t, r.e.Checkpoint())
	}
	require.NoError(r.t, r.e.Close())
	fake := clock.NewFake(at)
	r.o.Clock = fake
	r.e = r.open()
	return r.e, fake
}

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

// TestRedriveKeepsDedupWindow: a Redrive leaves the DedupID's window
// where it was, and so does a reopen after it: the window still counts
// from the first enqueue, and a newer message that took the DedupID over
// keeps it.
func TestRedriveKeepsDedupWindow(t *testing.T) {
	const window = time.Minute
	forLogAndCheckpoint(t, func(t *testing.T, checkpoint bool) {
		t.Run("window ended before the redrive", func(t *testing.T) {
			fake := clock.NewFake(time.Time{})
			r := newReopener(t, ringwal.Options{Clock: fake, DedupWindow: window})
			id := enqueue(t, r.e, ringwal.Message{DedupID: "d"})
			d := dequeue(t, r.e)
			require.NoError(t, r.e.Nack(d.Lease, permanent("no")))
			fake.Advance(2 * window)
			require.NoError(t, r.e.Redrive(id))

			e2, _ := r.reopen(checkpoint, fake.Now().Add(time.Second))
			again, err := e2.Enqueue(ctxBG, ringwal.Message{DedupID: "d"})
			assert.NoError(t, err, "the window ended before the redrive; a redrive does not restart it")
			assert.NotEqual(t, id, again)
		})
		t.Run("a newer message holds the DedupID", func(t *testing.T) {
			fake := clock.NewFake(time.Time{})
			r := newReopener(t, ringwal.Options{Clock: fake, DedupWindow: window})
			old := enqueue(t, r.e, ringwal.Message{DedupID: "d"})
			d := dequeue(t, r.e)
			require.NoError(t, r.e.Nack(d.Lease, permanent("no")))
			fake.Advance(2 * window)
			newer := enqueue(t, r.e, ringwal.Message{DedupID: "d"})
			fake.Advance(10 * time.Second)
			require.NoError(t, r.e.Redrive(old))
			first, err := r.e.Enqueue(ctxBG, ringwal.Message{DedupID: "d"})
			require.ErrorIs(t, err, ringwal.ErrDuplicate)
			require.Equal(t, newer, first)

			e2, _ := r.reopen(checkpoint, fake.Now().Add(time.Second))
			first, err = e2.Enqueue(ctxBG, ringwal.Message{DedupID: "d"})
			assert.ErrorIs(t, err, ringwal.ErrDuplicate)
			assert.Equal(t, newer, first, "the newer message keeps the DedupID")
			info, err := e2.Get(old)
			require.NoError(t, err)
			assert.Equal(t, "d", info.Message.DedupID, "the redriven message keeps its DedupID")
		})
	})
}

// sameFailures compares two failure histories entry by entry (times by
// instant).
func sameFailures(t *testing.T, want, got []dlq.Failure) {
	t.Helper()
	if !assert.Len(t, got, len(want), "failures: want %+v, got %+v", want, got) {
		return
	}
	for i := range want {
		assert.True(t, want[i].At.Equal(got[i].At), "failure %d at %v, want %v", i, got[i].At, want[i].At)
		assert.Equal(t, want[i].Category, got[i].Category, "failure %d", i)
		assert.Equal(t, want[i].Error, got[i].Error, "failure %d", i)
	}
}

func sameDeadLetter(t *testing.T, want, got ringwal.DeadLetter) {
	t.Helper()
	sameFailures(t, want.Failures, got.Failures)
	assert.True(t, want.FirstFailedAt.Equal(got.FirstFailedAt), "FirstFailedAt %v, want %v", got.FirstFailedAt, want.FirstFailedAt)
	assert.True(t, want.DeadAt.Equal(got.DeadAt), "DeadAt %v, want %v", got.DeadAt, want.DeadAt)
	assert.Equal(t, want.Category, got.Category)
	assert.Equal(t, want.Attempts, got.Attempts)
}

// TestNackCauseKeptWhenTTLEndsDuringDelivery: a nack whose message's TTL
// ran out during the delivery dead-letters it as Expired; the nack's
// cause stays in its history across a reopen.
func TestNackCauseKeptWhenTTLEndsDuringDelivery(t *testing.T) {
	forLogAndCheckpoint(t, func(t *testing.T, checkpoint bool) {
		fake := clock.NewFake(time.Time{})
		r := newReopener(t, ringwal.Options{Clock: fake, Policies: fastPolicies(5)})
		id := enqueue(t, r.e, ringwal.Message{TTL: 10 * time.Second})
		d := dequeue(t, r.e)
		fake.Advance(11 * time.Second)
		require.NoError(t, r.e.Nack(d.Lease, transient("downstream said no")))
		before := deadEntry(t, r.e, id)
		require.Equal(t, classify.Expired, before.Category)
		require.Len(t, before.Failures, 2, "the nack, then the TTL verdict")
		require.Equal(t, "downstream said no", before.Failures[0].Error)

		e2, _ := r.reopen(checkpoint, fake.Now())
		sameDeadLetter(t, before, deadEntry(t, e2, id))
	})
}

// TestRepeatedFailureTextKeptAfterReopen: "Failures always includes the
// last attempt" holds after a reopen when the last failure's text repeats
// the one before, and a history trimmed to its last entries keeps its
// FirstFailedAt.
func TestRepeatedFailureTextKeptAfterReopen(t *testing.T) {
	for _, attempts := range []int{2, dlq.DefaultMaxFailures + 3} {
		forLogAndCheckpoint(t, func(t *testing.T, checkpoint bool) {
			fake := clock.NewFake(time.Time{})
			r := newReopener(t, ringwal.Options{Clock: fake, Policies: fastPolicies(attempts)})
			id := enqueue(t, r.e, ringwal.Message{})
			for i := 0; i < attempts; i++ {
				d := dequeue(t, r.e)
				require.Equal(t, id, d.ID)
				require.NoError(t, r.e.Nack(d.Lease, transient("same text")))
				fake.Advance(200 * time.Millisecond) // past the backoff
			}
			before := deadEntry(t, r.e, id)
			require.Len(t, before.Failures, min(attempts, dlq.DefaultMaxFailures))

			e2, _ := r.reopen(checkpoint, fake.Now())
			sameDeadLetter(t, before, deadEntry(t, e2, id))
		})
	}
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

// TestOldestPendingSurvivesReopen: Stats.OldestPending counts from when
// the oldest pending message became ready (enqueued, came due, was
// requeued), across a reopen.
func TestOldestPendingSurvivesReopen(t *testing.T) {
	cases := []struct {
		name string
		make func(t *testing.T, e *ringwal.Engine, fake *clock.Fake)
		want time.Duration
	}{
		{"enqueued", func(t *testing.T, e *ringwal.Engine, fake *clock.Fake) {
			enqueue(t, e, ringwal.Message{})
			fake.Advance(30 * time.Second)
		}, 30 * time.Second},
		{"came due", func(t *testing.T, e *ringwal.Engine, fake *clock.Fake) {
			id := enqueue(t, e, ringwal.Message{Delay: 5 * time.Second})
			fake.Advance(30 * time.Second)
			waitState(t, e, id, ringwal.Pending)
		}, 25 * time.Second},
		{"retried", func(t *testing.T, e *ringwal.Engine, fake *clock.Fake) {
			id := enqueue(t, e, ringwal.Message{})
			d := dequeue(t, e)
			require.NoError(t, e.Nack(d.Lease, classify.After(errors.New("later"), 4*time.Second)))
			fake.Advance(30 * time.Second)
			waitState(t, e, id, ringwal.Pending)
		}, 26 * time.Second},
		{"requeued", func(t *testing.T, e *ringwal.Engine, fake *clock.Fake) {
			id := enqueue(t, e, ringwal.Message{Delay: time.Hour})
			fake.Advance(7 * time.Second)
			require.NoError(t, e.Requeue(id))
			fake.Advance(30 * time.Second)
		}, 30 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forLogAndCheckpoint(t, func(t *testing.T, checkpoint bool) {
				fake := clock.NewFake(time.Time{})
				r := newReopener(t, ringwal.Options{Clock: fake})
				c.make(t, r.e, fake)
				require.Equal(t, c.want, r.e.Stats().OldestPending, "before the reopen")
				e2, _ := r.reopen(checkpoint, fake.Now())
				assert.Equal(t, c.want, e2.Stats().OldestPending, "after the reopen")
			})
		})
	}
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
