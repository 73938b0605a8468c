package dlq

import (
	"testing"

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
