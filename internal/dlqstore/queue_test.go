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

// queued returns entry(...) from queue q.
func queued(id uint64, cat classify.Category, key, q string, deadSec int) Entry[string] {
	e := entry(id, cat, key, deadSec)
	e.Queue = q
	return e
}

// queueSample stores, in dead-letter order (IDs deliberately not in that
// order):
//
//	sec  id  category   key     queue    reviewed
//	10   5   transient  slack   ""       yes
//	10   6   transient  mail    orders
//	20   1   poison     slack   orders
//	30   9   timeout    slack   mail     yes
//	40   2   transient  ""      orders
//	50   4   poison     mail    ""       yes
//	60   3   transient  slack   mail
func queueSample(t *testing.T) *Store[string] {
	t.Helper()
	s := New[string](Options{})
	rows := []struct {
		id         uint64
		cat        classify.Category
		key, queue string
		sec        int
		reviewed   bool
	}{
		{2, classify.Transient, "", "orders", 40, false},
		{5, classify.Transient, "slack", "", 10, true},
		{1, classify.Poison, "slack", "orders", 20, false},
		{9, classify.Timeout, "slack", "mail", 30, true},
		{6, classify.Transient, "mail", "orders", 10, false},
		{4, classify.Poison, "mail", "", 50, true},
		{3, classify.Transient, "slack", "mail", 60, false},
	}
	for _, r := range rows {
		require.NoError(t, s.Add(queued(r.id, r.cat, r.key, r.queue, r.sec)))
		if r.reviewed {
			require.NoError(t, s.MarkReviewed(r.id, "ok", at(70)))
		}
	}
	return s
}

func TestQueryByQueue(t *testing.T) {
	s := queueSample(t)
	cats := func(cs ...classify.Category) []classify.Category { return cs }
	tests := []struct {
		name string
		q    Query
		want []uint64
	}{
		{"no queue is every queue", Query{}, []uint64{5, 6, 1, 9, 2, 4, 3}},
		{"one queue", Query{Queue: "orders"}, []uint64{6, 1, 2}},
		{"another queue", Query{Queue: "mail"}, []uint64{9, 3}},
		{"unknown queue", Query{Queue: "nope"}, []uint64{}},
		{"queue smaller than key", Query{Queue: "orders", Key: "slack"}, []uint64{1}},
		{"queue smaller than key, several", Query{Queue: "mail", Key: "slack"}, []uint64{9, 3}},
		{"key smaller than queue", Query{Queue: "orders", Key: "mail"}, []uint64{6}},
		{"key of another queue", Query{Queue: "mail", Key: "mail"}, []uint64{}},
		{"unknown key in a queue", Query{Queue: "orders", Key: "nope"}, []uint64{}},
		{"key in an unknown queue", Query{Queue: "nope", Key: "slack"}, []uint64{}},
		{"queue and category", Query{Queue: "orders", Categories: cats(classify.Transient)}, []uint64{6, 2}},
		{"queue and categories", Query{Queue: "mail", Categories: cats(classify.Timeout, classify.Poison)}, []uint64{9}},
		{"queue, key and category", Query{Queue: "orders", Key: "slack", Categories: cats(classify.Transient)}, []uint64{}},
		{"queue and review", Query{Queue: "mail", Reviewed: OnlyReviewed}, []uint64{9}},
		{"queue and window", Query{Queue: "orders", Since: at(20), Until: at(50)}, []uint64{1, 2}},
		{"queue and limit", Query{Queue: "orders", Limit: 2}, []uint64{6, 1}},
		{"queue after a cursor in it", Query{Queue: "orders", After: 6, Limit: 1}, []uint64{1}},
		{"queue after a cursor in another queue", Query{Queue: "orders", After: 9}, []uint64{2}},
		{"queue after a cursor of the default queue", Query{Queue: "mail", After: 5, Limit: 5}, []uint64{9, 3}},
		{"queue after its last", Query{Queue: "orders", After: 2}, []uint64{}},
		{"queue and key after a cursor", Query{Queue: "mail", Key: "slack", After: 9}, []uint64{3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Query(tt.q)
			require.NoError(t, err)
			assert.Equal(t, tt.want, ids(got))
			n, _, err := s.CountQuery(tt.q)
			require.NoError(t, err)
			assert.Equal(t, len(tt.want), n, "CountQuery counts what Query returns")
		})
	}
}

func TestEntryKeepsItsQueue(t *testing.T) {
	s := queueSample(t)
	got, ok := s.Get(1)
	require.True(t, ok)
	assert.Equal(t, "orders", got.Queue)
	got, _ = s.Get(5)
	assert.Equal(t, "", got.Queue, "the default queue")
	removed, ok := s.Remove(9)
	require.True(t, ok)
	assert.Equal(t, "mail", removed.Queue, "a redrive finds its queue")
}

