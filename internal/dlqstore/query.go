package dlqstore

import (
	"cmp"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/ringwal/ringwal/internal/fold"
)

// Query returns copies of the matching entries in (DeadAt, ID) order. A
// malformed query (negative Limit, Since after Until, an undeclared
// category or Review, an unknown cursor) fails with ErrInvalid. It holds
// the read lock while it walks and copies what it returns: pass a Limit to
// bound both. A text search (Query.Text) lets go of the lock after every
// searchChunk entries it reads (see searchPause). See Store for its cost.
func (s *Store[M]) Query(q Query) ([]Entry[M], error) { return s.query(q, nil) }

// QueryAfter is Query resumed just after the place (deadAt, id) in the
// result order, whether or not an entry is there now (and after q.After
// and q.Since, if they are further on). It is the cursor of a caller that
// removes what it reads, a bulk redrive: the last entry of its page is
// gone, perhaps back under the same ID at a later place (dead-lettered
// again), and the cursor memory Query.After falls back on is bounded, so
// paging by ID could fail or skip; starting each page again from q's
// start instead reads every entry the filters skip once per page.
func (s *Store[M]) QueryAfter(q Query, deadAt time.Time, id ID) ([]Entry[M], error) {
	return s.query(q, &pos{at: deadAt.Round(0), id: id})
}

