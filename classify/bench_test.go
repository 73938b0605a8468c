package classify

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"
)

// BenchmarkClassify/Default classifies a mix of the errors a handler
// typically returns, all matched structurally. Text shows the fallback's
// cost on an error that matches nothing but its text.
func BenchmarkClassify(b *testing.B) {
	errs := []error{
		fmt.Errorf("send: %w", &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}),
		fmt.Errorf("query: %w", context.DeadlineExceeded),
		Mark(errors.New("bad payload"), Permanent),
		&httpError{code: 503},
		errors.Join(errors.New("a"), &os.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}),
		After(&httpError{code: 500}, time.Second),
	}
	c := Default()
	b.Run("Default", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			_ = c.Classify(errs[i%len(errs)])
		}
	})
	text := fmt.Errorf("deliver: %w", errors.New("upstream said: too many requests"))
	b.Run("Text", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = c.Classify(text)
		}
	})
}

// BenchmarkBackoff measures one delay per jitter kind from the global
// random source.
func BenchmarkBackoff(b *testing.B) {
	for _, j := range []Jitter{NoJitter, FullJitter, EqualJitter, DecorrelatedJitter} {
		p := DefaultPolicy(Transient)
		p.Jitter = j
		b.Run(j.String(), func(b *testing.B) {
			b.ReportAllocs()
			prev := time.Duration(0)
			for i := 0; b.Loop(); i++ {
				prev = p.Backoff(i%8+1, prev)
			}
		})
	}
}
