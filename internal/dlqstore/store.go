package dlqstore

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
)

// AppendFailure appends f to fs and keeps only the last max failures
// (max ≤ 0 means DefaultMaxFailures), dropping the oldest, so a message
// retried many times carries a bounded history that always ends with its
// latest failure. It may reuse fs's array.
func AppendFailure(fs []Failure, f Failure, max int) []Failure {
	if max <= 0 {
		max = DefaultMaxFailures
	}
	fs = append(fs, f)
	if n := len(fs) - max; n > 0 {
		fs = append(fs[:0], fs[n:]...)
	}
	return fs
}

// Defaults for the zero Options.
const (
	DefaultRetention    = 90 * 24 * time.Hour
	DefaultMaxFailures  = dlq.DefaultMaxFailures
	DefaultCursorMemory = 4096
)

// Options configures a Store. The zero value is the defaults.
type Options struct {
	// Retention is how long a reviewed entry is kept after its DeadAt
	// before Sweep removes it. 0 means DefaultRetention (90 days, the
	// seed design's); negative means keep reviewed entries forever.
	Retention time.Duration
	// UnreviewedRetention, if positive, lets Sweep remove unreviewed
	// entries this long after their DeadAt as well. 0 (the default) keeps
	// them until an operator has seen them.
	UnreviewedRetention time.Duration
	// MaxFailures is how many failures Add keeps per entry, the latest
	// ones. 0 or less means DefaultMaxFailures (10).
	MaxFailures int
	// CursorMemory is how many removed entries' positions the store
	// remembers so that paging with Query.After survives a redrive or
	// purge of the cursor entry. 0 means DefaultCursorMemory; negative
	// means none (a removed cursor is then an error).
	CursorMemory int
}

// withDefaults is the one place zero Options become defaults.
func (o Options) withDefaults() Options {
	if o.Retention == 0 {
		o.Retention = DefaultRetention
	}
	if o.UnreviewedRetention < 0 {
		o.UnreviewedRetention = 0
	}
	if o.MaxFailures <= 0 {
		o.MaxFailures = DefaultMaxFailures
	}
	if o.CursorMemory == 0 {
		o.CursorMemory = DefaultCursorMemory
	}
	return o
}

// Store holds dead letters of message type M. Create it with New. All
// methods are safe for concurrent use but SearchMessages, which is set
// before the store is shared.
//
// Entries are indexed per category, per key and per named queue, each
// index sorted by (DeadAt, ID). With n stored entries and k returned: Add
// is O(log n) (O(n) worst case if DeadAt goes backwards), Get O(1), Remove
// and MarkReviewed O(1) amortised, Query O(c·log n + k + s) where c is the
// number of categories asked for (one index when Key or Queue is set, the
// smaller of the two when both are) and s the entries skipped inside the
// time window (other categories, keys or queues in a Key or Queue query,
// the other review state, removed entries not yet compacted), Count, Len
// and QueueLen O(1), Evict O(log n) amortised per entry it removes,
// CountQuery O(c) from the kept counts when it filters by categories, one
// key or one queue only.
type Store[M any] struct {
	opt Options
	// textIn, if set (SearchMessages), reports whether a Query.Text
	// needle (lower-cased) occurs in an entry's message.
	textIn func(m *M, needle string) bool
	// searchChunk, if positive, replaces defaultSearchChunk: how many
	// entries a text search reads under one hold of the read lock. Tests
	// set it small.
	searchChunk int
	// betweenChunks, if set (tests), is called by a text search between
	// two chunks, with the lock let go.
	betweenChunks func()

	mu    sync.RWMutex
	byID  map[uint64]*record[M]
	byCat []index[M]           // indexed by classify.Category
	byKey map[string]*index[M] // entries with a non-empty Key
	// byQueue indexes the entries of named queues (a non-empty Queue), so
	// that a query for one queue of many reads only that queue's entries;
	// the default queue has no index: Query.Queue "" matches every queue.
	byQueue map[string]*queueIndex[M]
	ghosts  ghosts
	// reviewed holds the reviewed entries by dead-letter order, for Evict.
	reviewed reviewedHeap[M]
	// seq numbers Adds: CountQuery's mark is its value then, and
	// Query.Through bounds by it.
	seq uint64
	// n and perCat mirror len(byID) and each category's live entries,
	// changed under mu by Add and drop and read without it (Len, Count,
	// Counts), so that a monitoring read of the counts never waits for a
	// writer nor makes one wait: the engine reads them while dead-letterings
	// are under way, and a reader parked on mu is woken by the
	// dead-lettering's unlock, onto its processor.
	n      atomic.Int64
	perCat []atomic.Int64 // indexed by classify.Category
	// defaultQueue and queueLens count the default queue's entries and
	// each named queue's, kept like n for QueueLen and QueueCounts.
	// queueLens maps a name to its byQueue entry's n and holds exactly
	// byQueue's names: both are changed together under mu, a name deleted
	// once its count is 0 (so the map does not grow with every queue that
	// ever dead-lettered), and a reader that loaded the counter just before
	// reads that 0.
	defaultQueue atomic.Int64
	queueLens    sync.Map // string -> *atomic.Int64
	// nReviewed counts the reviewed entries, kept like n for Reviewed.
	nReviewed atomic.Int64
	// reads counts the records walks have read (Reads).
	reads atomic.Uint64
}

