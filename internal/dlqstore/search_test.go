package dlqstore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/classify"
)

// A text search of a large store lets dead-lettering in while it runs:
// between two chunks of its walk the read lock is free, so an Add (and a
// Remove) from another goroutine completes before the search returns. The
// hook runs between chunks; were the lock held for the whole walk, the
// hook would never run (and an Add from inside it would wait for ever).
func TestTextSearchLetsAddsInWhileItRuns(t *testing.T) {
	for _, bc := range []struct {
		name  string
		count bool
		q     Query
	}{
		{"query", false, Query{Text: "boom"}},
		{"query of a key", false, Query{Text: "boom", Key: "k"}},
		{"count", true, Query{Text: "boom"}},
	} {
		t.Run(bc.name, func(t *testing.T) {
			s := New[string](Options{})
			s.searchChunk = 8
			const n = 50
			for id := uint64(1); id <= n; id++ {
				require.NoError(t, s.Add(entry(id, classify.Categories()[id%4], "k", int(id))))
			}
			pauses, added := 0, false
			s.betweenChunks = func() {
				pauses++
				if pauses != 1 {
					return
				}
				done := make(chan error)
				go func() {
					// A dead-lettering (after every entry) and a redrive
					// of one the search has not reached yet.
					err := s.Add(entry(n+1, classify.Transient, "k", n+1))
					if _, ok := s.Remove(n - 1); !ok && err == nil {
						err = fmt.Errorf("remove %d: not there", n-1)
					}
					done <- err
				}()
				require.NoError(t, <-done)
				added = true
			}
			var got []uint64
			if bc.count {
				c, mark, err := s.CountQuery(bc.q)
				require.NoError(t, err)
				assert.Equal(t, uint64(n), mark, "the mark is the store's when the count started")
				assert.Equal(t, n-1, c, "what was there when the count started, less the one removed")
			} else {
				es, err := s.Query(bc.q)
				require.NoError(t, err)
				got = ids(es)
			}
			assert.True(t, added, "no Add ran while the search was in progress: it held the lock throughout")
			assert.Greater(t, pauses, 1, "a 50-entry walk in chunks of 8 pauses more than once")
			if !bc.count {
				want := make([]uint64, 0, n)
				for id := uint64(1); id <= n; id++ {
					if id != n-1 {
						want = append(want, id)
					}
				}
				assert.Equal(t, want, got, "every entry there throughout, once, in order; none removed before it was reached, none added since")
			}
		})
	}
}

// A text search walked in chunks reports what a walk under the lock would
// have of the entries there when it started and still there when it
// ended: each once, in (DeadAt, ID) order, whatever was added, removed,
// reviewed or added again under the same ID between its chunks; never an
// entry added since it started. Checked against a model over random
// stores, queries and changes, the key and queue indexes (dropped and
// made again meanwhile) included.
func TestTextSearchInChunksReportsEachEntryThereThroughoutOnce(t *testing.T) {
	keys := []string{"", "a", "b"}
	queues := []string{"", "q", "r"}
	texts := []string{"boom", "BOOM now", "quiet"}
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 38))
		s := New[string](Options{})
		s.searchChunk = 1 + r.IntN(5)
		next := uint64(1)
		mk := func() Entry[string] {
			e := entry(next, classify.Categories()[r.IntN(4)], keys[r.IntN(len(keys))], r.IntN(40))
			e.Queue = queues[r.IntN(len(queues))]
			e.Failures[0].Error = texts[r.IntN(len(texts))]
			next++
			return e
		}
		for range 30 + r.IntN(40) {
			require.NoError(t, s.Add(mk()))
		}
		q := Query{Text: "boom", Key: keys[r.IntN(len(keys))], Queue: queues[r.IntN(len(queues))]}
		if r.IntN(3) == 0 {
			q.Categories = []classify.Category{classify.Categories()[r.IntN(4)], classify.Categories()[r.IntN(4)]}
		}
		if r.IntN(3) == 0 {
			q.Limit = 1 + r.IntN(20)
		}
		if r.IntN(4) == 0 {
			q.Since = at(r.IntN(20))
		}
		start, err := s.Query(Query{}) // unchunked: no Text
		require.NoError(t, err)
		removed := map[uint64]bool{}
		s.betweenChunks = func() {
			for range r.IntN(4) {
				switch r.IntN(4) {
				case 0:
					require.NoError(t, s.Add(mk()))
				case 1, 2:
					id := start[r.IntN(len(start))].ID
					if e, ok := s.Remove(id); ok {
						removed[id] = true
						if r.IntN(2) == 0 { // dead-lettered again, at a new place
							e.DeadAt = at(r.IntN(40))
							require.NoError(t, s.Add(e))
						}
					}
				default:
					_ = s.MarkReviewed(start[r.IntN(len(start))].ID, "seen", at(50))
				}
			}
		}
		es, err := s.Query(q)
		require.NoError(t, err)
		s.betweenChunks = nil

		var want []uint64 // the model: the start's entries q matches
		for _, e := range start {
			if matchesModel(q, e) {
				want = append(want, e.ID)
			}
		}
		got := ids(es)
		seen := map[uint64]bool{}
		for i, e := range es {
			require.False(t, seen[e.ID], "seed %d: %d reported twice: %v", seed, e.ID, got)
			seen[e.ID] = true
			require.True(t, slices.Contains(want, e.ID), "seed %d: %d was not there at the start or does not match", seed, e.ID)
			if i > 0 {
				prev := pos{at: es[i-1].DeadAt, id: es[i-1].ID}
				require.Negative(t, prev.cmp(pos{at: e.DeadAt, id: e.ID}), "seed %d: out of order: %v", seed, got)
			}
		}
		full := q.Limit > 0 && len(es) == q.Limit
		for _, e := range start {
			if !slices.Contains(want, e.ID) || removed[e.ID] || seen[e.ID] {
				continue
			}
			if full && (pos{at: e.DeadAt, id: e.ID}).cmp(pos{at: es[len(es)-1].DeadAt, id: es[len(es)-1].ID}) > 0 {
				continue // past the page
			}
			t.Fatalf("seed %d: %d was there throughout and matches, but not reported: got %v, want %v", seed, e.ID, got, want)
		}
	}
}

