package ringwal_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
	"github.com/ringwal/ringwal/internal/enginetest"
)

// TestPurgeDeadLetterTakesOneForGood protects the single purge: it deletes
// exactly the dead letter named, leaves its neighbours (same key, same
// category), refuses an ID that is not a dead letter, and the purge is in
// the log, so a reopen does not bring the dead letter back.
func TestPurgeDeadLetterTakesOneForGood(t *testing.T) {
	dir := t.TempDir()
	e := enginetest.Open(t, dir, ringwal.Options{})
	ids := enginetest.DeadLetterN(t, e, "k", 3)

	require.NoError(t, e.PurgeDeadLetter(ids[1]))
	assert.ErrorIs(t, e.PurgeDeadLetter(ids[1]), ringwal.ErrNotFound, "purged already")
	assert.ErrorIs(t, e.PurgeDeadLetter(ids[2]+100), ringwal.ErrNotFound, "never a dead letter")
	_, err := e.Get(ids[1])
	assert.ErrorIs(t, err, ringwal.ErrNotFound)
	left := func(e *ringwal.Engine) []ringwal.ID {
		ds, err := e.DeadLetters(dlq.Query{})
		require.NoError(t, err)
		var out []ringwal.ID
		for _, d := range ds {
			out = append(out, d.ID)
		}
		return out
	}
	assert.Equal(t, []ringwal.ID{ids[0], ids[2]}, left(e))

	require.NoError(t, e.Redrive(ids[0]))
	assert.ErrorIs(t, e.PurgeDeadLetter(ids[0]), ringwal.ErrNotFound, "redriven: live, not a dead letter")

	require.NoError(t, e.Close())
	assert.ErrorIs(t, e.PurgeDeadLetter(ids[2]), ringwal.ErrClosed)
	e = enginetest.Open(t, dir, ringwal.Options{})
	assert.Equal(t, []ringwal.ID{ids[2]}, left(e), "the purge was logged")
}

// TestDeadLetterIDIsTheEngineID protects the one ID type: a listed dead
// letter's ID goes to Redrive, MarkReviewed, Get and the next page's After
// with no conversion, and code written when DeadLetter.ID and Query.After
// were spelled uint64 (and redrove with ringwal.ID(d.ID)) still compiles.
func TestDeadLetterIDIsTheEngineID(t *testing.T) {
	e, err := ringwal.Open("", ringwal.Options{})
	require.NoError(t, err)
	defer e.Close()
	ctx := context.Background()
	var ids []ringwal.ID
	for range 3 {
		id, err := e.Enqueue(ctx, ringwal.Message{Key: "k"})
		require.NoError(t, err)
		ids = append(ids, id)
		d, err := e.Dequeue(ctx)
		require.NoError(t, err)
		require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("bad"), classify.Permanent)))
	}

	first, err := e.DeadLetters(dlq.Query{Limit: 1})
	require.NoError(t, err)
	require.Len(t, first, 1)
	rest, err := e.DeadLetters(dlq.Query{After: first[0].ID}) // the next page, no conversion
	require.NoError(t, err)
	assert.Len(t, rest, 2)

	d := first[0]
	var id ringwal.ID = d.ID // one type
	assert.Equal(t, ids[0], id)
	require.NoError(t, e.MarkReviewed(d.ID, "seen"))
	info, err := e.Get(d.ID)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Dead, info.State)
	require.NoError(t, e.Redrive(d.ID))

	// The spellings of old code still compile and mean the same.
	var legacy uint64 = rest[0].ID
	require.NoError(t, e.Redrive(ringwal.ID(legacy)))
	_ = dlq.Query{After: uint64(0)}
	info, err = e.Get(rest[0].ID)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Pending, info.State)
}

func TestGetStates(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{})
	t0 := fake.Now()

	_, err := e.Get(ringwal.ID(987654321))
	assert.ErrorIs(t, err, ringwal.ErrNotFound, "Get of an unknown ID")

	pending := enqueueP(t, e, ringwal.Normal, "p")
	delayed := enqueue(t, e, ringwal.Message{Payload: []byte("d"), Delay: 10 * time.Second})

	leased := dequeue(t, e)
	require.Equal(t, pending, leased.ID)
	deadID := enqueueP(t, e, ringwal.Normal, "x")
	dd := dequeue(t, e)
	require.Equal(t, deadID, dd.ID)
	require.NoError(t, e.Nack(dd.Lease, classify.Mark(errors.New("bad request body"), classify.Permanent)))

	info, err := e.Get(delayed)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Delayed, info.State)
	assert.True(t, info.NextAt.Equal(t0.Add(10*time.Second)), "NextAt %v, want enqueue+Delay %v", info.NextAt, t0.Add(10*time.Second))
	assert.Equal(t, "d", string(info.Message.Payload))

	info, err = e.Get(pending)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Leased, info.State)

	info = waitState(t, e, deadID, ringwal.Dead)
	assert.Equal(t, classify.Permanent, info.LastCategory)
	assert.Equal(t, "bad request body", info.LastError)
	assert.Equal(t, 1, info.Attempts)
	assert.Equal(t, "x", string(info.Message.Payload))
}