// New returns an empty Store.
func New[M any](o Options) *Store[M] {
	o = o.withDefaults()
	return &Store[M]{
		opt:     o,
		byID:    make(map[uint64]*record[M]),
		byCat:   make([]index[M], len(classify.Categories())),
		perCat:  make([]atomic.Int64, len(classify.Categories())),
		byKey:   make(map[string]*index[M]),
		byQueue: make(map[string]*queueIndex[M]),
		ghosts:  newGhosts(o.CursorMemory),
	}
}

// SearchMessages makes Query.Text search the entries' messages with f
// too (the engine: their headers), besides the key, the queue and the
// failures' errors. Call it before the store is shared.
func (s *Store[M]) SearchMessages(f func(m *M, needle string) bool) { s.textIn = f }

// Add stores e. It fails with ErrDuplicate if e.ID is stored already, and
// with ErrInvalid if e.ID is 0, e.Category is undeclared or e.DeadAt is
// zero. Add keeps its own copy of e.Failures, trimmed to the last
// Options.MaxFailures, and strips monotonic clock readings from the times
// so that order is by wall clock, the only clock that survives a restart.
func (s *Store[M]) Add(e Entry[M]) error {
	switch {
	case e.ID == 0:
		return fmt.Errorf("add: ID 0: %w", ErrInvalid)
	case !e.Category.Valid() || int(e.Category) >= len(s.byCat):
		return fmt.Errorf("add %d: %s: %w", e.ID, e.Category, ErrInvalid)
	case e.DeadAt.IsZero():
		return fmt.Errorf("add %d: zero DeadAt: %w", e.ID, ErrInvalid)
	}
	e.DeadAt = e.DeadAt.Round(0)
	e.FirstFailedAt = e.FirstFailedAt.Round(0)
	e.ReviewedAt = e.ReviewedAt.Round(0)
	if n := len(e.Failures) - s.opt.MaxFailures; n > 0 {
		e.Failures = e.Failures[n:]
	}
	e.Failures = slices.Clone(e.Failures)
	r := &record[M]{e: e, pos: pos{at: e.DeadAt, id: e.ID}}

	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.byID[e.ID]; dup {
		return fmt.Errorf("add %d: %w", e.ID, ErrDuplicate)
	}
	s.seq++
	r.seq = s.seq
	s.byID[e.ID] = r
	s.byCat[e.Category].insert(r)
	s.n.Add(1)
	s.perCat[e.Category].Add(1)
	if e.Reviewed {
		s.nReviewed.Add(1)
		s.reviewed.push(r)
	}
	if e.Key != "" {
		x := s.byKey[e.Key]
		if x == nil {
			x = &index[M]{}
			s.byKey[e.Key] = x
		}
		x.insert(r)
	}
	if e.Queue == "" {
		s.defaultQueue.Add(1)
	} else {
		x := s.byQueue[e.Queue]
		if x == nil {
			x = &queueIndex[M]{}
			s.byQueue[e.Queue] = x
			s.queueLens.Store(e.Queue, &x.n)
		}
		x.insert(r)
		x.n.Add(1)
	}
	return nil
}

