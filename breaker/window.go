package breaker

// window counts calls and failures over the last n buckets of width ns
// each: a call leaves the window when its bucket is reused, so the span
// covered is between (n-1)·width and n·width. Not safe for concurrent use;
// the breaker's mutex guards it.
type window struct {
	width   int64
	buckets []bucket
}

type bucket struct {
	epoch       int64 // time / width of the calls counted here
	calls, fail uint32
}

func newWindow(span int64, n int) window {
	return window{width: span / int64(n), buckets: make([]bucket, n)}
}

// add counts one call at time now (nanoseconds, ≥ 0).
func (w *window) add(now int64, failed bool) {
	if w.buckets == nil {
		return
	}
	e := now / w.width
	b := &w.buckets[e%int64(len(w.buckets))]
	if b.epoch != e {
		*b = bucket{epoch: e}
	}
	b.calls++
	if failed {
		b.fail++
	}
}

// sum returns the calls and failures within the window ending at now.
func (w *window) sum(now int64) (calls, fail int) {
	if w.buckets == nil { // the rate rule is off: nothing is counted
		return 0, 0
	}
	e := now / w.width
	for _, b := range w.buckets {
		if b.epoch > e-int64(len(w.buckets)) && b.epoch <= e {
			calls += int(b.calls)
			fail += int(b.fail)
		}
	}
	return calls, fail
}

func (w *window) reset() { clear(w.buckets) }