// query is Query, resumed just after resume unless it is nil.
func (s *Store[M]) query(q Query, resume *pos) ([]Entry[M], error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := []Entry[M]{}
	reserve := func(n int) { out = make([]Entry[M], 0, n) }
	err := s.walkLocked(q, resume, reserve, func(r *record[M]) { out = append(out, clone(r.e)) }, s.searchPause(q))
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Reads returns how many entries the store's walks (Query, QueryAfter,
// CountQuery's walks, Purge) have read since New, the ones they skipped
// included: a measure of their work that tests and benchmarks count
// rather than time. Without the lock.
func (s *Store[M]) Reads() uint64 { return s.reads.Load() }

// CountQuery returns how many entries Query(q) would return, without
// copying any, and the store's Mark at that moment: a Purge of q with
// Through set to it removes exactly the entries counted, less those
// removed since. It fails like Query. It holds the read lock (a text
// search lets go of it between chunks, as Query's does); a query
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
		if err := s.walkLocked(q, nil, nil, func(*record[M]) { n++ }, s.searchPause(q)); err != nil {
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
// everything. It fails like Query, removing nothing. It holds the write
// lock throughout, a text search's included: what it removes is one
// walk's.
func (s *Store[M]) Purge(q Query) ([]Entry[M], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var recs []*record[M]
	if err := s.walkLocked(q, nil, nil, func(r *record[M]) { recs = append(recs, r) }, nil); err != nil {
		return nil, err
	}
	s.removeAll(recs)
	out := make([]Entry[M], len(recs))
	for i, r := range recs {
		out[i] = r.e // the record is gone: no one else holds its Failures
	}
	return out, nil
}

// defaultSearchChunk is how many entries a text search reads under one
// hold of the read lock: a dead-lettering waiting for the write lock waits
// for one chunk's worth of matching (tens of microseconds), never for a
// walk of the whole store, while the walk retakes the lock some hundreds
// of times for a store of 200,000.
const defaultSearchChunk = 256

// searchPause returns what a walk of q calls between chunks: nil (never
// pause) but for a text search under the read lock, the one walk that
// reads every entry the other filters leave and spends a substring search
// on each. The pause lets go of the read lock, so that writers (Add above
// all: a Nack that dead-letters) get in, and takes it again.
func (s *Store[M]) searchPause(q Query) func() {
	if q.Text == "" {
		return nil
	}
	return func() {
		s.mu.RUnlock()
		if s.betweenChunks != nil {
			s.betweenChunks()
		}
		s.mu.RLock()
	}
}

// cursor walks one index from a start position; from (after: exclusive)
// is where it resumes once the walk has let go of the lock, the position
// of the last record it read.
type cursor[M any] struct {
	x     *index[M]
	i     int
	from  pos
	after bool
}

// walkLocked calls visit with the records matching q, in order. If q has
// a Limit and reserve is not nil, it first calls reserve with the most
// records it can visit: the Limit, or fewer if the indexes it reads hold
// fewer from where it starts, so that Query sizes its result once instead
// of growing it by doubling (a page copied at most once, and no more
// memory than the doubling's last step). s.mu must be held.
//
// If pause is not nil, the walk calls it after reading every searchChunk
// records (pause lets go of s.mu and takes it again), then finds its
// place again: each index it reads from just after the last record it
// read there (positions never change, so a binary search finds it
// whatever was added or removed meanwhile). It visits only the records
// there when it started (their add sequence at most the store's then, as
// if Through were set to it), so that every record there throughout is
// visited once, in order; none added meanwhile is (nor a dead letter
// removed and added again under its ID, which could be visited twice);
// one removed before the walk reached it is not.
func (s *Store[M]) walkLocked(q Query, resume *pos, reserve func(int), visit func(*record[M]), pause func()) error {
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
	if resume != nil && resume.cmp(from) >= 0 {
		from, after = *resume, true
	}
	until := q.Until.Round(0)
	through := q.Through
	budget, chunk := math.MaxInt, 0
	if pause != nil {
		if through == 0 || through > s.seq {
			through = s.seq
		}
		chunk = cmp.Or(s.searchChunk, defaultSearchChunk)
		budget = chunk
	}
	// Every record read spends one of budget: what the chunks spent is
	// what the walk read.
	read, start := 0, budget
	defer func() { s.reads.Add(uint64(read + start - budget)) }()

	var src sources[M]
	s.find(q, catMask, &src, true)
	for j := range src.curs {
		src.curs[j].from, src.curs[j].after = from, after
	}
	if !q.Since.IsZero() || after { // else start at 0: a zero Since is unbounded
		for j := range src.curs {
			src.curs[j].i = src.curs[j].x.search(from, after)
		}
	}
	if reserve != nil && q.Limit > 0 {
		n := 0
		for _, c := range src.curs {
			n += len(c.x.recs) - c.i
		}
		reserve(min(n, q.Limit))
	}
	needle := strings.ToLower(q.Text)
	keep := func(r *record[M]) bool {
		return !r.gone && matchReview(q.Reviewed, r.e.Reviewed) && (through == 0 || r.seq <= through) &&
			(!src.filterCat || catMask&(1<<r.e.Category) != 0) &&
			(!src.filterKey || r.e.Key == q.Key) && (!src.filterQueue || r.e.Queue == q.Queue) &&
			(needle == "" || s.matchText(&r.e, needle))
	}

	for n := 0; q.Limit == 0 || n < q.Limit; {
		if budget <= 0 {
			s.resume(q, catMask, &src, pause)
			read += start - budget
			budget = chunk
		}
		best, spent := -1, false
		for j := range src.curs {
			r, ok := src.curs[j].next(keep, &budget)
			if !ok {
				spent = true
				break
			}
			if r == nil || (!until.IsZero() && !r.pos.at.Before(until)) {
				continue
			}
			if best < 0 || r.pos.cmp(src.curs[best].x.recs[src.curs[best].i].pos) < 0 {
				best = j
			}
		}
		if spent {
			continue // pause, then look for the heads again
		}
		if best < 0 {
			break
		}
		visit(src.curs[best].x.recs[src.curs[best].i])
		src.curs[best].i++
		n++
		budget--
	}
	return nil
}

// sources are the indexes a walk reads: one key or queue index (filtered
// by category, and by the other of key and queue when both are asked
// for: the smaller index is read), or one index per selected category.
type sources[M any] struct {
	curs                              []cursor[M]
	filterCat, filterKey, filterQueue bool
}

// find sets src to q's sources. The first time (src empty) it makes the
// cursors, each at its index's start: one per category of catMask that
// holds a live entry (an empty one costs a walk nothing, a checkpoint's
// many walks included), or the one of a key or queue. A category empty
// then and filled while a text search pauses needs no cursor: the walk
// visits only records there when it started (Through). Again, when a
// walk resumes, it keeps each
// cursor's place (from, after): the category indexes are where they were;
// a key's or queue's may have been dropped and made again meanwhile, or
// the smaller of the two changed, so that one is looked up again (and
// once gone, nothing is left to visit there: every record there when the
// walk started is gone too). s.mu must be held.
func (s *Store[M]) find(q Query, catMask uint64, src *sources[M], first bool) {
	if q.Key == "" && q.Queue == "" {
		if first {
			for c := range s.byCat {
				if catMask&(1<<c) != 0 && s.byCat[c].live() > 0 {
					src.curs = append(src.curs, cursor[M]{x: &s.byCat[c]})
				}
			}
		}
		return
	}
	var kx, x *index[M]
	src.filterKey, src.filterQueue = false, false
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
			x, src.filterKey = &qx.index, true
		default:
			src.filterQueue = true
		}
	}
	src.filterCat = len(q.Categories) > 0
	switch {
	case x == nil:
		src.curs = src.curs[:0]
	case first:
		src.curs = append(src.curs, cursor[M]{x: x})
	case len(src.curs) == 1:
		src.curs[0].x = x
	}
}

// resume notes where each cursor of src stands, calls pause (which lets go
// of s.mu and takes it again), and puts each cursor of q's sources just
// after where it stood.
func (s *Store[M]) resume(q Query, catMask uint64, src *sources[M], pause func()) {
	for j := range src.curs {
		if c := &src.curs[j]; c.i > 0 {
			if p := c.x.recs[c.i-1].pos; p.cmp(c.from) >= 0 {
				c.from, c.after = p, true
			}
		}
	}
	pause()
	s.find(q, catMask, src, false)
	for j := range src.curs {
		c := &src.curs[j]
		c.i = c.x.search(c.from, c.after)
	}
}

// next skips records that fail ok, spending one of *budget on each, and
// returns the head, or nil at the end; ok is false when the budget ran out
// first (the head is not known yet).
func (c *cursor[M]) next(keep func(*record[M]) bool, budget *int) (r *record[M], ok bool) {
	for ; c.i < len(c.x.recs); c.i++ {
		if r := c.x.recs[c.i]; keep(r) {
			return r, true
		}
		if *budget--; *budget <= 0 {
			c.i++
			return nil, false
		}
	}
	return nil, true
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
