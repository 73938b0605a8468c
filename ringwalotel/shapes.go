package ringwalotel

import (
	"maps"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/trace"
)

// maxShapes bounds the queues whose span shapes are kept: queue names are
// a program's own and few, and past the bound a shape is built per span
// (correct, a few allocations dearer).
const maxShapes = 256

// shape is what every span of one operation on one queue starts with: its
// name and its start options (kind and the attributes that do not vary
// per message), built once so that starting a span allocates nothing of
// its own for them (and nothing at all on a no-op TracerProvider).
type shape struct {
	name string
	opts []trace.SpanStartOption
}

// shapes is a copy-on-write map from queue name to shape: a span's start
// reads it with one atomic load and no lock, a new queue copies it.
type shapes struct {
	build func(dest string) *shape
	m     atomic.Pointer[map[string]*shape]
	mu    sync.Mutex // serialises copies
}

func newShapes(build func(dest string) *shape) *shapes {
	s := &shapes{build: build}
	m := map[string]*shape{"": build(destination(""))}
	s.m.Store(&m)
	return s
}

// of returns queue q's shape. Safe for concurrent use.
func (s *shapes) of(q string) *shape {
	if sh, ok := (*s.m.Load())[q]; ok {
		return sh
	}
	sh := s.build(destination(q))
	s.mu.Lock()
	defer s.mu.Unlock()
	old := *s.m.Load()
	if had, ok := old[q]; ok {
		return had
	}
	if len(old) >= maxShapes {
		return sh
	}
	m := make(map[string]*shape, len(old)+1)
	maps.Copy(m, old)
	m[q] = sh
	s.m.Store(&m)
	return sh
}