func TestDeadLettersQuery(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	kill := func(key string, cat classify.Category) ringwal.ID {
		id := enqueue(t, e, ringwal.Message{Key: key, Payload: []byte(key + "/" + cat.String())})
		d := dequeue(t, e)
		require.Equal(t, id, d.ID)
		require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("fail "+cat.String()), cat)))
		waitState(t, e, id, ringwal.Dead)
		return id
	}
	a1 := kill("a", classify.Permanent)
	b1 := kill("b", classify.Permanent)
	a2 := kill("a", classify.Poison)

	entryIDs := func(q dlq.Query) []ringwal.ID {
		t.Helper()
		es, err := e.DeadLetters(q)
		require.NoError(t, err)
		var out []ringwal.ID
		for _, x := range es {
			out = append(out, x.ID)
		}
		sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
		return out
	}
	sorted := func(xs ...ringwal.ID) []ringwal.ID {
		sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
		return xs
	}
	assert.Equal(t, sorted(a1, b1, a2), entryIDs(dlq.Query{}), "all")
	assert.Equal(t, sorted(a1, a2), entryIDs(dlq.Query{Key: "a"}), "by key")
	assert.Equal(t, sorted(a1, b1), entryIDs(dlq.Query{Categories: []classify.Category{classify.Permanent}}), "by category")
	assert.Equal(t, []ringwal.ID{a2}, entryIDs(dlq.Query{Categories: []classify.Category{classify.Poison}, Key: "a"}))
	assert.Len(t, entryIDs(dlq.Query{Limit: 2}), 2, "Limit")

	es, err := e.DeadLetters(dlq.Query{Key: "b"})
	require.NoError(t, err)
	require.Len(t, es, 1)
	x := es[0]
	assert.Equal(t, "b", x.Key)
	assert.Equal(t, classify.Permanent, x.Category)
	assert.Equal(t, "b/permanent", string(x.Message.Payload))
	assert.Equal(t, 1, x.Attempts)
	require.NotEmpty(t, x.Failures)
	assert.Equal(t, "fail permanent", x.Failures[len(x.Failures)-1].Error)
	assert.False(t, x.DeadAt.IsZero())
	assert.False(t, x.Reviewed)
	assert.True(t, strings.HasPrefix(x.Failures[0].Error, "fail"))
}

func TestRedrive(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{Policies: fastPolicies(2)})
	id := enqueue(t, e, ringwal.Message{Key: "k", Payload: []byte("again")})
	exhaust := func() {
		t.Helper()
		for attempt := 1; attempt <= 2; attempt++ {
			d := dequeue(t, e)
			require.Equal(t, id, d.ID)
			require.Equal(t, attempt, d.Attempt, "attempts reset by Redrive")
			require.NoError(t, e.Nack(d.Lease, transient("down")))
			if attempt == 1 {
				waitState(t, e, id, ringwal.Delayed)
				fake.Advance(15 * time.Millisecond)
			}
		}
		waitState(t, e, id, ringwal.Dead)
	}
	exhaust()

	require.NoError(t, e.Redrive(id))
	info, err := e.Get(id)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Pending, info.State)
	assert.Equal(t, 0, info.Attempts, "Redrive resets attempts")
	assert.Equal(t, "again", string(info.Message.Payload))
	es, err := e.DeadLetters(dlq.Query{})
	require.NoError(t, err)
	assert.Empty(t, es, "a redriven message leaves the dead-letter queue")
	assert.Equal(t, 0, e.Stats().Dead)

	exhaust() // two fresh attempts, then dead again
	require.NoError(t, e.Redrive(id))
	d := dequeue(t, e)
	assert.Equal(t, 1, d.Attempt)
	require.NoError(t, e.Ack(d.Lease))

	assert.ErrorIs(t, e.Redrive(id), ringwal.ErrNotFound, "Redrive of an acked ID")
	assert.ErrorIs(t, e.Redrive(ringwal.ID(1<<40)), ringwal.ErrNotFound, "Redrive of an unknown ID")
}

