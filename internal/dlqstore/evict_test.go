package dlqstore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/classify"
)

func TestEvictRemovesOldestReviewedFirstThenOldestUnreviewed(t *testing.T) {
	s := New[string](Options{})
	cats := []classify.Category{classify.Transient, classify.Poison, classify.Timeout}
	for i := 1; i <= 9; i++ {
		require.NoError(t, s.Add(entry(uint64(i), cats[i%3], "k", i)))
	}
	// Reviewed out of dead-letter order: eviction still takes them oldest
	// first.
	for _, id := range []uint64{8, 3, 6} {
		require.NoError(t, s.MarkReviewed(id, "", at(100)))
	}

	assert.Equal(t, []uint64{3, 6}, ids(s.Evict(7)))
	assert.Equal(t, []uint64{8, 1, 2}, ids(s.Evict(4)), "the last reviewed, then the oldest unreviewed across categories")
	assert.Empty(t, s.Evict(4), "at the bound: nothing")
	assert.Equal(t, 4, s.Len())
	assert.Equal(t, 4, countKey(s, "k"))
	_, ok := s.Get(1)
	assert.False(t, ok)

	got, err := s.Query(Query{})
	require.NoError(t, err)
	assert.Equal(t, []uint64{4, 5, 7, 9}, ids(got))
	assert.Equal(t, []uint64{4, 5, 7, 9}, ids(s.Evict(-1)), "a negative bound empties the store")
	assert.Zero(t, s.Len())
}

func TestEvictSkipsEntriesRemovedMeanwhile(t *testing.T) {
	s := New[string](Options{})
	for i := 1; i <= 6; i++ {
		require.NoError(t, s.Add(entry(uint64(i), classify.Transient, "", i)))
		require.NoError(t, s.MarkReviewed(uint64(i), "", at(100)))
	}
	_, ok := s.Remove(1)
	require.True(t, ok)
	_, err := s.Purge(Query{Until: at(4)}) // 2 and 3
	require.NoError(t, err)
	assert.Equal(t, []uint64{4}, ids(s.Evict(2)))
	assert.Equal(t, 2, s.Len())
}

func TestEvictKeepsAStoreAtItsBoundInDeadLetterOrder(t *testing.T) {
	// The pattern of an engine at MaxDeadLetters: every Add followed by
	// an Evict of one. The front compaction keeps this O(1) amortised.
	s := New[string](Options{})
	const bound = 100
	var evicted []uint64
	for i := 1; i <= 1000; i++ {
		require.NoError(t, s.Add(entry(uint64(i), classify.Category(i%7+1), "", i)))
		evicted = append(evicted, ids(s.Evict(bound))...)
	}
	require.Len(t, evicted, 900)
	for i, id := range evicted {
		require.Equal(t, uint64(i+1), id)
	}
	assert.Equal(t, bound, s.Len())
}

func TestCountKeyIsKeptAsEntriesComeAndGo(t *testing.T) {
	s := New[string](Options{})
	require.NoError(t, s.Add(entry(1, classify.Transient, "a", 1)))
	require.NoError(t, s.Add(entry(2, classify.Poison, "a", 2)))
	require.NoError(t, s.Add(entry(3, classify.Poison, "b", 3)))
	require.NoError(t, s.Add(entry(4, classify.Poison, "", 4)))
	assert.Equal(t, map[string]int{"a": 2, "b": 1}, s.KeyCounts())
	s.Remove(1)
	s.Remove(3)
	assert.Equal(t, 1, countKey(s, "a"))
	assert.Zero(t, countKey(s, "b"))
	assert.Equal(t, map[string]int{"a": 1}, s.KeyCounts())
}

func TestCountQueryCountsWhatQueryReturns(t *testing.T) {
	s := New[string](Options{})
	for i := 1; i <= 20; i++ {
		require.NoError(t, s.Add(entry(uint64(i), classify.Category(i%3+1), []string{"", "a", "b"}[i%3], i)))
	}
	require.NoError(t, s.MarkReviewed(5, "", at(100)))
	for _, q := range []Query{
		{},
		{Key: "a"},
		{Categories: []classify.Category{classify.Category(1), classify.Category(2)}},
		{Key: "b", Categories: []classify.Category{classify.Category(3)}},
		{Since: at(4), Until: at(12)},
		{Reviewed: OnlyUnreviewed},
		{After: 7, Limit: 5},
		{Limit: 3},
	} {
		want, err := s.Query(q)
		require.NoError(t, err)
		n, mark, err := s.CountQuery(q)
		require.NoError(t, err)
		assert.Equal(t, len(want), n, "%+v", q)
		assert.Equal(t, uint64(20), mark)
	}
	_, _, err := s.CountQuery(Query{Limit: -1})
	assert.ErrorIs(t, err, ErrInvalid)
}

func TestPurgeThroughAMarkSparesEntriesAddedAfterIt(t *testing.T) {
	s := New[string](Options{})
	for i := 1; i <= 3; i++ {
		require.NoError(t, s.Add(entry(uint64(i), classify.Transient, "k", i)))
	}
	n, mark, err := s.CountQuery(Query{Key: "k"})
	require.NoError(t, err)
	require.Equal(t, 3, n)
	// Added between the count and the purge, even with an older DeadAt.
	require.NoError(t, s.Add(entry(9, classify.Transient, "k", 0)))

	gone, err := s.Purge(Query{Key: "k", Through: mark})
	require.NoError(t, err)
	assert.Equal(t, []uint64{1, 2, 3}, ids(gone))
	_, ok := s.Get(9)
	assert.True(t, ok, "the entry added after the count survives")
}

func TestReadsByIDAndKeyDoNotGrowWithTheStore(t *testing.T) {
	s := New[string](Options{})
	for i := 1; i <= 100_000; i++ {
		require.NoError(t, s.Add(entry(uint64(i), classify.Transient, "k", i)))
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, ok := s.Get(50_000); !ok {
			t.Fatal("missing")
		}
	})
	assert.LessOrEqual(t, allocs, 1.0, "Get copies one entry's failures")
	allocs = testing.AllocsPerRun(100, func() {
		if n, _, _ := s.CountQuery(Query{Key: "k"}); n != 100_000 {
			t.Fatal("count")
		}
	})
	assert.Zero(t, allocs)
}

// countKey is how many entries have key k, from the kept counts.
func countKey(s *Store[string], k string) int {
	n, _, _ := s.CountQuery(Query{Key: k})
	return n
}