func TestPagingByQueueCoversEverythingOnce(t *testing.T) {
	s := New[string](Options{})
	for i := 1; i <= 60; i++ {
		// Out-of-order IDs, ties on DeadAt, three queues and the default.
		id := uint64(61 - i)
		q := []string{"", "a", "b", "c"}[i%4]
		require.NoError(t, s.Add(queued(id, classify.Categories()[i%8], []string{"", "k", "j"}[i%3], q, i/3)))
	}
	for _, q := range []Query{{Queue: "a"}, {Queue: "b", Key: "k"}, {Queue: "c", Reviewed: OnlyUnreviewed}} {
		all, err := s.Query(q)
		require.NoError(t, err)
		require.NotEmpty(t, all)
		for limit := 1; limit <= len(all)+1; limit++ {
			var got []uint64
			page := q
			page.Limit = limit
			for {
				es, err := s.Query(page)
				require.NoError(t, err)
				got = append(got, ids(es)...)
				if len(es) < limit {
					break
				}
				page.After = es[len(es)-1].ID
			}
			assert.Equal(t, ids(all), got, "%+v by %d", q, limit)
		}
	}
}

func TestPurgeByQueue(t *testing.T) {
	s := queueSample(t)
	got, err := s.Purge(Query{Queue: "orders", Key: "slack"})
	require.NoError(t, err)
	assert.Equal(t, []uint64{1}, ids(got))
	got, err = s.Purge(Query{Queue: "orders"})
	require.NoError(t, err)
	assert.Equal(t, []uint64{6, 2}, ids(got))
	rest, _ := s.Query(Query{})
	assert.Equal(t, []uint64{5, 9, 4, 3}, ids(rest), "the other queues keep theirs")
	assert.Zero(t, s.QueueLen("orders"))
	assert.Equal(t, map[string]int{"": 2, "mail": 2}, s.QueueCounts())
	assert.Equal(t, map[string]int{"slack": 3, "mail": 1}, s.KeyCounts())

	require.NoError(t, s.Add(queued(6, classify.Poison, "", "orders", 5)), "an emptied queue takes entries again")
	got, _ = s.Query(Query{Queue: "orders"})
	assert.Equal(t, []uint64{6}, ids(got))
	assert.Equal(t, 1, s.QueueLen("orders"))
}

func TestPurgeByQueueThroughAMarkSparesEntriesAddedAfterIt(t *testing.T) {
	s := queueSample(t)
	n, mark, err := s.CountQuery(Query{Queue: "mail"})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	// Added between the count and the purge, even with an older DeadAt.
	require.NoError(t, s.Add(queued(20, classify.Timeout, "slack", "mail", 0)))
	n2, _, err := s.CountQuery(Query{Queue: "mail", Through: mark})
	require.NoError(t, err)
	assert.Equal(t, n, n2, "a count through the mark leaves the new entry out")

	gone, err := s.Purge(Query{Queue: "mail", Through: mark})
	require.NoError(t, err)
	assert.Equal(t, []uint64{9, 3}, ids(gone))
	left, _ := s.Query(Query{Queue: "mail"})
	assert.Equal(t, []uint64{20}, ids(left), "the entry added after the count survives")
	assert.Equal(t, 1, s.QueueLen("mail"))
}

// checkQueueCounts compares QueueLen and QueueCounts with what Query
// returns.
func checkQueueCounts(t *testing.T, s *Store[string]) {
	t.Helper()
	all, err := s.Query(Query{})
	require.NoError(t, err)
	want := map[string]int{}
	for _, e := range all {
		want[e.Queue]++
	}
	assert.Equal(t, want, s.QueueCounts())
	for _, q := range []string{"", "orders", "mail", "nope"} {
		assert.Equal(t, want[q], s.QueueLen(q), "QueueLen(%q)", q)
	}
}

