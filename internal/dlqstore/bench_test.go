package dlqstore

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/classify"
)

// BenchmarkQuery asks for a 50-entry page of one category inside a time
// window of a 100 000-entry store: the cost should not depend on n.
func BenchmarkQuery(b *testing.B) {
	s := New[string](Options{})
	const n = 100_000
	for id := uint64(1); id <= n; id++ {
		if err := s.Add(entry(id, classify.Categories()[id%8], "", int(id))); err != nil {
			b.Fatal(err)
		}
	}
	q := Query{Categories: []classify.Category{classify.Transient}, Since: at(n / 2), Limit: 50}
	b.ReportAllocs()
	for b.Loop() {
		if got, _ := s.Query(q); len(got) != 50 {
			b.Fatal(len(got))
		}
	}
}

// BenchmarkAddEvict adds a default-queue entry to a 100 000-entry store
// and evicts the oldest, the engine's steady state at its bound: the
// write paths (Add, drop, compact) of an entry without a queue.
func BenchmarkAddEvict(b *testing.B) {
	benchAddEvict(b, "")
}

// BenchmarkAddEvictQueue is BenchmarkAddEvict with every entry in one
// named queue.
func BenchmarkAddEvictQueue(b *testing.B) {
	benchAddEvict(b, "orders")
}

func benchAddEvict(b *testing.B, queue string) {
	s := New[string](Options{})
	const n = 100_000
	e := entry(1, classify.Transient, "", 0)
	e.Queue = queue
	for id := uint64(1); id <= n; id++ {
		e.ID, e.Category, e.DeadAt = id, classify.Categories()[id%8], at(int(id))
		if err := s.Add(e); err != nil {
			b.Fatal(err)
		}
	}
	id := uint64(n)
	b.ReportAllocs()
	for b.Loop() {
		id++
		e.ID, e.Category, e.DeadAt = id, classify.Categories()[id%8], at(int(id))
		if err := s.Add(e); err != nil {
			b.Fatal(err)
		}
		if len(s.Evict(n)) != 1 {
			b.Fatal("evict")
		}
	}
}

// BenchmarkQueryQueue asks for a 50-entry page of one queue of 100 inside
// a time window of a 100 000-entry store: the queue's index is read, so
// the cost should not depend on n nor on the other queues.
func BenchmarkQueryQueue(b *testing.B) {
	s := New[string](Options{})
	const n = 100_000
	for id := uint64(1); id <= n; id++ {
		e := entry(id, classify.Categories()[id%8], "", int(id))
		e.Queue = fmt.Sprint("q", id%100)
		if err := s.Add(e); err != nil {
			b.Fatal(err)
		}
	}
	q := Query{Queue: "q7", Since: at(n / 2), Limit: 50}
	b.ReportAllocs()
	for b.Loop() {
		if got, _ := s.Query(q); len(got) != 50 {
			b.Fatal(len(got))
		}
	}
}

// BenchmarkQueueLen reads one queue's count, as Stats does per queue.
func BenchmarkQueueLen(b *testing.B) {
	s := New[string](Options{})
	for id := uint64(1); id <= 1000; id++ {
		e := entry(id, classify.Transient, "", int(id))
		e.Queue = fmt.Sprint("q", id%10)
		if err := s.Add(e); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if s.QueueLen("q3") != 100 {
			b.Fatal("count")
		}
	}
}

// BenchmarkQueryText: a text search over 300,000 dead letters that finds
// 10 (the worst case: the whole store walked for a page), and one whose
// first page of 50 fills early.
func BenchmarkQueryText(b *testing.B) {
	const n = 300_000
	s := New[string](Options{})
	for i := range n {
		e := entry(uint64(i+1), classify.Transient, fmt.Sprintf("acct-%d", i%5000), i)
		e.Failures[0].Error = "HTTP 503 Service Unavailable from billing"
		if i%30_000 == 0 {
			e.Failures[0].Error = "x509: certificate has expired"
		}
		require.NoError(b, s.Add(e))
	}
	for _, bc := range []struct{ name, text string }{{"rare", "CERTIFICATE"}, {"common-page", "billing"}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				es, err := s.Query(Query{Text: bc.text, Limit: 50})
				if err != nil || len(es) == 0 {
					b.Fatal(err, len(es))
				}
			}
		})
	}
}

// BenchmarkAddWhileSearching: the cost of a dead-lettering (an Add, and the
// Evict that keeps the store at its bound) into a 200,000-entry store
// while two clients search its text without pause (each search walks the
// whole store: it finds nothing). A search that held the read lock for its
// whole walk made each Add wait for one; walking in chunks, an Add waits
// for a chunk at most.
func BenchmarkAddWhileSearching(b *testing.B) {
	const n = 200_000
	s := New[string](Options{})
	for id := uint64(1); id <= n; id++ {
		e := entry(id, classify.Categories()[id%8], fmt.Sprintf("acct-%d", id%5000), int(id))
		e.Failures[0].Error = "HTTP 503 Service Unavailable from billing"
		require.NoError(b, s.Add(e))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.Query(Query{Text: "no such text", Limit: 50}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	id := uint64(n)
	e := entry(1, classify.Transient, "acct-1", 0)
	b.ReportAllocs()
	for b.Loop() {
		id++
		e.ID, e.DeadAt = id, at(int(id))
		if err := s.Add(e); err != nil {
			b.Fatal(err)
		}
		s.Evict(n)
	}
	close(stop)
	wg.Wait()
}