func TestMarkReviewed(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	var dead []ringwal.ID
	for i := 0; i < 2; i++ {
		id := enqueueP(t, e, ringwal.Normal, fmt.Sprint(i))
		d := dequeue(t, e)
		require.NoError(t, e.Nack(d.Lease, permanent("rejected")))
		waitState(t, e, id, ringwal.Dead)
		dead = append(dead, id)
	}
	require.NoError(t, e.MarkReviewed(dead[0], "looked: upstream bug #12"))

	rev, err := e.DeadLetters(dlq.Query{Reviewed: dlq.OnlyReviewed})
	require.NoError(t, err)
	require.Len(t, rev, 1)
	assert.Equal(t, dead[0], rev[0].ID)
	assert.True(t, rev[0].Reviewed)
	assert.Equal(t, "looked: upstream bug #12", rev[0].Note)

	unrev, err := e.DeadLetters(dlq.Query{Reviewed: dlq.OnlyUnreviewed})
	require.NoError(t, err)
	require.Len(t, unrev, 1)
	assert.Equal(t, dead[1], unrev[0].ID)
	assert.False(t, unrev[0].Reviewed)

	info, err := e.Get(dead[0])
	require.NoError(t, err)
	assert.Equal(t, ringwal.Dead, info.State, "reviewing does not move the message")

	assert.ErrorIs(t, e.MarkReviewed(ringwal.ID(1<<40), "x"), ringwal.ErrNotFound, "unknown ID")
	acked := enqueueP(t, e, ringwal.Normal, "acked")
	d := dequeue(t, e)
	require.NoError(t, e.Ack(d.Lease))
	assert.ErrorIs(t, e.MarkReviewed(acked, "x"), ringwal.ErrNotFound, "acked ID")
}

func TestPurgeDeadLetters(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	kill := func(cause error) ringwal.ID {
		id := enqueueP(t, e, ringwal.Normal, cause.Error())
		d := dequeue(t, e)
		require.Equal(t, id, d.ID)
		require.NoError(t, e.Nack(d.Lease, cause))
		waitState(t, e, id, ringwal.Dead)
		return id
	}
	p1 := kill(permanent("p1"))
	p2 := kill(permanent("p2"))
	p3 := kill(permanent("p3"))
	poison := kill(classify.Mark(errors.New("crash"), classify.Poison))
	require.NoError(t, e.MarkReviewed(p1, "ok to drop"))

	n, err := e.PurgeDeadLetters(dlq.Query{Categories: []classify.Category{classify.Permanent}, Reviewed: dlq.OnlyReviewed})
	require.NoError(t, err)
	assert.Equal(t, 1, n, "reviewed Permanent")
	_, err = e.Get(p1)
	assert.ErrorIs(t, err, ringwal.ErrNotFound, "Get of a purged ID")

	n, err = e.PurgeDeadLetters(dlq.Query{Categories: []classify.Category{classify.Permanent}})
	require.NoError(t, err)
	assert.Equal(t, 2, n, "remaining Permanent")
	for _, id := range []ringwal.ID{p1, p2, p3} {
		_, err := e.Get(id)
		assert.ErrorIs(t, err, ringwal.ErrNotFound, "Get of purged %d", id)
		assert.ErrorIs(t, e.Redrive(id), ringwal.ErrNotFound, "Redrive of purged %d", id)
		assert.ErrorIs(t, e.MarkReviewed(id, "x"), ringwal.ErrNotFound, "MarkReviewed of purged %d", id)
		assert.ErrorIs(t, e.Requeue(id), ringwal.ErrNotFound, "Requeue of purged %d", id)
	}
	es, err := e.DeadLetters(dlq.Query{})
	require.NoError(t, err)
	require.Len(t, es, 1)
	assert.Equal(t, poison, es[0].ID)
	assert.Equal(t, 1, e.Stats().Dead)

	n, err = e.PurgeDeadLetters(dlq.Query{})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	n, err = e.PurgeDeadLetters(dlq.Query{})
	require.NoError(t, err)
	assert.Equal(t, 0, n, "nothing left")
	assert.Equal(t, 0, e.Stats().Dead)
}