// Get returns a copy of the entry with that ID: O(1) (a map lookup) plus
// the copy of its Failures, under the read lock.
func (s *Store[M]) Get(id ID) (Entry[M], bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.byID[id]
	if !ok {
		return Entry[M]{}, false
	}
	return clone(r.e), true
}

// MarkReviewed records that an operator has looked at the entry: Reviewed
// becomes true, Note and ReviewedAt are replaced. Reviewing again replaces
// the note. An unknown ID fails with ErrNotFound.
func (s *Store[M]) MarkReviewed(id ID, note string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.byID[id]
	if !ok {
		return fmt.Errorf("mark reviewed %d: %w", id, ErrNotFound)
	}
	if !r.e.Reviewed {
		s.nReviewed.Add(1)
		s.reviewed.push(r)
	}
	r.e.Reviewed, r.e.Note, r.e.ReviewedAt = true, note, at.Round(0)
	return nil
}

// Remove deletes the entry with that ID and returns it, for a redrive.
func (s *Store[M]) Remove(id ID) (Entry[M], bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.byID[id]
	if !ok {
		return Entry[M]{}, false
	}
	s.drop(r)
	s.compact(r)
	return r.e, true
}

// Count returns the number of entries of category c. O(1) and without the
// lock (it neither waits for a write nor delays one); it does not
// allocate. A removal of many entries under way (Sweep, Purge, Evict) may
// be seen part-done.
func (s *Store[M]) Count(c classify.Category) int {
	if int(c) >= len(s.perCat) {
		return 0
	}
	return int(s.perCat[c].Load())
}

// Counts returns the number of entries per category, with every declared
// category present (zero included), so a metrics scrape can reset gauges.
// Without the lock, as Count: each category's count is one a write left
// (a removal of many entries under way may be seen part-done), and their
// sum is what Len returns when no write is under way.
func (s *Store[M]) Counts() map[classify.Category]int {
	m := make(map[classify.Category]int, len(s.perCat))
	for c := range s.perCat {
		m[classify.Category(c)] = int(s.perCat[c].Load())
	}
	return m
}

// Len returns the number of entries. O(1) and without the lock, as Count.
func (s *Store[M]) Len() int {
	return int(s.n.Load())
}

// Reviewed returns the number of reviewed entries (Len less it is the
// unreviewed ones). O(1) and without the lock, as Count.
func (s *Store[M]) Reviewed() int {
	return int(s.nReviewed.Load())
}

// QueueLen returns the number of entries of that queue ("" is the default
// queue here, not every queue: Len counts those). O(1) and without the
// lock, as Count; it does not allocate.
func (s *Store[M]) QueueLen(queue string) int {
	if queue == "" {
		return int(s.defaultQueue.Load())
	}
	if n, ok := s.queueLens.Load(queue); ok {
		return int(n.(*atomic.Int64).Load())
	}
	return 0
}

// QueueCounts returns the number of entries per queue, for every queue
// that has some (the default queue under ""). Without the lock, as Counts:
// each queue's count is one a write left, and a removal of many entries
// under way may be seen part-done. O(q) for q queues with entries.
func (s *Store[M]) QueueCounts() map[string]int {
	m := make(map[string]int)
	if n := s.defaultQueue.Load(); n > 0 {
		m[""] = int(n)
	}
	s.queueLens.Range(func(name, n any) bool {
		if v := n.(*atomic.Int64).Load(); v > 0 {
			m[name.(string)] = int(v)
		}
		return true
	})
	return m
}

