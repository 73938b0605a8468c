package dlqstore

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/classify"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// at returns t0 plus s seconds.
func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func entry(id uint64, cat classify.Category, key string, deadSec int) Entry[string] {
	return Entry[string]{
		ID: id, Category: cat, Key: key, Message: fmt.Sprintf("msg-%d", id), Attempts: 3,
		Failures:      []Failure{{At: at(deadSec), Category: cat, Error: "boom"}},
		FirstFailedAt: at(deadSec - 10), DeadAt: at(deadSec),
	}
}

func TestAddValidation(t *testing.T) {
	s := New[string](Options{})
	require.NoError(t, s.Add(entry(1, classify.Transient, "k", 5)))

	tests := []struct {
		name string
		e    Entry[string]
		want error
	}{
		{"duplicate ID", entry(1, classify.Poison, "", 9), ErrDuplicate},
		{"ID 0", entry(0, classify.Poison, "", 9), ErrInvalid},
		{"undeclared category", entry(2, classify.Category(99), "", 9), ErrInvalid},
		{"zero DeadAt", Entry[string]{ID: 3, Category: classify.Timeout}, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.ErrorIs(t, s.Add(tt.e), tt.want)
		})
	}
	assert.Equal(t, 1, s.Len(), "failed adds store nothing")
}

func TestGetRemoveReview(t *testing.T) {
	s := New[string](Options{})
	e := entry(7, classify.RateLimited, "slack", 10)
	require.NoError(t, s.Add(e))

	got, ok := s.Get(7)
	require.True(t, ok)
	assert.Equal(t, e, got)
	_, ok = s.Get(8)
	assert.False(t, ok)

	require.NoError(t, s.MarkReviewed(7, "upstream quota; retry Monday", at(20)))
	got, _ = s.Get(7)
	assert.True(t, got.Reviewed)
	assert.Equal(t, "upstream quota; retry Monday", got.Note)
	assert.Equal(t, at(20), got.ReviewedAt)
	require.NoError(t, s.MarkReviewed(7, "second look", at(30)))
	got, _ = s.Get(7)
	assert.Equal(t, "second look", got.Note, "reviewing again replaces the note")

	assert.ErrorIs(t, s.MarkReviewed(8, "", at(0)), ErrNotFound)

	removed, ok := s.Remove(7)
	require.True(t, ok)
	assert.Equal(t, uint64(7), removed.ID)
	assert.Equal(t, "second look", removed.Note)
	_, ok = s.Remove(7)
	assert.False(t, ok)
	assert.Zero(t, s.Len())
	assert.ErrorIs(t, s.MarkReviewed(7, "", at(0)), ErrNotFound)
	require.NoError(t, s.Add(e), "a removed ID may be added again (redriven, died again)")
}

func TestCounts(t *testing.T) {
	s := New[string](Options{})
	for i, c := range []classify.Category{classify.Transient, classify.Transient, classify.Poison, classify.Expired} {
		require.NoError(t, s.Add(entry(uint64(i+1), c, "", i)))
	}
	_, _ = s.Remove(4)
	counts := s.Counts()
	assert.Len(t, counts, len(classify.Categories()), "every category is present")
	assert.Equal(t, 2, counts[classify.Transient])
	assert.Equal(t, 1, counts[classify.Poison])
	assert.Equal(t, 0, counts[classify.Expired])
	assert.Equal(t, 2, s.Count(classify.Transient))
	assert.Equal(t, 0, s.Count(classify.Category(99)))
	assert.Equal(t, 3, s.Len())
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = s.Count(classify.Transient) }))
}

// The counts are read while a writer holds the lock (a dead-lettering
// under way): a monitoring read must neither wait for it nor delay it.
func TestCountsDoNotWaitForTheLock(t *testing.T) {
	s := New[string](Options{})
	require.NoError(t, s.Add(entry(1, classify.Poison, "k", 1)))
	s.mu.Lock()
	defer s.mu.Unlock()
	done := make(chan [3]int, 1)
	go func() { done <- [3]int{s.Len(), s.Count(classify.Poison), s.Counts()[classify.Poison]} }()
	select {
	case got := <-done:
		assert.Equal(t, [3]int{1, 1, 1}, got)
	case <-time.After(10 * time.Second):
		t.Fatal("Len, Count or Counts waited for the store's lock")
	}
}

func TestFailuresKeptAndIsolated(t *testing.T) {
	s := New[string](Options{MaxFailures: 3})
	e := entry(1, classify.Transient, "", 100)
	e.Failures = nil
	for i := range 5 {
		e.Failures = append(e.Failures, Failure{At: at(i), Error: fmt.Sprint("try ", i)})
	}
	require.NoError(t, s.Add(e))
	e.Failures[4].Error = "changed by the caller after Add"

	got, _ := s.Get(1)
	require.Len(t, got.Failures, 3, "the last MaxFailures are kept")
	assert.Equal(t, "try 2", got.Failures[0].Error)
	assert.Equal(t, "try 4", got.Failures[2].Error, "the last failure is always kept")
	got.Failures[0].Error = "changed through Get"
	again, _ := s.Get(1)
	assert.Equal(t, "try 2", again.Failures[0].Error)
}

