package dlqstore

import (
	"fmt"
	"strings"

	"github.com/ringwal/ringwal/internal/fold"
)

// Query returns copies of the matching entries in (DeadAt, ID) order. A
// malformed query (negative Limit, Since after Until, an undeclared
// category or Review, an unknown cursor) fails with ErrInvalid. It holds
// the read lock for the duration and copies what it returns: pass a Limit
// to bound both. See Store for its cost.
func (s *Store[M]) Query(q Query) ([]Entry[M], error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := []Entry[M]{}
	reserve := func(n int) { out = make([]Entry[M], 0, n) }
	err := s.walkLocked(q, reserve, func(r *record[M]) { out = append(out, clone(r.e)) })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CountQuery returns how many entries Query(q) would return, without
// copying any, and the store's Mark at that moment: a Purge of q with
// Through set to it removes exactly the entries counted, less those
// removed since. It fails like Query. It holds the read lock; a query
// whose only filters are Categories or one Key is O(c) from the kept
// counts, and then does not allocate (so is one whose only filter is one
// Queue); any other is O(c·log n + m + s)
// for m matching entries (see Store), with a few small allocations for
// the walk, never a copy of an entry.
func (s *Store[M]) CountQuery(q Query) (n int, mark uint64, err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	mask, err := s.validate(q)
	if err != nil {
		return 0, 0, err
	}
	mark = s.seq
	plain := q.Since.IsZero() && q.Until.IsZero() && q.Reviewed == Any && q.After == 0 && q.Through == 0 && q.Text == ""
	switch {
	case plain && q.Key == "" && q.Queue == "":
		for c := range s.byCat {
			if mask&(1<<c) != 0 {
				n += s.byCat[c].live()
			}
		}
	case plain && len(q.Categories) == 0 && q.Queue == "":
		if x := s.byKey[q.Key]; x != nil {
			n = x.live()
		}
	case plain && len(q.Categories) == 0 && q.Key == "":
		if x := s.byQueue[q.Queue]; x != nil {
			n = x.live()
		}
	default:
		if err := s.walkLocked(q, nil, func(*record[M]) { n++ }); err != nil {
			return 0, 0, err
		}
		return n, mark, nil
	}
	if q.Limit > 0 {
		n = min(n, q.Limit)
	}
	return n, mark, nil
}

// Purge removes exactly the entries Query(q) would return and returns
// them, so the caller can log each one. Mind that the zero Query purges
// everything. It fails like Query, removing nothing.
func (s *Store[M]) Purge(q Query) ([]Entry[M], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var recs []*record[M]
	if err := s.walkLocked(q, nil, func(r *record[M]) { recs = append(recs, r) }); err != nil {
		return nil, err
	}
	s.removeAll(recs)
	out := make([]Entry[M], len(recs))
	for i, r := range recs {
		out[i] = r.e // the record is gone: no one else holds its Failures
	}
	return out, nil
}

// cursor walks one index from a start position.
type cursor[M any] struct {
	x *index[M]
	i int
}

// walkLocked calls visit with the records matching q, in order. If q has
// a Limit and reserve is not nil, it first calls reserve with the most
// records it can visit: the Limit, or fewer if the indexes it reads hold
// fewer from where it starts, so that Query sizes its result once instead
// of growing it by doubling (a page copied at most once, and no more
// memory than the doubling's last step). s.mu must be held.
func (s *Store[M]) walkLocked(q Query, reserve func(int), visit func(*record[M])) error {
	catMask, err := s.validate(q)
	if err != nil {
		return err
	}
	since := pos{at: q.Since.Round(0)}
	from, after := since, false
	if q.After != 0 {
		p, ok := s.position(q.After)
		if !ok {
			return fmt.Errorf("query: cursor %d: no such entry, nor recently removed: %w", q.After, ErrInvalid)
		}
		if p.cmp(since) >= 0 {
			from, after = p, true
		}
	}
	until := q.Until.Round(0)

	// The sources: one key or queue index (filtered by category, and by
	// the other of key and queue when both are asked for: the smaller
	// index is read), or one index per selected category.
	var curs []cursor[M]
	filterCat, filterKey, filterQueue := false, false, false
	if q.Key != "" || q.Queue != "" {
		var kx, x *index[M]
		if q.Key != "" {
			kx = s.byKey[q.Key]
			x = kx
		}
		if q.Queue != "" {
			switch qx := s.byQueue[q.Queue]; {
			case qx == nil:
				x = nil // nothing came from that queue
			case q.Key == "":
				x = &qx.index
			case kx == nil: // nothing has that key
			case qx.live() < kx.live():
				x, filterKey = &qx.index, true
			default:
				filterQueue = true
			}
		}
		if x != nil {
			curs = append(curs, cursor[M]{x: x})
		}
		filterCat = len(q.Categories) > 0
	} else {
		for c := range s.byCat {
			if catMask&(1<<c) != 0 && s.byCat[c].live() > 0 {
				curs = append(curs, cursor[M]{x: &s.byCat[c]})
			}
		}
	}
	if !q.Since.IsZero() || after { // else start at 0: a zero Since is unbounded
		for j := range curs {
			curs[j].i = curs[j].x.search(from, after)
		}
	}
	if reserve != nil && q.Limit > 0 {
		n := 0
		for _, c := range curs {
			n += len(c.x.recs) - c.i
		}
		reserve(min(n, q.Limit))
	}
	needle := strings.ToLower(q.Text)
	keep := func(r *record[M]) bool {
		return !r.gone && matchReview(q.Reviewed, r.e.Reviewed) && (q.Through == 0 || r.seq <= q.Through) &&
			(!filterCat || catMask&(1<<r.e.Category) != 0) &&
			(!filterKey || r.e.Key == q.Key) && (!filterQueue || r.e.Queue == q.Queue) &&
			(needle == "" || s.matchText(&r.e, needle))
	}

	for n := 0; q.Limit == 0 || n < q.Limit; n++ {
		best := -1
		for j := range curs {
			r := curs[j].next(keep)
			if r == nil || (!until.IsZero() && !r.pos.at.Before(until)) {
				continue
			}
			if best < 0 || r.pos.cmp(curs[best].x.recs[curs[best].i].pos) < 0 {
				best = j
			}
		}
		if best < 0 {
			break
		}
		visit(curs[best].x.recs[curs[best].i])
		curs[best].i++
	}
	return nil
}

// next skips records that fail ok and returns the head, or nil at the end.
func (c *cursor[M]) next(ok func(*record[M]) bool) *record[M] {
	for ; c.i < len(c.x.recs); c.i++ {
		if r := c.x.recs[c.i]; ok(r) {
			return r
		}
	}
	return nil
}

// position returns where the entry with that ID stands or stood.
func (s *Store[M]) position(id ID) (pos, bool) {
	if r, ok := s.byID[id]; ok {
		return r.pos, true
	}
	return s.ghosts.lookup(id)
}

// validate checks q and returns its category set as a bit mask.
func (s *Store[M]) validate(q Query) (uint64, error) {
	var why string
	switch {
	case q.Limit < 0:
		why = fmt.Sprintf("negative Limit %d", q.Limit)
	case !q.Since.IsZero() && !q.Until.IsZero() && q.Since.After(q.Until):
		why = fmt.Sprintf("Since %v is after Until %v", q.Since, q.Until)
	case q.Reviewed > OnlyUnreviewed:
		why = fmt.Sprintf("undeclared Review %d", q.Reviewed)
	}
	if why != "" {
		return 0, fmt.Errorf("query: %s: %w", why, ErrInvalid)
	}
	if len(q.Categories) == 0 {
		return 1<<len(s.byCat) - 1, nil
	}
	var mask uint64
	for _, c := range q.Categories {
		if !c.Valid() || int(c) >= len(s.byCat) {
			return 0, fmt.Errorf("query: undeclared %s: %w", c, ErrInvalid)
		}
		mask |= 1 << c
	}
	return mask, nil
}

func matchReview(want Review, reviewed bool) bool {
	switch want {
	case OnlyReviewed:
		return reviewed
	case OnlyUnreviewed:
		return !reviewed
	}
	return true
}

// matchText reports whether needle (lower-cased, not empty) occurs in e's
// key, queue, failures' errors, or (SearchMessages) its message.
func (s *Store[M]) matchText(e *Entry[M], needle string) bool {
	if fold.Contains(e.Key, needle) || fold.Contains(e.Queue, needle) {
		return true
	}
	for i := range e.Failures {
		if fold.Contains(e.Failures[i].Error, needle) {
			return true
		}
	}
	return s.textIn != nil && s.textIn(&e.Message, needle)
}
