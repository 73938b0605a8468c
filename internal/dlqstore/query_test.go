package dlqstore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/internal/fold"
)

// sample stores, in dead-letter order (IDs deliberately not in that order):
//
//	sec  id  category   key     reviewed
//	10   5   transient  slack   yes
//	10   6   transient  mail
//	20   1   poison     slack
//	30   9   timeout    slack   yes
//	40   2   transient  ""
//	50   4   poison     mail    yes
func sample(t *testing.T) *Store[string] {
	t.Helper()
	s := New[string](Options{})
	rows := []struct {
		id       uint64
		cat      classify.Category
		key      string
		sec      int
		reviewed bool
	}{
		{2, classify.Transient, "", 40, false},
		{5, classify.Transient, "slack", 10, true},
		{1, classify.Poison, "slack", 20, false},
		{9, classify.Timeout, "slack", 30, true},
		{6, classify.Transient, "mail", 10, false},
		{4, classify.Poison, "mail", 50, true},
	}
	for _, r := range rows {
		require.NoError(t, s.Add(entry(r.id, r.cat, r.key, r.sec)))
		if r.reviewed {
			require.NoError(t, s.MarkReviewed(r.id, "ok", at(60)))
		}
	}
	return s
}

func ids[M any](es []Entry[M]) []uint64 {
	out := make([]uint64, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

func TestQuery(t *testing.T) {
	s := sample(t)
	cats := func(cs ...classify.Category) []classify.Category { return cs }
	tests := []struct {
		name string
		q    Query
		want []uint64
	}{
		{"all, in (DeadAt, ID) order", Query{}, []uint64{5, 6, 1, 9, 2, 4}},
		{"one category", Query{Categories: cats(classify.Transient)}, []uint64{5, 6, 2}},
		{"two categories merge in order", Query{Categories: cats(classify.Poison, classify.Timeout)}, []uint64{1, 9, 4}},
		{"repeated category", Query{Categories: cats(classify.Poison, classify.Poison)}, []uint64{1, 4}},
		{"empty category", Query{Categories: cats(classify.Expired)}, []uint64{}},
		{"key", Query{Key: "slack"}, []uint64{5, 1, 9}},
		{"key and category", Query{Key: "slack", Categories: cats(classify.Poison, classify.Timeout)}, []uint64{1, 9}},
		{"unknown key", Query{Key: "nope"}, []uint64{}},
		{"since is inclusive", Query{Since: at(20)}, []uint64{1, 9, 2, 4}},
		{"until is exclusive", Query{Until: at(30)}, []uint64{5, 6, 1}},
		{"window", Query{Since: at(10), Until: at(40)}, []uint64{5, 6, 1, 9}},
		{"since == until is empty", Query{Since: at(20), Until: at(20)}, []uint64{}},
		{"reviewed", Query{Reviewed: OnlyReviewed}, []uint64{5, 9, 4}},
		{"unreviewed", Query{Reviewed: OnlyUnreviewed}, []uint64{6, 1, 2}},
		{"limit", Query{Limit: 2}, []uint64{5, 6}},
		{"after a tie", Query{After: 5}, []uint64{6, 1, 9, 2, 4}},
		{"after, limit", Query{After: 6, Limit: 2}, []uint64{1, 9}},
		{"after the last", Query{After: 4}, []uint64{}},
		{"after is a position, not a category filter", Query{After: 9, Categories: cats(classify.Transient)}, []uint64{2}},
		{"since beyond the cursor wins", Query{After: 5, Since: at(30)}, []uint64{9, 2, 4}},
		{"cursor beyond since wins", Query{After: 9, Since: at(10)}, []uint64{2, 4}},
		{"everything", Query{Categories: cats(classify.Poison), Key: "mail", Since: at(0), Until: at(60), Reviewed: OnlyReviewed}, []uint64{4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Query(tt.q)
			require.NoError(t, err)
			assert.Equal(t, tt.want, ids(got))
		})
	}
}

func TestQueryInvalid(t *testing.T) {
	s := sample(t)
	tests := []struct {
		name string
		q    Query
	}{
		{"negative limit", Query{Limit: -1}},
		{"since after until", Query{Since: at(2), Until: at(1)}},
		{"undeclared review", Query{Reviewed: Review(7)}},
		{"undeclared category", Query{Categories: []classify.Category{classify.Category(42)}}},
		{"unknown cursor", Query{After: 12345}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Query(tt.q)
			assert.ErrorIs(t, err, ErrInvalid)
			n := s.Len()
			_, err = s.Purge(tt.q)
			assert.ErrorIs(t, err, ErrInvalid)
			assert.Equal(t, n, s.Len(), "a failed purge removes nothing")
		})
	}
}

func TestPurge(t *testing.T) {
	s := sample(t)
	got, err := s.Purge(Query{Key: "slack", Reviewed: OnlyReviewed})
	require.NoError(t, err)
	assert.Equal(t, []uint64{5, 9}, ids(got))
	rest, _ := s.Query(Query{})
	assert.Equal(t, []uint64{6, 1, 2, 4}, ids(rest))
	assert.Equal(t, 2, s.Count(classify.Transient))
	assert.Equal(t, 0, s.Count(classify.Timeout))

	got, err = s.Purge(Query{Limit: 1, After: 6})
	require.NoError(t, err)
	assert.Equal(t, []uint64{1}, ids(got), "Purge honours the cursor and Limit")

	got, err = s.Purge(Query{})
	require.NoError(t, err)
	assert.Equal(t, []uint64{6, 2, 4}, ids(got), "the zero query purges everything")
	assert.Zero(t, s.Len())
}

// TestPagingCoversEverythingOnce pages through each query with every
// limit and checks the pages concatenate to the unpaged result.
func TestPagingCoversEverythingOnce(t *testing.T) {
	s := New[string](Options{})
	id := uint64(0)
	for sec := range 40 {
		for k := range sec%3 + 1 { // ties on DeadAt, IDs out of time order
			id++
			cat := classify.Categories()[(sec+k)%8]
			key := []string{"", "a", "b"}[k]
			require.NoError(t, s.Add(entry(1000-id, cat, key, sec%17)))
		}
	}
	queries := []Query{
		{},
		{Categories: []classify.Category{classify.Transient, classify.Poison}},
		{Key: "a"},
		{Since: at(3), Until: at(12)},
	}
	for _, base := range queries {
		all, err := s.Query(base)
		require.NoError(t, err)
		for limit := 1; limit <= len(all)+1; limit++ {
			q := base
			q.Limit = limit
			var paged []uint64
			for {
				page, err := s.Query(q)
				require.NoError(t, err)
				paged = append(paged, ids(page)...)
				if len(page) < limit {
					break
				}
				q.After = page[len(page)-1].ID
			}
			require.Equal(t, ids(all), paged, "query %+v, limit %d", base, limit)
		}
	}
}

// TestPagingSurvivesRemovedCursor redrives the cursor entry between pages.
func TestPagingSurvivesRemovedCursor(t *testing.T) {
	s := sample(t)
	page, err := s.Query(Query{Limit: 3})
	require.NoError(t, err)
	require.Equal(t, []uint64{5, 6, 1}, ids(page))
	_, ok := s.Remove(1) // redriven by another operator
	require.True(t, ok)
	next, err := s.Query(Query{After: 1, Limit: 3})
	require.NoError(t, err)
	assert.Equal(t, []uint64{9, 2, 4}, ids(next))

	// Re-added (died again later): the cursor follows the live entry.
	e := entry(1, classify.Poison, "slack", 45)
	require.NoError(t, s.Add(e))
	next, err = s.Query(Query{After: 1})
	require.NoError(t, err)
	assert.Equal(t, []uint64{4}, ids(next))
}

func TestCursorMemoryBounded(t *testing.T) {
	s := New[string](Options{CursorMemory: 2})
	for id := uint64(1); id <= 4; id++ {
		require.NoError(t, s.Add(entry(id, classify.Transient, "", int(id))))
	}
	for id := uint64(1); id <= 3; id++ {
		s.Remove(id)
	}
	_, err := s.Query(Query{After: 1})
	assert.ErrorIs(t, err, ErrInvalid, "forgotten: only the last 2 removals are remembered")
	got, err := s.Query(Query{After: 2})
	require.NoError(t, err)
	assert.Equal(t, []uint64{4}, ids(got))

	none := New[string](Options{CursorMemory: -1})
	require.NoError(t, none.Add(entry(1, classify.Transient, "", 1)))
	none.Remove(1)
	_, err = none.Query(Query{After: 1})
	assert.ErrorIs(t, err, ErrInvalid)
}

// TestManyRemovalsCompact removes most of a large category one by one and
// checks order and counts stay right across compactions.
func TestManyRemovalsCompact(t *testing.T) {
	s := New[string](Options{})
	const n = 1000
	for id := uint64(1); id <= n; id++ {
		require.NoError(t, s.Add(entry(id, classify.Timeout, "k", int(id))))
	}
	for id := uint64(1); id <= n; id++ {
		if id%10 != 0 {
			s.Remove(id)
		}
	}
	assert.Equal(t, n/10, s.Count(classify.Timeout))
	assert.LessOrEqual(t, len(s.byCat[classify.Timeout].recs), 2*n/10+1, "tombstones were compacted")
	got, err := s.Query(Query{Key: "k", Since: at(500), Limit: 3})
	require.NoError(t, err)
	assert.Equal(t, []uint64{500, 510, 520}, ids(got))
}

// A page is sized once: by its Limit, or by what the indexes it reads
// hold when that is less, never grown by doubling.
func TestQueryWithALimitSizesItsResultOnce(t *testing.T) {
	s := New[string](Options{})
	for i := 1; i <= 1000; i++ {
		require.NoError(t, s.Add(entry(uint64(i), classify.Categories()[i%8], "", i)))
	}
	q := Query{Categories: []classify.Category{classify.Transient}, Since: at(500), Limit: 50}
	allocs := testing.AllocsPerRun(20, func() {
		got, err := s.Query(q)
		if err != nil || len(got) != 50 || cap(got) != 50 {
			t.Fatalf("%d entries, cap %d, %v", len(got), cap(got), err)
		}
	})
	assert.LessOrEqual(t, allocs, 53.0, "each entry's failures, one slice and the walk's own two or three")

	got, err := s.Query(Query{Categories: []classify.Category{classify.Transient}, Since: at(990), Limit: 1000})
	require.NoError(t, err)
	assert.Len(t, got, 1, "transient entries from 990: 993")
	assert.LessOrEqual(t, cap(got), 2, "sized by the index's entries from the start, not by the Limit")
}

func TestQueryTextSearchesKeyQueueErrorsAndMessage(t *testing.T) {
	s := New[string](Options{})
	s.SearchMessages(func(m *string, needle string) bool { return fold.Contains(*m, needle) })
	add := func(id uint64, key, queue, errText string) {
		e := entry(id, classify.Transient, key, int(id))
		e.Queue = queue
		e.Failures[0].Error = errText
		require.NoError(t, s.Add(e))
	}
	add(1, "acct-42", "", "HTTP 503 from billing")
	add(2, "acct-7", "mail", "smtp: connection reset")
	add(3, "acct-9", "", "payload rejected") // message "msg-3"
	add(4, "acct-421", "", "ok")
	ids := func(q Query) []uint64 {
		es, err := s.Query(q)
		require.NoError(t, err)
		var out []uint64
		for _, e := range es {
			out = append(out, e.ID)
		}
		n, _, err := s.CountQuery(q)
		require.NoError(t, err)
		assert.Len(t, out, n, "CountQuery agrees with Query for %+v", q)
		return out
	}
	assert.Equal(t, []uint64{1, 4}, ids(Query{Text: "ACCT-42"}), "the key, without regard to case")
	assert.Equal(t, []uint64{2}, ids(Query{Text: "MAIL"}), "the queue")
	assert.Equal(t, []uint64{2}, ids(Query{Text: "Connection Reset"}), "an error's text")
	assert.Equal(t, []uint64{3}, ids(Query{Text: "msg-3"}), "the message, through SearchMessages")
	assert.Equal(t, []uint64{4}, ids(Query{Text: "acct-42", After: 1}), "paged with After")
	assert.Equal(t, []uint64{1}, ids(Query{Text: "acct-42", Limit: 1}), "bounded by Limit")
	assert.Empty(t, ids(Query{Text: "nowhere"}))
	gone, err := s.Purge(Query{Text: "reset"})
	require.NoError(t, err)
	require.Len(t, gone, 1)
	assert.Equal(t, uint64(2), gone[0].ID, "a purge takes what the search finds")
}
