package ringwal

// The behaviours below each guard a way the concurrent core once lost or
// stalled a message: an EnqueueBatch that waited while it held records, a
// failed batch that kept its DedupID reservations, a duplicate answered
// before its first was durable, Stats starved by overlapping
// dead-letterings, a reader that made a deadline look stale, and a lease
// generation that wrapped to the zero Lease.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/dlq"
)

func openCore(t *testing.T, dir string, o Options) *Engine {
	t.Helper()
	e, err := Open(dir, o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// A batch that must wait for a key's room (MaxQueued) holds no record
// while it waits, so the housekeeper's lease scan (which waits out busy
// records) keeps running, and the retry timer that will make the room
// fires.
func TestEnqueueBatchWaitsHoldingNoRecord(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	e := openCore(t, "", Options{
		Clock:        fake,
		LeaseTimeout: 100 * time.Millisecond,
		KeyPolicy: func(key string) KeyPolicy {
			if key == "k" {
				return KeyPolicy{MaxQueued: 1}
			}
			return KeyPolicy{}
		},
	})
	_, err := e.TryEnqueue(Message{Key: "k", Payload: []byte("first")})
	require.NoError(t, err)
	d, ok := e.TryDequeue()
	require.True(t, ok)
	busy := classify.Mark(errors.New("busy"), classify.Transient)
	require.NoError(t, e.Nack(d.Lease, classify.After(busy, 300*time.Millisecond)))

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// A consumer that acks everything: the retry, once due, frees k's room.
	go func() {
		for ctx.Err() == nil {
			if d, err := e.Dequeue(ctx); err == nil {
				_ = e.Ack(d.Lease)
			}
		}
	}()
	done := make(chan error, 1)
	go func() {
		_, err := e.EnqueueBatch(ctx, []Message{{Payload: []byte("a")}, {Key: "k", Payload: []byte("second")}})
		done <- err
	}()
	for {
		select {
		case err := <-done:
			require.NoError(t, err, "the batch must finish once the retry is acked, not when its ctx ends")
			return
		case <-time.After(time.Millisecond):
			fake.Advance(10 * time.Millisecond)
		}
	}
}

// A batch that fails (here its ctx ends while a key is full) leaves no
// DedupID reserved: the caller's retry of that message is enqueued, not
// answered ErrDuplicate with an ID no message has.
func TestFailedEnqueueBatchLeavesNoDedupReservation(t *testing.T) {
	for _, dir := range []string{"", "log"} {
		t.Run(map[string]string{"": "memory", "log": "log"}[dir], func(t *testing.T) {
			if dir != "" {
				dir = t.TempDir()
			}
			e := openCore(t, dir, Options{
				DedupWindow: time.Hour,
				KeyPolicy: func(key string) KeyPolicy {
					return KeyPolicy{MaxQueued: 1}
				},
			})
			_, err := e.TryEnqueue(Message{Key: "full", Payload: []byte("x")})
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err = e.EnqueueBatch(ctx, []Message{{DedupID: "order-1"}, {Key: "full"}})
			require.ErrorIs(t, err, context.Canceled)

			id, err := e.Enqueue(context.Background(), Message{DedupID: "order-1"})
			require.NoError(t, err, "the failed batch's DedupID must not be left reserved")
			info, err := e.Get(id)
			require.NoError(t, err)
			assert.Equal(t, "order-1", info.Message.DedupID)
		})
	}
}

// A repeat of a DedupID whose first enqueue is still being logged waits
// for it: answered ErrDuplicate only once the first is durable, and
// enqueued itself when the first's write fails.
func TestDuplicateAnswerWaitsForFirstToBeDurable(t *testing.T) {
	e := openCore(t, t.TempDir(), Options{DedupWindow: time.Hour})
	// Play the first enqueue by hand, up to its log write: reserve its
	// DedupID as an enqueue does, and hold the write.
	mine := newDedupLogging()
	m := Message{DedupID: "pay-7", Payload: []byte("first")}
	now, slot, id, err := e.claimWaiting(context.Background(), &m, &e.q0, nil, true)
	require.NoError(t, err)
	_, dup, busy := e.dedup.reserve(m.DedupID, id, now, int64(time.Hour), UniqueWindow, 0, mine)
	require.False(t, dup)
	require.Nil(t, busy)

	type answer struct {
		id  ID
		err error
	}
	repeat := make(chan answer, 1)
	go func() {
		id, err := e.Enqueue(context.Background(), Message{DedupID: "pay-7", Payload: []byte("repeat")})
		repeat <- answer{id, err}
	}()
	var a answer
	select {
	case a = <-repeat:
		t.Errorf("repeat answered (%d, %v) before the first was logged", a.id, a.err)
	case <-time.After(50 * time.Millisecond):
	}
	// The first's write fails: the repeat is the message now.
	e.slab.at(slot).commit(e.counts)
	e.abortClaim(slot, mine)
	if !t.Failed() {
		a = <-repeat
	}
	require.NoError(t, a.err)
	require.NotEqual(t, id, a.id)
	info, err := e.Get(a.id)
	require.NoError(t, err)
	assert.Equal(t, []byte("repeat"), info.Message.Payload)

	// And once a first is durable, a repeat is answered with its ID.
	again, err := e.Enqueue(context.Background(), Message{DedupID: "pay-7"})
	require.ErrorIs(t, err, ErrDuplicate)
	assert.Equal(t, a.id, again)
}

// Stats gets its turn while dead-letterings keep overlapping: at every
// instant some message is between the slab and the dead-letter store
// (each mover begins its next move before the other ends its current
// one), yet Stats returns, and counts each message once.
func TestStatsReturnsWhileDeadLetteringsOverlap(t *testing.T) {
	e := openCore(t, "", Options{MaxMessages: 1 << 13})
	const n = 4000
	leases := make([]Lease, 0, n)
	for i := 0; i < n; i++ {
		_, err := e.TryEnqueue(Message{Payload: []byte("x")})
		require.NoError(t, err)
		d, ok := e.TryDequeue()
		require.True(t, ok)
		leases = append(leases, d.Lease)
	}
	_ = e.Stats() // counting starts

	// Each mover, told to, begins a move (the message enters the
	// dead-letter store's window), says so, and ends it when told.
	var start, finish [2]chan int
	began, ended := make(chan int), make(chan int)
	for m := range start {
		start[m], finish[m] = make(chan int), make(chan int)
		go func() {
			for i := range start[m] {
				rf, _ := e.leaseKey.ref(leases[i])
				r := e.slab.at(rf.slot)
				if !r.own(rf.gen, stLeased) {
					panic("lease not current")
				}
				e.ctr.moves.begin()
				began <- m
				<-finish[m]
				r.hist.Store(r.hist.Load().with(failureAt(e.now())))
				entry := r.hist.Load().deadLetter(r.id.Load(), classify.Permanent, r.message(), 1, e.now())
				if err := e.dead.Add(entry); err != nil {
					panic(err)
				}
				e.release(r)
				e.ctr.moves.end()
				ended <- m
			}
		}()
	}
	defer func() {
		for m := range start {
			close(start[m])
		}
	}()

	statsDone := make(chan Stats, 1)
	cur := 0
	start[cur] <- 0
	<-began
	go func() { statsDone <- e.Stats() }()
	moved := 0
	for i := 1; i < n; i++ {
		other := 1 - cur
		start[other] <- i
		select {
		case <-began: // both in flight: now the older one ends
		case got := <-statsDone:
			t.Fatalf("Stats returned while a move was in flight: %+v", got)
		case <-time.After(50 * time.Millisecond):
			// The other mover waits for Stats (a move cannot begin once
			// Stats asks): the one in flight ends, and Stats must follow.
			finish[cur] <- 1
			<-ended
			got := <-statsDone
			assert.Equal(t, n, got.Leased+got.Dead, "each message counted once: %+v", got)
			<-began
			finish[other] <- 1
			<-ended
			return
		}
		finish[cur] <- 1
		<-ended
		moved++
		cur = other
	}
	finish[cur] <- 1
	<-ended
	select {
	case <-statsDone:
		t.Fatalf("Stats returned only once the moves stopped overlapping (after %d)", moved)
	case <-time.After(10 * time.Second):
		t.Fatalf("Stats never returned")
	}
}

func failureAt(now int64) dlq.Failure {
	return dlq.Failure{At: time.Unix(0, now), Category: classify.Permanent, Error: "x"}
}

// A reader that holds a pending message for a moment (Get here) does not
// make its deadline-heap entry look stale: the urgent message still goes
// out first.
func TestBriefReaderKeepsADeadline(t *testing.T) {
	e := openCore(t, "", Options{})
	for i := 0; i < 5; i++ {
		_, err := e.TryEnqueue(Message{Payload: []byte("plain")})
		require.NoError(t, err)
	}
	urgent, err := e.TryEnqueue(Message{Payload: []byte("urgent"), Deadline: time.Now().Add(-time.Second)})
	require.NoError(t, err)
	slot, prev, found, ok := e.slab.ownID(urgent, liveStates)
	require.True(t, found && ok)
	// While a reader owns it, the scheduler considers the entry.
	assert.True(t, e.validEntry(entryFor(ref{slot: slot, gen: prev.gen()}, urgent, 0)), "a reader's hold must not make the entry stale")
	e.slab.at(slot).putBack(prev)
	d, ok := e.TryDequeue()
	require.True(t, ok)
	assert.Equal(t, urgent, d.ID, "the urgent message goes out first")
}

// A slot's generation wraps past 2^32-1 without ever naming the zero
// Lease: a message leased at the wrap can be acked.
func TestLeaseAtGenerationWrapSettles(t *testing.T) {
	e := openCore(t, "", Options{MaxMessages: 8})
	for slot := 0; slot < e.slab.size(); slot++ {
		r := e.slab.at(uint32(slot))
		r.word.Store(uint64(makeWord(^uint32(0)-1, 0, stFree)))
	}
	_, err := e.TryEnqueue(Message{Payload: []byte("x")}) // published at 2^32-1
	require.NoError(t, err)
	d, ok := e.TryDequeue() // leased at the next generation
	require.True(t, ok)
	rf, ours := e.leaseKey.ref(d.Lease)
	require.True(t, ours)
	require.NotZero(t, rf.gen, "generation 0 is never a live one")
	require.NoError(t, e.Ack(d.Lease))
	assert.Equal(t, 0, e.Stats().Leased)
}

// Inside one EnqueueBatch a message repeating an earlier one's DedupID
// under UniqueQueued or UniqueLive gets the first's ID, is not added, and
// the call's error wraps ErrDuplicate: the batch returns, with or without
// a log.
func TestEnqueueBatchAnswersARepeatedUniqueDedupID(t *testing.T) {
	for _, tc := range []struct {
		name    string
		durable bool
		mode    Unique
		replace bool
	}{
		{"memory/queued", false, UniqueQueued, false},
		{"memory/live", false, UniqueLive, false},
		{"memory/live/replace", false, UniqueLive, true},
		{"durable/queued", true, UniqueQueued, false},
		{"durable/live", true, UniqueLive, false},
		{"durable/queued/replace", true, UniqueQueued, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := ""
			if tc.durable {
				dir = t.TempDir()
			}
			e := openCore(t, dir, Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			ms := []Message{
				{Payload: []byte("a"), DedupID: "d", Unique: tc.mode},
				{Payload: []byte("b")},
				{Payload: []byte("c"), DedupID: "d", Unique: tc.mode, Replace: tc.replace},
			}
			ids, err := e.EnqueueBatch(ctx, ms)
			require.NotErrorIs(t, err, context.DeadlineExceeded, "the batch never returned")
			if tc.replace {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, ErrDuplicate)
			}
			require.Len(t, ids, 3)
			assert.NotZero(t, ids[0])
			assert.Equal(t, ids[0], ids[2])
			assert.Equal(t, 2, e.Stats().Pending)
			m, err := e.Get(ids[0])
			require.NoError(t, err)
			want := "a"
			if tc.replace {
				want = "c"
			}
			assert.Equal(t, want, string(m.Message.Payload))
		})
	}
}
