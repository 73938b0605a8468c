package ringwal_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
	"github.com/ringwal/ringwal/internal/enginetest"
)

var bulkRejected = classify.Mark(errors.New("rejected"), classify.Permanent)

// deadLetterIn enqueues n messages of key into queue q and dead-letters
// each (a Permanent nack), taking them from q only, so that a concurrent
// caller working another queue never takes one of these.
func deadLetterIn(t testing.TB, e *ringwal.Engine, q, key string, n int) []ringwal.ID {
	t.Helper()
	ctx := context.Background()
	var ids []ringwal.ID
	for range n {
		id, err := e.Queue(q).Enqueue(ctx, ringwal.Message{Key: key, Payload: []byte("x")})
		require.NoError(t, err)
		d, err := e.Queue(q).Dequeue(ctx)
		require.NoError(t, err)
		require.Equal(t, id, d.ID)
		require.NoError(t, e.Nack(d.Lease, bulkRejected))
		ids = append(ids, id)
	}
	return ids
}

func bulkDeadIDs(t testing.TB, e *ringwal.Engine, q dlq.Query) []ringwal.ID {
	t.Helper()
	ds, err := e.DeadLetters(q)
	require.NoError(t, err)
	var ids []ringwal.ID
	for _, d := range ds {
		ids = append(ids, d.ID)
	}
	return ids
}

// An operator counts what a query matches, then redrives with the count's
// mark: exactly the dead letters counted are redriven, in their queue, and
// those dead-lettered after the count (of the same key) stay.
func TestRedriveMatchingRedrivesExactlyTheCounted(t *testing.T) {
	e := enginetest.Open(t, "", ringwal.Options{})
	counted := deadLetterIn(t, e, "old", "a", 10)
	other := deadLetterIn(t, e, "old", "b", 4)
	q := dlq.Query{Key: "a"}
	n, mark, err := e.CountDeadLetters(q)
	require.NoError(t, err)
	require.Equal(t, 10, n)
	later := deadLetterIn(t, e, "old", "a", 3)

	q.Through = mark
	got, err := e.RedriveMatching(q)
	require.NoError(t, err)
	assert.Equal(t, 10, got)
	assert.Equal(t, later, bulkDeadIDs(t, e, dlq.Query{Key: "a"}), "those dead-lettered after the count stay")
	assert.Equal(t, other, bulkDeadIDs(t, e, dlq.Query{Key: "b"}), "another key's are left alone")
	for _, id := range counted {
		info, err := e.Get(id)
		require.NoError(t, err)
		assert.Equal(t, ringwal.Pending, info.State)
		assert.Equal(t, "old", info.Message.Queue, "back in its own queue")
	}
	assert.Equal(t, uint64(10), e.Stats().Redriven)
}

// Dead letters keep arriving, of the same key, while a bulk redrive of
// the counted ones runs: the redrive acts on exactly the counted set,
// never on one that arrived during it.
func TestRedriveMatchingIgnoresArrivalsDuringTheRun(t *testing.T) {
	e := enginetest.Open(t, "", ringwal.Options{})
	counted := deadLetterIn(t, e, "old", "a", 300)
	q := dlq.Query{Key: "a"}
	n, mark, err := e.CountDeadLetters(q)
	require.NoError(t, err)
	require.Equal(t, 300, n)

	var arrived []ringwal.ID
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// From another queue, so that no redriven message is taken here.
		arrived = deadLetterIn(t, e, "new", "a", 200)
	}()
	q.Through = mark
	got, err := e.RedriveMatching(q)
	wg.Wait()
	require.NoError(t, err)
	assert.Equal(t, 300, got)
	assert.Equal(t, arrived, bulkDeadIDs(t, e, dlq.Query{Key: "a"}), "exactly the arrivals are still dead")
	old := e.Queue("old").Stats()
	assert.Equal(t, len(counted), old.Pending, "every counted one redriven into its queue")
}