func TestQueueCountsFollowEveryRemoval(t *testing.T) {
	day := 24 * time.Hour
	tests := []struct {
		name   string
		remove func(*Store[string]) []uint64
		want   []uint64 // the IDs removed
	}{
		{"remove", func(s *Store[string]) []uint64 {
			e, _ := s.Remove(1)
			return []uint64{e.ID}
		}, []uint64{1}},
		{"purge by key", func(s *Store[string]) []uint64 {
			got, _ := s.Purge(Query{Key: "slack"})
			return ids(got)
		}, []uint64{5, 1, 9, 3}},
		{"purge everything", func(s *Store[string]) []uint64 {
			got, _ := s.Purge(Query{})
			return ids(got)
		}, []uint64{5, 6, 1, 9, 2, 4, 3}},
		{"sweep of reviewed", func(s *Store[string]) []uint64 {
			return s.Sweep(at(0).Add(DefaultRetention + day))
		}, []uint64{5, 9, 4}},
		{"evict", func(s *Store[string]) []uint64 { return ids(s.Evict(2)) }, []uint64{5, 9, 4, 6, 1}},
		{"evict all", func(s *Store[string]) []uint64 { return ids(s.Evict(0)) }, []uint64{5, 9, 4, 6, 1, 2, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := queueSample(t)
			assert.Equal(t, map[string]int{"": 2, "orders": 3, "mail": 2}, s.QueueCounts())
			checkQueueCounts(t, s)
			assert.ElementsMatch(t, tt.want, tt.remove(s))
			checkQueueCounts(t, s)
			// Add the removed ones back: the counts rise again, emptied
			// queues included.
			for _, id := range tt.want {
				require.NoError(t, s.Add(queued(id, classify.Transient, "", []string{"", "orders", "mail"}[id%3], int(id))))
			}
			checkQueueCounts(t, s)
		})
	}
}

func TestQueueLenDoesNotAllocate(t *testing.T) {
	s := queueSample(t)
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		_ = s.QueueLen("orders") + s.QueueLen("") + s.QueueLen("nope")
	}))
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		if n, _, _ := s.CountQuery(Query{Queue: "orders"}); n != 3 {
			t.Fatal("count")
		}
	}))
}

// The queue counts are read while a writer holds the lock (a
// dead-lettering under way), as Len and Counts are.
func TestQueueCountsDoNotWaitForTheLock(t *testing.T) {
	s := queueSample(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	type got struct {
		orders, def int
		counts      map[string]int
	}
	done := make(chan got, 1)
	go func() { done <- got{s.QueueLen("orders"), s.QueueLen(""), s.QueueCounts()} }()
	select {
	case g := <-done:
		assert.Equal(t, got{3, 2, map[string]int{"": 2, "orders": 3, "mail": 2}}, g)
	case <-time.After(10 * time.Second):
		t.Fatal("QueueLen or QueueCounts waited for the store's lock")
	}
}

// A store holding many queues forgets each one once it is emptied, and a
// query for one queue reads that queue's entries only.
func TestQueuesAreForgottenOnceEmpty(t *testing.T) {
	s := New[string](Options{})
	for i := 1; i <= 1000; i++ {
		require.NoError(t, s.Add(queued(uint64(i), classify.Transient, "", fmt.Sprint("q", i%100), i)))
	}
	assert.Len(t, s.QueueCounts(), 100)
	got, err := s.Query(Query{Queue: "q7", Limit: 3})
	require.NoError(t, err)
	assert.Equal(t, []uint64{7, 107, 207}, ids(got))
	for i := 1; i <= 1000; i++ {
		s.Remove(uint64(i))
	}
	assert.Empty(t, s.QueueCounts())
	assert.Empty(t, s.byQueue, "an emptied queue's index goes")
	n := 0
	s.queueLens.Range(func(any, any) bool { n++; return true })
	assert.Zero(t, n, "and its counter")
}

// Writers add to and empty queues (their indexes and counters come and go)
// while readers read the counts without the lock; at the end the counts
// are exact.
func TestQueueCountsUnderConcurrentWrites(t *testing.T) {
	s := New[string](Options{})
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				for q, n := range s.QueueCounts() {
					if n <= 0 {
						t.Errorf("QueueCounts lists %q with %d", q, n)
						return
					}
				}
				if n := s.QueueLen("q1"); n < 0 || n > 400 {
					t.Errorf("QueueLen(q1) %d", n)
					return
				}
			}
		}()
	}
	var writers sync.WaitGroup
	for w := range 4 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			// Even i (the default queue and q2) are removed at once,
			// each writer's own queue is purged every 50, and q1
			// keeps its 100 per writer.
			for i := range 400 {
				id := uint64(w*1000 + i + 1)
				q := []string{"", "q1", "q2", fmt.Sprint("w", w)}[i%4]
				if err := s.Add(queued(id, classify.Transient, "", q, i)); err != nil {
					t.Error(err)
					return
				}
				if i%2 == 0 {
					s.Remove(id)
				}
				if i%50 == 49 {
					_, _ = s.Purge(Query{Queue: fmt.Sprint("w", w)})
				}
			}
		}()
	}
	writers.Wait()
	close(stop)
	readers.Wait()
	checkQueueCounts(t, s)
	assert.Equal(t, map[string]int{"q1": 400}, s.QueueCounts())
	assert.Zero(t, s.QueueLen("w0"))
}
