package dlqstore

import (
	"cmp"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/ringwal/ringwal/classify"
)

// model is the naive reference: a slice, filtered and sorted per query.
type model struct {
	entries []Entry[string]
	removed map[uint64]pos // every removal's position, for cursors
}

func (m *model) find(id uint64) int {
	return slices.IndexFunc(m.entries, func(e Entry[string]) bool { return e.ID == id })
}

func (m *model) remove(i int) Entry[string] {
	e := m.entries[i]
	m.entries = slices.Delete(m.entries, i, i+1)
	m.removed[e.ID] = pos{at: e.DeadAt, id: e.ID}
	return e
}

// query returns the expected IDs, or ok=false when the query is invalid.
func (m *model) query(q Query) (ids []uint64, ok bool) {
	if q.Limit < 0 || (!q.Since.IsZero() && !q.Until.IsZero() && q.Since.After(q.Until)) {
		return nil, false
	}
	var cur *pos
	if q.After != 0 {
		if i := m.find(q.After); i >= 0 {
			cur = &pos{at: m.entries[i].DeadAt, id: q.After}
		} else if p, found := m.removed[q.After]; found {
			cur = &p
		} else {
			return nil, false
		}
	}
	var sel []Entry[string]
	for _, e := range m.entries {
		p := pos{at: e.DeadAt, id: e.ID}
		switch {
		case len(q.Categories) > 0 && !slices.Contains(q.Categories, e.Category),
			q.Key != "" && e.Key != q.Key,
			q.Queue != "" && e.Queue != q.Queue,
			!q.Since.IsZero() && e.DeadAt.Before(q.Since),
			!q.Until.IsZero() && !e.DeadAt.Before(q.Until),
			q.Reviewed == OnlyReviewed && !e.Reviewed,
			q.Reviewed == OnlyUnreviewed && e.Reviewed,
			cur != nil && p.cmp(*cur) <= 0:
			continue
		}
		sel = append(sel, e)
	}
	slices.SortFunc(sel, func(a, b Entry[string]) int {
		return cmp.Or(a.DeadAt.Compare(b.DeadAt), cmp.Compare(a.ID, b.ID))
	})
	if q.Limit > 0 && len(sel) > q.Limit {
		sel = sel[:q.Limit]
	}
	ids = []uint64{}
	for _, e := range sel {
		ids = append(ids, e.ID)
	}
	return ids, true
}

// bytes hands out fuzz input, zeros once it runs out.
type bytes struct{ b []byte }

func (r *bytes) next() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *bytes) query() Query {
	var q Query
	if mask := r.next(); mask&1 != 0 {
		for c := range 8 {
			if mask&(2<<c) != 0 {
				q.Categories = append(q.Categories, classify.Category(c))
			}
		}
	}
	q.Key = []string{"", "", "a", "b", "c"}[r.next()%5]
	q.Queue = []string{"", "", "a", "q1", "q2", "q3"}[r.next()%6]
	if b := r.next(); b%3 != 0 {
		q.Since = at(int(b % 24))
	}
	if b := r.next(); b%3 != 0 {
		q.Until = at(int(b % 24))
	}
	q.Reviewed = Review(r.next() % 3)
	if b := r.next(); b%2 == 0 {
		q.After = uint64(b % 40)
	}
	q.Limit = int(r.next()%6) - 1 // -1 is invalid
	return q
}