func TestRequeue(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{Policies: fastPolicies(5)})
	t.Run("leased", func(t *testing.T) {
		id := enqueueP(t, e, ringwal.Normal, "l")
		d := dequeue(t, e)
		require.NoError(t, e.Requeue(id))
		info, err := e.Get(id)
		require.NoError(t, err)
		assert.Equal(t, ringwal.Pending, info.State)
		assert.ErrorIs(t, e.Ack(d.Lease), ringwal.ErrStaleLease, "the requeued lease is stale")
		d2 := dequeue(t, e)
		assert.Equal(t, id, d2.ID)
		assert.Equal(t, 2, d2.Attempt, "second delivery")
		require.NoError(t, e.Ack(d2.Lease))
	})
	t.Run("delayed", func(t *testing.T) {
		id := enqueue(t, e, ringwal.Message{Payload: []byte("d"), Delay: time.Hour})
		require.NoError(t, e.Requeue(id))
		d := dequeue(t, e) // no clock advance
		assert.Equal(t, id, d.ID)
		assert.Equal(t, 1, d.Attempt)
		require.NoError(t, e.Ack(d.Lease))
	})
	t.Run("retry backoff", func(t *testing.T) {
		id := enqueueP(t, e, ringwal.Normal, "r")
		d := dequeue(t, e)
		require.NoError(t, e.Nack(d.Lease, transient("x")))
		waitState(t, e, id, ringwal.Delayed)
		require.NoError(t, e.Requeue(id))
		d = dequeue(t, e)
		assert.Equal(t, id, d.ID)
		assert.Equal(t, 2, d.Attempt)
		require.NoError(t, e.Ack(d.Lease))
		assertNothingReady(t, e, "the cancelled retry must not fire later")
	})
	t.Run("unknown and acked", func(t *testing.T) {
		assert.ErrorIs(t, e.Requeue(ringwal.ID(1<<40)), ringwal.ErrNotFound)
		id := enqueueP(t, e, ringwal.Normal, "a")
		d := dequeue(t, e)
		require.NoError(t, e.Ack(d.Lease))
		assert.ErrorIs(t, e.Requeue(id), ringwal.ErrNotFound)
	})
}

// Get of a message being redriven finds it, dead or pending: it used to
// answer ErrNotFound in the moment between its leaving the dead-letter
// store and its landing in the slab.
func TestGetDuringRedriveFindsTheMessage(t *testing.T) {
	for _, dir := range []string{"", t.TempDir()} {
		e := open(t, dir, ringwal.Options{})
		id := enqueue(t, e, ringwal.Message{})
		var gets, notFound atomic.Int64
		deadline := time.Now().Add(300 * time.Millisecond)
		for round := 0; time.Now().Before(deadline) && round < 2000; round++ {
			d := dequeue(t, e)
			require.NoError(t, e.Nack(d.Lease, permanent("x")))
			waitState(t, e, id, ringwal.Dead)
			stop := make(chan struct{})
			done := make(chan struct{})
			var n atomic.Int64
			go func() {
				defer close(done)
				for {
					select {
					case <-stop:
						return
					default:
					}
					_, err := e.Get(id)
					n.Add(1)
					if errors.Is(err, ringwal.ErrNotFound) {
						notFound.Add(1)
					}
				}
			}()
			for n.Load() < 20 {
				runtime.Gosched()
			}
			require.NoError(t, e.Redrive(id))
			close(stop)
			<-done
			gets.Add(n.Load())
		}
		assert.Zero(t, notFound.Load(), "dir %q: Get said ErrNotFound %d times in %d during Redrive", dir, notFound.Load(), gets.Load())
		require.NoError(t, e.Close())
	}
}

// Peek's n is a bound, not a size: a huge n allocates nothing extra.
func TestPeekHugeN(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	enqueue(t, e, ringwal.Message{Payload: []byte("a")})
	got := e.Peek(math.MaxInt)
	require.Len(t, got, 1)
	assert.Equal(t, "a", string(got[0].Message.Payload))
}

// The reads an operator's console makes cost what they return, not the
// size of the store: with 100k dead letters (a scan would allocate per entry), finding one by ID, counting
// a key's and counting what a purge would take allocate a constant.
func TestDeadLetterReadsDoNotGrowWithTheStore(t *testing.T) {
	if testing.Short() {
		t.Skip("fills 100k dead letters")
	}
	const dead = 100_000
	e, _ := memEngine(t, ringwal.Options{MaxMessages: 1 << 12})
	ids := enginetest.DeadLetterN(t, e, "k", dead)
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := e.DeadLetter(ids[dead/2]); err != nil {
			t.Fatal(err)
		}
	})
	assert.LessOrEqual(t, allocs, 4.0, "DeadLetter by ID")
	bytes := enginetest.BytesPerRun(20, func() { _, _ = e.DeadLetter(ids[dead/2]) })
	assert.Less(t, bytes, uint64(4<<10), "DeadLetter by ID: bytes allocated")
	allocs = testing.AllocsPerRun(20, func() {
		if n, _, err := e.CountDeadLetters(dlq.Query{Key: "k"}); err != nil || n != dead {
			t.Fatal(n, err)
		}
		if m, err := e.DeadLetterKeys(); err != nil || m["k"] != dead {
			t.Fatal(m, err)
		}
	})
	assert.LessOrEqual(t, allocs, 4.0, "counts")
}

