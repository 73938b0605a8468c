package breaker

import (
	"strconv"
	"testing"
)

// BenchmarkBreaker/AllowClosed is the hot path: a known key whose breaker
// is closed, among 1000 keys. AllowDoneClosed adds the result report.
func BenchmarkBreaker(b *testing.B) {
	s := New(Options{})
	for i := range 1000 {
		tk, _ := s.Allow("host-" + strconv.Itoa(i) + ".example.com")
		s.Done(tk, true)
	}
	const key = "host-500.example.com"
	b.Run("AllowClosed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := s.Allow(key); !ok {
				b.Fatal("refused")
			}
		}
	})
	b.Run("AllowClosedParallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, _ = s.Allow(key)
			}
		})
	})
	b.Run("AllowDoneClosed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			tk, _ := s.Allow(key)
			s.Done(tk, true)
		}
	})
}