// Without a Through mark, the set is fixed when the call starts: a
// consumer that fails every redriven message at once puts it back in the
// store, and the redrive does not chase it (it would never end).
func TestRedriveMatchingWithoutMarkDoesNotChaseItsOwnRedrives(t *testing.T) {
	e := enginetest.Open(t, "", ringwal.Options{})
	deadLetterIn(t, e, "old", "a", 300)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			d, err := e.Queue("old").Dequeue(ctx)
			if err != nil {
				return
			}
			_ = e.Nack(d.Lease, bulkRejected)
		}
	}()
	got, err := e.RedriveMatching(dlq.Query{Key: "a"})
	require.NoError(t, err)
	assert.Equal(t, 300, got)
	require.NoError(t, e.WaitIdle(ctx), "the consumer fails every redriven one")
	stop()
	wg.Wait()
	assert.Equal(t, 300, e.Stats().Dead)
}

// A Limit bounds the work; the rest stay, in dead-letter order.
func TestRedriveMatchingStopsAtTheLimit(t *testing.T) {
	e := enginetest.Open(t, "", ringwal.Options{})
	ids := enginetest.DeadLetterN(t, e, "a", 700)
	got, err := e.RedriveMatching(dlq.Query{Limit: 600})
	require.NoError(t, err)
	assert.Equal(t, 600, got)
	assert.Equal(t, ids[600:], bulkDeadIDs(t, e, dlq.Query{}))
}

// A malformed query redrives nothing and is ErrInvalid; an empty store is
// zero, no error.
func TestRedriveMatchingRefusesAMalformedQuery(t *testing.T) {
	e := enginetest.Open(t, "", ringwal.Options{})
	got, err := e.RedriveMatching(dlq.Query{})
	require.NoError(t, err)
	assert.Zero(t, got)
	enginetest.DeadLetterN(t, e, "a", 2)
	got, err = e.RedriveMatching(dlq.Query{Limit: -1})
	assert.ErrorIs(t, err, ringwal.ErrInvalid)
	assert.Zero(t, got)
	got, err = e.ReviewMatching(dlq.Query{Categories: []classify.Category{99}}, "x")
	assert.ErrorIs(t, err, ringwal.ErrInvalid)
	assert.Zero(t, got)
}

// ReviewMatching marks exactly the counted dead letters with the note;
// those added after the count stay unreviewed.
func TestReviewMatchingMarksExactlyTheCounted(t *testing.T) {
	e := enginetest.Open(t, "", ringwal.Options{})
	counted := enginetest.DeadLetterN(t, e, "a", 600)
	q := dlq.Query{Reviewed: dlq.OnlyUnreviewed}
	n, mark, err := e.CountDeadLetters(q)
	require.NoError(t, err)
	require.Equal(t, 600, n)
	later := enginetest.DeadLetterN(t, e, "a", 5)

	q.Through = mark
	got, err := e.ReviewMatching(q, "seen")
	require.NoError(t, err)
	assert.Equal(t, 600, got)
	assert.Equal(t, later, bulkDeadIDs(t, e, dlq.Query{Reviewed: dlq.OnlyUnreviewed}))
	ds, err := e.DeadLetters(dlq.Query{Reviewed: dlq.OnlyReviewed})
	require.NoError(t, err)
	require.Len(t, ds, len(counted))
	for i, d := range ds {
		assert.Equal(t, counted[i], d.ID)
		assert.Equal(t, "seen", d.Note)
	}

	// A Limit bounds it; an already reviewed one gets the new note.
	got, err = e.ReviewMatching(dlq.Query{Key: "a", Limit: 3}, "again")
	require.NoError(t, err)
	assert.Equal(t, 3, got)
	d, err := e.DeadLetter(counted[0])
	require.NoError(t, err)
	assert.Equal(t, "again", d.Note)
}