// Peek(n) reads the queues' fronts: with 200k pending, Peek(1) allocates
// a constant, and what it shows is what Dequeue hands out.
func TestPeekCostsWhatItReturns(t *testing.T) {
	if testing.Short() {
		t.Skip("fills 200k pending")
	}
	const n = 200_000
	e, _ := memEngine(t, ringwal.Options{MaxMessages: 1 << 18, TierCapacity: 1 << 16})
	batch := make([]ringwal.Message, 1000)
	for i := range batch {
		batch[i] = ringwal.Message{Payload: []byte("p")}
	}
	for range n / len(batch) {
		_, err := e.EnqueueBatch(ctxBG, batch)
		require.NoError(t, err)
	}
	allocs := testing.AllocsPerRun(10, func() {
		if got := e.Peek(1); len(got) != 1 {
			t.Fatal(len(got))
		}
	})
	assert.LessOrEqual(t, allocs, 10.0, "Peek(1) with %d pending", n)
	bytes := enginetest.BytesPerRun(10, func() { e.Peek(1) })
	assert.Less(t, bytes, uint64(64<<10), "Peek(1) with %d pending: bytes allocated", n)

	peeked := e.Peek(3)
	require.Len(t, peeked, 3)
	for _, p := range peeked {
		assert.Equal(t, p.ID, dequeue(t, e).ID)
	}
}

func TestPeekOrder(t *testing.T) {
	t.Run("strict", func(t *testing.T) {
		e, _ := memEngine(t, ringwal.Options{Strict: true, AgingAfter: noAging})
		a := enqueueP(t, e, ringwal.Low, "a")
		b := enqueueP(t, e, ringwal.Normal, "b")
		c := enqueueP(t, e, ringwal.Critical, "c")
		d := enqueueP(t, e, ringwal.High, "d")
		x := enqueueP(t, e, ringwal.Normal, "x")
		f := enqueueP(t, e, ringwal.Background, "f")
		enqueue(t, e, ringwal.Message{Priority: ringwal.Critical, Delay: time.Hour})
		want := []ringwal.ID{c, d, b, x, a, f}

		infoIDs := func(is []ringwal.Info) []ringwal.ID {
			var out []ringwal.ID
			for _, i := range is {
				out = append(out, i.ID)
			}
			return out
		}
		assert.Equal(t, want[:3], infoIDs(e.Peek(3)))
		all := e.Peek(100)
		require.GreaterOrEqual(t, len(all), len(want))
		assert.Equal(t, want, infoIDs(all[:len(want)]))
		assert.Empty(t, e.Peek(0))
		for _, i := range all[:len(want)] {
			assert.Equal(t, ringwal.Pending, i.State, "Peek leases nothing")
		}
		s := e.Stats()
		assert.Equal(t, 0, s.Leased, "Peek leases nothing")
		assert.Equal(t, 6, s.Pending)

		var got []ringwal.ID
		for range want {
			got = append(got, dequeue(t, e).ID)
		}
		assert.Equal(t, want, got, "dequeue order matches Peek")
	})

	t.Run("weighted", func(t *testing.T) {
		e, fake := memEngine(t, ringwal.Options{AgingAfter: noAging})
		for i := 0; i < 10; i++ {
			for _, p := range allPriorities {
				enqueueP(t, e, p, fmt.Sprintf("%v-%d", p, i))
			}
		}
		urgent := enqueue(t, e, ringwal.Message{Priority: ringwal.Low, Deadline: fake.Now().Add(time.Millisecond)})
		peek := e.Peek(40)
		require.Len(t, peek, 40)
		assert.Equal(t, urgent, peek[0].ID, "the message within its deadline slack is next")
		again := e.Peek(40)
		for i := range peek {
			assert.Equal(t, peek[i].ID, again[i].ID, "Peek twice: position %d", i)
		}
		for i := range peek {
			d := dequeue(t, e)
			if !assert.Equal(t, peek[i].ID, d.ID, "position %d: Peek said %v, dequeue gave %v", i,
				peek[i].Message.Priority, d.Message.Priority) {
				return // the rest would only repeat the divergence
			}
		}
		assert.Equal(t, 51-40, e.Stats().Pending, "Pending after 40 dequeues")
	})
}
