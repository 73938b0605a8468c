package ringwaltest_test

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// recorder is a testing.TB that records failures instead of failing the
// test, so that the helpers can be proven to fail when they should.
// Fatalf and FailNow end the goroutine (runtime.Goexit), as testing's do;
// run the code under test with runRecorded. Methods the helpers do not
// use are the embedded nil TB's and panic.
type recorder struct {
	testing.TB
	mu       sync.Mutex
	failures []string
	cleanups []func()
	helpers  int
}

func (r *recorder) Helper() {
	r.mu.Lock()
	r.helpers++
	r.mu.Unlock()
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (r *recorder) FailNow() {
	r.Errorf("FailNow")
	runtime.Goexit()
}

func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.failures) > 0
}

func (r *recorder) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

func (r *recorder) Name() string { return "recorder" }

// runRecorded runs f with a fresh recorder on a goroutine of its own, waits
// for it (it returns or calls Fatalf), runs the recorder's cleanups (last
// first) and returns the recorder. completed says whether f returned.
func runRecorded(f func(tb testing.TB)) (r *recorder, completed bool) {
	r = &recorder{}
	done := make(chan bool)
	go func() {
		ok := false
		defer func() { done <- ok }()
		f(r)
		ok = true
	}()
	completed = <-done
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	return r, completed
}