// CancelMatching with CountMessages' mark cancels the counted messages of
// the filter and none enqueued after the count, nor any other key's.
func TestCancelMatchingCancelsExactlyTheCounted(t *testing.T) {
	e := enginetest.Open(t, "", ringwal.Options{})
	ctx := context.Background()
	enqueue := func(key string, n int) (ids []ringwal.ID) {
		for range n {
			id, err := e.Enqueue(ctx, ringwal.Message{Key: key})
			require.NoError(t, err)
			ids = append(ids, id)
		}
		return ids
	}
	counted := enqueue("a", 20)
	others := enqueue("b", 5)
	f := ringwal.Filter{Key: "a"}
	n, mark, err := e.CountMessages(f)
	require.NoError(t, err)
	require.Equal(t, 20, n)

	var later []ringwal.ID
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // arrivals of the same key during the cancel
		defer wg.Done()
		later = enqueue("a", 50)
	}()
	f.Through = mark
	got, err := e.CancelMatching(f)
	wg.Wait()
	require.NoError(t, err)
	assert.Equal(t, 20, got)
	for _, id := range counted {
		_, err := e.Get(id)
		assert.ErrorIs(t, err, ringwal.ErrNotFound)
	}
	var live []ringwal.ID
	for in := range e.Messages(ringwal.Filter{}) {
		live = append(live, in.ID)
	}
	want := append(slices.Clone(others), later...)
	slices.Sort(want)
	slices.Sort(live)
	assert.Equal(t, want, live)
	assert.Equal(t, uint64(20), e.Stats().Cancelled)
}

// CancelMatching filters by state: a leased message is left alone when
// only pending ones are asked for, and cancelled (its lease ended) when
// leased ones are.
func TestCancelMatchingFiltersByState(t *testing.T) {
	e := enginetest.Open(t, "", ringwal.Options{})
	ctx := context.Background()
	for range 3 {
		_, err := e.Enqueue(ctx, ringwal.Message{Key: "k"})
		require.NoError(t, err)
	}
	d := enginetest.Dequeue(t, e)
	got, err := e.CancelMatching(ringwal.Filter{States: []ringwal.State{ringwal.Pending}})
	require.NoError(t, err)
	assert.Equal(t, 2, got)
	info, err := e.Get(d.ID)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Leased, info.State)
	got, err = e.CancelMatching(ringwal.Filter{States: []ringwal.State{ringwal.Leased}})
	require.NoError(t, err)
	assert.Equal(t, 1, got)
	assert.ErrorIs(t, e.Ack(d.Lease), ringwal.ErrStaleLease)
	got, err = e.CancelMatching(ringwal.Filter{})
	require.NoError(t, err)
	assert.Zero(t, got)
}

// An ordered key's messages are walked in delivery order; cancelling the
// head makes the next one the head, and CancelMatching still cancels all.
func TestCancelMatchingCancelsAnOrderedKeyWhole(t *testing.T) {
	e := enginetest.Open(t, "", ringwal.Options{KeyPolicy: policyFor(ringwal.KeyPolicy{Ordered: true})})
	ctx := context.Background()
	for range 10 {
		_, err := e.Enqueue(ctx, ringwal.Message{Key: "o"})
		require.NoError(t, err)
	}
	got, err := e.CancelMatching(ringwal.Filter{Key: "o"})
	require.NoError(t, err)
	assert.Equal(t, 10, got)
	n, _, err := e.CountMessages(ringwal.Filter{})
	require.NoError(t, err)
	assert.Zero(t, n)
}

// After Close every bulk verb is ErrClosed.
func TestBulkVerbsAfterCloseAreErrClosed(t *testing.T) {
	e := enginetest.Open(t, "", ringwal.Options{})
	require.NoError(t, e.Close())
	_, err := e.RedriveMatching(dlq.Query{})
	assert.ErrorIs(t, err, ringwal.ErrClosed)
	_, err = e.ReviewMatching(dlq.Query{}, "")
	assert.ErrorIs(t, err, ringwal.ErrClosed)
	_, err = e.CancelMatching(ringwal.Filter{})
	assert.ErrorIs(t, err, ringwal.ErrClosed)
	_, _, err = e.CountMessages(ringwal.Filter{})
	assert.ErrorIs(t, err, ringwal.ErrClosed)
	assert.ErrorIs(t, e.WaitIdle(context.Background()), ringwal.ErrClosed)
}