func TestAppendFailure(t *testing.T) {
	var fs []Failure
	for i := range 25 {
		fs = AppendFailure(fs, Failure{Error: fmt.Sprint(i)}, 0)
	}
	require.Len(t, fs, DefaultMaxFailures)
	assert.Equal(t, "15", fs[0].Error)
	assert.Equal(t, "24", fs[len(fs)-1].Error)
	fs = AppendFailure(fs, Failure{Error: "last"}, 1)
	assert.Equal(t, []Failure{{Error: "last"}}, fs)
}

func TestMonotonicStripped(t *testing.T) {
	s := New[string](Options{})
	now := time.Now() // carries a monotonic reading
	e := entry(1, classify.Timeout, "", 0)
	e.DeadAt = now
	require.NoError(t, s.Add(e))
	got, _ := s.Get(1)
	assert.Equal(t, now.Round(0), got.DeadAt)
	res, err := s.Query(Query{Since: now, Until: now.Add(time.Nanosecond)})
	require.NoError(t, err)
	assert.Len(t, res, 1)
}

func TestSweep(t *testing.T) {
	day := 24 * time.Hour
	tests := []struct {
		name string
		opt  Options
		now  time.Time
		want []uint64
	}{
		// IDs 1 (reviewed) and 2 (unreviewed) died at t0; 3 (reviewed) at t0+50d.
		{"default 90 days: not yet", Options{}, t0.Add(90 * day), nil},
		{"default 90 days: reviewed and older", Options{}, t0.Add(90*day + time.Nanosecond), []uint64{1}},
		{"later: the newer reviewed one too", Options{}, t0.Add(141 * day), []uint64{1, 3}},
		{"custom retention", Options{Retention: day}, t0.Add(2 * day), []uint64{1}},
		{"negative retention keeps all", Options{Retention: -1}, t0.Add(1000 * day), nil},
		{"unreviewed retention", Options{Retention: -1, UnreviewedRetention: 10 * day}, t0.Add(11 * day), []uint64{2}},
		{"both", Options{Retention: day, UnreviewedRetention: 10 * day}, t0.Add(60 * day), []uint64{1, 2, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New[string](tt.opt)
			e1, e2 := entry(1, classify.Transient, "", 0), entry(2, classify.Poison, "k", 0)
			e3 := entry(3, classify.Transient, "k", 50*86400)
			for _, e := range []Entry[string]{e1, e2, e3} {
				require.NoError(t, s.Add(e))
			}
			require.NoError(t, s.MarkReviewed(1, "", t0))
			require.NoError(t, s.MarkReviewed(3, "", t0))
			got := s.Sweep(tt.now)
			assert.ElementsMatch(t, tt.want, got)
			assert.Equal(t, 3-len(tt.want), s.Len())
			for _, id := range tt.want {
				_, ok := s.Get(id)
				assert.False(t, ok)
			}
		})
	}
}

func TestConcurrentUse(t *testing.T) {
	s := New[string](Options{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				id := uint64(w*1000 + i + 1)
				cat := classify.Categories()[i%8]
				if err := s.Add(entry(id, cat, fmt.Sprint("k", i%3), i)); err != nil {
					t.Error(err)
					return
				}
				if i%3 == 0 {
					_ = s.MarkReviewed(id, "seen", at(i))
				}
				if i%5 == 0 {
					s.Remove(id)
				}
				if _, err := s.Query(Query{Key: "k1", Limit: 10}); err != nil {
					t.Error(err)
					return
				}
				_ = s.Count(cat)
				if i%100 == 0 {
					s.Sweep(at(i))
				}
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 4*400, s.Len())
}

func TestReviewedCountFollowsEveryWayIn(t *testing.T) {
	s := New[string](Options{})
	for id := uint64(1); id <= 6; id++ {
		e := entry(id, classify.Transient, "k", int(id))
		e.Reviewed = id == 6 // replayed as reviewed
		require.NoError(t, s.Add(e))
	}
	assert.Equal(t, 1, s.Reviewed())
	when := time.Unix(100, 0)
	require.NoError(t, s.MarkReviewed(1, "a", when))
	require.NoError(t, s.MarkReviewed(1, "b", when)) // a re-review is still one
	require.NoError(t, s.MarkReviewed(2, "a", when))
	assert.Equal(t, 3, s.Reviewed())
	_, ok := s.Remove(2) // a reviewed one redriven
	require.True(t, ok)
	_, ok = s.Remove(3) // an unreviewed one
	require.True(t, ok)
	assert.Equal(t, 2, s.Reviewed())
	gone, err := s.Purge(Query{Reviewed: OnlyReviewed})
	require.NoError(t, err)
	assert.Len(t, gone, 2)
	assert.Zero(t, s.Reviewed())
	require.NoError(t, s.MarkReviewed(4, "a", when))
	assert.Len(t, s.Evict(1), 1, "the reviewed one is evicted first")
	assert.Zero(t, s.Reviewed())
	assert.Equal(t, 1, s.Len())
}