// KeyCounts returns the number of entries per key, for every key that has
// some (entries without a key are not listed). O(k) for k such keys, under
// the read lock: it copies counts, never entries.
func (s *Store[M]) KeyCounts() map[string]int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m := make(map[string]int, len(s.byKey))
	for k, x := range s.byKey {
		m[k] = x.live()
	}
	return m
}

// Sweep applies retention at time now and returns the IDs it removed (the
// engine logs each): reviewed entries whose DeadAt is more than
// Options.Retention before now and, if Options.UnreviewedRetention is set,
// unreviewed ones more than that before now. It scans each category's
// entries older than the larger cutoff, so its cost is the number of old
// entries kept, not the store's size.
func (s *Store[M]) Sweep(now time.Time) []ID {
	var reviewedCut, unreviewedCut time.Time // zero: nothing qualifies
	if s.opt.Retention > 0 {
		reviewedCut = now.Add(-s.opt.Retention)
	}
	if s.opt.UnreviewedRetention > 0 {
		unreviewedCut = now.Add(-s.opt.UnreviewedRetention)
	}
	scanTo := reviewedCut
	if unreviewedCut.After(scanTo) {
		scanTo = unreviewedCut
	}
	if scanTo.IsZero() {
		return nil
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	var removed []*record[M]
	for c := range s.byCat {
		for _, r := range s.byCat[c].recs {
			if !r.pos.at.Before(scanTo) {
				break
			}
			cut := unreviewedCut
			if r.e.Reviewed {
				cut = reviewedCut
			}
			if !r.gone && r.pos.at.Before(cut) {
				removed = append(removed, r)
			}
		}
	}
	s.removeAll(removed)
	ids := make([]uint64, len(removed))
	for i, r := range removed {
		ids[i] = r.e.ID
	}
	return ids
}

// removeAll drops every record of recs, then compacts their indexes (each
// index once its tombstones are all in). s.mu must be held.
func (s *Store[M]) removeAll(recs []*record[M]) {
	for _, r := range recs {
		s.drop(r)
	}
	for _, r := range recs {
		s.compact(r)
	}
}

// drop unlinks r: out of byID, a tombstone in its indexes, remembered as a
// cursor ghost. s.mu must be held; call compact afterwards.
func (s *Store[M]) drop(r *record[M]) {
	r.gone = true
	delete(s.byID, r.e.ID)
	s.byCat[r.e.Category].gone++
	s.n.Add(-1)
	s.perCat[r.e.Category].Add(-1)
	if r.e.Key != "" {
		s.byKey[r.e.Key].gone++
	}
	if r.e.Queue == "" {
		s.defaultQueue.Add(-1)
	} else {
		x := s.byQueue[r.e.Queue]
		x.gone++
		x.n.Add(-1)
	}
	if r.e.Reviewed {
		s.nReviewed.Add(-1)
		s.reviewed.gone++
	}
	s.ghosts.add(r.pos)
}

// compact compacts the indexes r was in, and forgets an emptied key or
// queue so that the maps do not grow with every key or queue ever seen.
// s.mu must be held.
func (s *Store[M]) compact(r *record[M]) {
	s.byCat[r.e.Category].compact()
	if r.e.Reviewed {
		s.reviewed.compact()
	}
	if r.e.Key != "" {
		if x := s.byKey[r.e.Key]; x != nil {
			if x.live() == 0 {
				delete(s.byKey, r.e.Key)
			} else {
				x.compact()
			}
		}
	}
	if r.e.Queue != "" {
		if x := s.byQueue[r.e.Queue]; x != nil {
			if x.live() == 0 {
				delete(s.byQueue, r.e.Queue)
				s.queueLens.Delete(r.e.Queue)
			} else {
				x.compact()
			}
		}
	}
}

// clone copies e with its own Failures, so a caller cannot change the
// store's history through a returned entry.
func clone[M any](e Entry[M]) Entry[M] {
	e.Failures = slices.Clone(e.Failures)
	return e
}