// FuzzQuery drives random adds, removes, reviews, purges, sweeps,
// evictions, queries and counts against a Store and the naive model,
// comparing every answer.
func FuzzQuery(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 0, 5, 2, 1, 0, 9, 4, 4, 0, 0, 0, 0, 0, 0, 0, 3})
	f.Add([]byte("add add add query remove query purge sweep review query"))
	f.Add(slices.Repeat([]byte{0, 7, 3, 1, 2, 5, 1, 4, 2, 9, 1, 0, 1, 3}, 20))
	// Adds to named queues and the default one, a query and a paging by
	// queue, a removal, a purge by queue and an eviction.
	f.Add([]byte{0, 0, 1, 1, 5, 3, 1, 1, 2, 0, 6, 4, 0, 2, 1, 2, 7, 2, 0, 3, 0, 1, 3, 0, 0, 4, 3, 0, 9, 3,
		7, 0, 0, 3, 0, 0, 0, 1, 2, 2, 0, 8, 0, 0, 2, 0, 0, 0, 1, 2,
		4, 0, 0, 4, 0, 0, 0, 1, 1, 6, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		const retention = 10 * time.Second
		s := New[string](Options{Retention: retention, CursorMemory: 1 << 20})
		m := &model{removed: map[uint64]pos{}}
		r := &bytes{b: data}
		for len(r.b) > 0 {
			switch op := r.next() % 9; op {
			case 0, 1: // add
				id := uint64(r.next()%40 + 1)
				e := entry(id, classify.Category(r.next()%8), []string{"", "a", "b", "c"}[r.next()%4], int(r.next()%24))
				e.Queue = []string{"", "", "a", "q1", "q2"}[r.next()%5] // "a" is a key too
				err := s.Add(e)
				if m.find(id) >= 0 {
					if !errors.Is(err, ErrDuplicate) {
						t.Fatalf("add duplicate %d: %v", id, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("add %d: %v", id, err)
				}
				m.entries = append(m.entries, e)
			case 2: // remove
				id := uint64(r.next()%40 + 1)
				got, ok := s.Remove(id)
				i := m.find(id)
				if ok != (i >= 0) {
					t.Fatalf("remove %d: store %v, model %v", id, ok, i >= 0)
				}
				if ok && got.ID != m.remove(i).ID {
					t.Fatalf("remove %d returned %d", id, got.ID)
				}
			case 3: // review
				id := uint64(r.next()%40 + 1)
				err := s.MarkReviewed(id, "n", at(0))
				i := m.find(id)
				if (err == nil) != (i >= 0) {
					t.Fatalf("review %d: %v, model has it: %v", id, err, i >= 0)
				}
				if i >= 0 {
					m.entries[i].Reviewed, m.entries[i].Note, m.entries[i].ReviewedAt = true, "n", at(0)
				}
			case 4: // purge
				q := r.query()
				want, ok := m.query(q)
				got, err := s.Purge(q)
				check(t, "purge", q, want, ok, ids(got), err)
				for _, id := range want {
					m.remove(m.find(id))
				}
			case 5: // sweep
				now := at(int(r.next() % 40))
				got := s.Sweep(now)
				var want []uint64
				for i := 0; i < len(m.entries); {
					if e := m.entries[i]; e.Reviewed && e.DeadAt.Before(now.Add(-retention)) {
						want = append(want, m.remove(i).ID)
						continue
					}
					i++
				}
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Fatalf("sweep at %v: got %v, want %v", now, got, want)
				}
			case 6: // evict: the oldest reviewed first, then the oldest
				keep := int(r.next() % 40)
				got := ids(s.Evict(keep))
				byAge := slices.Clone(m.entries)
				slices.SortFunc(byAge, func(a, b Entry[string]) int {
					if a.Reviewed != b.Reviewed {
						if a.Reviewed {
							return -1
						}
						return 1
					}
					return cmp.Or(a.DeadAt.Compare(b.DeadAt), cmp.Compare(a.ID, b.ID))
				})
				want := []uint64{}
				for _, e := range byAge[:max(len(byAge)-keep, 0)] {
					want = append(want, m.remove(m.find(e.ID)).ID)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("evict to %d: got %v, want %v", keep, got, want)
				}
			default: // query, then page through it
				q := r.query()
				want, ok := m.query(q)
				got, err := s.Query(q)
				check(t, "query", q, want, ok, ids(got), err)
				if ok && q.Limit > 0 {
					pageAll(t, s, q, m)
				}
				n, _, err := s.CountQuery(q)
				if ok && (err != nil || n != len(want)) {
					t.Fatalf("count %+v: %d, %v, want %d", q, n, err, len(want))
				}
			}
			checkCounts(t, s, m)
		}
	})
}

func check(t *testing.T, what string, q Query, want []uint64, ok bool, got []uint64, err error) {
	t.Helper()
	if !ok {
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("%s %+v: want ErrInvalid, got %v, %v", what, q, got, err)
		}
		return
	}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("%s %+v:\n got %v, %v\nwant %v", what, q, got, err, want)
	}
}

// pageAll pages from q's cursor with q's limit and compares the pages'
// concatenation with the model's unlimited answer.
func pageAll(t *testing.T, s *Store[string], q Query, m *model) {
	t.Helper()
	all := q
	all.Limit = 0
	want, _ := m.query(all)
	var got []uint64
	for {
		page, err := s.Query(q)
		if err != nil {
			t.Fatalf("page %+v: %v", q, err)
		}
		got = append(got, ids(page)...)
		if len(page) < q.Limit {
			break
		}
		q.After = page[len(page)-1].ID
	}
	if !slices.Equal(got, want) {
		t.Fatalf("paging %+v:\n got %v\nwant %v", all, got, want)
	}
}

func checkCounts(t *testing.T, s *Store[string], m *model) {
	t.Helper()
	if s.Len() != len(m.entries) {
		t.Fatalf("Len %d, model %d", s.Len(), len(m.entries))
	}
	want := map[classify.Category]int{}
	for _, c := range classify.Categories() {
		want[c] = 0
	}
	for _, e := range m.entries {
		want[e.Category]++
	}
	for c, n := range s.Counts() {
		if want[c] != n || s.Count(c) != n {
			t.Fatalf("count %s: Counts %d, Count %d, model %d", c, n, s.Count(c), want[c])
		}
	}
	perQueue := map[string]int{}
	for _, e := range m.entries {
		perQueue[e.Queue]++
	}
	if got := s.QueueCounts(); !maps.Equal(got, perQueue) {
		t.Fatalf("QueueCounts %v, model %v", got, perQueue)
	}
	for _, q := range []string{"", "a", "q1", "q2", "q3"} {
		if s.QueueLen(q) != perQueue[q] {
			t.Fatalf("QueueLen(%q) %d, model %d", q, s.QueueLen(q), perQueue[q])
		}
	}
}