// matchesModel is q's filter, for the model, on one entry (no cursor, no
// review filter: the test sets neither).
func matchesModel(q Query, e Entry[string]) bool {
	return (q.Key == "" || e.Key == q.Key) && (q.Queue == "" || e.Queue == q.Queue) &&
		(len(q.Categories) == 0 || slices.Contains(q.Categories, e.Category)) &&
		(q.Since.IsZero() || !e.DeadAt.Before(q.Since)) &&
		(e.Failures[0].Error != "quiet" || e.Key == "boom" || e.Queue == "boom")
}

// QueryAfter resumes at a place in the order, whatever is there now: after
// a page's last entry was removed and added again later under its ID (a
// redriven dead letter that failed again), it goes on with the entries
// after that place, where Query.After, which follows the ID, would jump to
// the ID's new place and skip them. Reads counts what the walks read.
func TestQueryAfterResumesAtAPlaceWhateverIsThereNow(t *testing.T) {
	s := New[string](Options{})
	for id := uint64(1); id <= 6; id++ {
		require.NoError(t, s.Add(entry(id, classify.Transient, "", int(id*10))))
	}
	e, ok := s.Remove(3)
	require.True(t, ok)
	e.DeadAt = at(100)
	require.NoError(t, s.Add(e))

	es, err := s.QueryAfter(Query{}, at(30), 3)
	require.NoError(t, err)
	assert.Equal(t, []uint64{4, 5, 6, 3}, ids(es))
	es, err = s.Query(Query{After: 3})
	require.NoError(t, err)
	assert.Empty(t, ids(es), "the ID's cursor is its new place, past the rest")

	es, err = s.QueryAfter(Query{Since: at(55), Limit: 1}, at(30), 3)
	require.NoError(t, err)
	assert.Equal(t, []uint64{6}, ids(es), "Since further on wins")
	_, err = s.QueryAfter(Query{Limit: -1}, at(30), 3)
	require.ErrorIs(t, err, ErrInvalid)

	before := s.Reads()
	es, err = s.QueryAfter(Query{Text: "nowhere"}, at(30), 3)
	require.NoError(t, err)
	assert.Empty(t, es)
	assert.Equal(t, uint64(4), s.Reads()-before, "the 4 entries after the place, each read once")
}

// A walk keeps a cursor only for the categories that hold a live entry,
// so that empty ones (most of them, most of the time) cost a walk nothing.
// That is safe for a text search that pauses: an entry added meanwhile to
// a category empty when it started is one the walk must not visit anyway,
// and the next walk, starting afresh, finds it.
func TestAWalkReadsOnlyTheCategoriesHoldingEntries(t *testing.T) {
	s := New[string](Options{})
	s.searchChunk = 1
	require.NoError(t, s.Add(entry(1, classify.Transient, "", 10)))
	require.NoError(t, s.Add(entry(2, classify.Transient, "", 20)))
	require.NoError(t, s.Add(entry(3, classify.Permanent, "", 30)))
	_, ok := s.Remove(3) // Permanent is empty again
	require.True(t, ok)

	var src sources[string]
	s.find(Query{}, 1<<len(s.byCat)-1, &src, true)
	require.Len(t, src.curs, 1, "one cursor: Transient's, the only category holding an entry")
	assert.Same(t, &s.byCat[classify.Transient], src.curs[0].x)

	added := false
	s.betweenChunks = func() {
		if !added {
			added = true
			require.NoError(t, s.Add(entry(4, classify.Permanent, "", 15)))
		}
	}
	es, err := s.Query(Query{Text: "boom"})
	require.NoError(t, err)
	require.True(t, added, "the search paused")
	assert.Equal(t, []uint64{1, 2}, ids(es), "none added since the search started")

	s.betweenChunks = nil
	es, err = s.Query(Query{Text: "boom"})
	require.NoError(t, err)
	assert.Equal(t, []uint64{1, 4, 2}, ids(es), "a later walk reads the category filled meanwhile")
}
