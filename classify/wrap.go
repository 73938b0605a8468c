package classify

import (
	"fmt"
	"runtime/debug"
	"time"
)

// Mark returns err annotated with category c, which Default reports ahead
// of every heuristic. Mark(err, Permanent) is how a handler says "do not
// retry this". Mark(nil, c) is nil: there is no failure to mark.
//
// The result's text is err's text unchanged (so dead-letter entries show
// the cause, not the annotation), and it unwraps to err, so errors.Is and
// errors.As see through it. If err is marked more than once the outermost
// mark wins. A c outside the declared set is recorded as Unknown.
func Mark(err error, c Category) error {
	if err == nil {
		return nil
	}
	if !c.Valid() {
		c = Unknown
	}
	return &markedError{err: err, cat: c}
}

// markedError is what Mark returns. It is unexported so that the only way
// to make one is Mark, which validates the category.
type markedError struct {
	err error
	cat Category
}

func (e *markedError) Error() string { return e.err.Error() }
func (e *markedError) Unwrap() error { return e.err }

// After returns err annotated with an exact retry delay: the engine retries
// the message d after the failure instead of using the policy's backoff.
// The category is still err's (After is not a category marker), and the
// attempt still counts against that category's MaxAttempts, so After cannot
// extend a message's life beyond its policy. A negative d is 0 (retry at
// once).
//
// Unlike Mark, After(nil, d) is not nil: "try again in d" is a meaningful
// answer from a handler even without a cause (a job polling for a result),
// and returning nil would acknowledge the message. Its text is then
// "retry after <d>" and its category Unknown.
//
// The result unwraps to err, so errors.Is and errors.As see through it.
// RetryAfter reads d back.
func After(err error, d time.Duration) error {
	if d < 0 {
		d = 0
	}
	return &afterError{err: err, d: d}
}

// afterError is what After returns. It deliberately has no RetryAfter
// method: that interface means "the target sent a Retry-After hint", which
// Default classifies as RateLimited, whereas After keeps err's category.
type afterError struct {
	err error // may be nil
	d   time.Duration
}

func (e *afterError) Error() string {
	if e.err == nil {
		return "retry after " + e.d.String()
	}
	return e.err.Error()
}

func (e *afterError) Unwrap() error { return e.err }

// RetryAfter returns the retry delay carried by err: the d of an After
// wrapper, or the value of a RetryAfter() time.Duration method (an HTTP
// client's Retry-After header, say) if it is positive. It searches err's
// tree depth-first, left to right, like errors.As, and the first hit wins,
// so an After wrapped around an error with its own hint overrides the hint.
// ok is false if there is no such delay.
func RetryAfter(err error) (d time.Duration, ok bool) {
	return retryAfter(err, 0)
}

func retryAfter(err error, depth int) (time.Duration, bool) {
	if err == nil || depth > maxDepth {
		return 0, false
	}
	switch e := err.(type) {
	case *afterError:
		return e.d, true
	case retryAfterer:
		if d := e.RetryAfter(); d > 0 {
			return d, true
		}
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return retryAfter(u.Unwrap(), depth+1)
	case interface{ Unwrap() []error }:
		for _, c := range u.Unwrap() {
			if d, ok := retryAfter(c, depth+1); ok {
				return d, true
			}
		}
	}
	return 0, false
}

// retryAfterer is implemented by errors that carry a server's retry hint.
type retryAfterer interface{ RetryAfter() time.Duration }

// PanicError is a recovered handler panic. The engine makes one when a
// handler panics, and Default classifies it as Poison whatever value was
// thrown: a crash is a bug in the handler, not information about the
// target.
type PanicError struct {
	// Value is what was passed to panic.
	Value any
	// Stack is the panicking goroutine's stack, as from debug.Stack.
	Stack []byte
}

// Panic returns a *PanicError for a value recovered from a panic. If stack
// is nil it captures debug.Stack(), which still shows the panicking frames
// when Panic is called from the deferred function that recovered.
func Panic(v any, stack []byte) error {
	if stack == nil {
		stack = debug.Stack()
	}
	return &PanicError{Value: v, Stack: stack}
}

// Error returns "panic: <value>" followed by the stack, so that the
// dead-letter entry, which keeps only error text, still shows where the
// handler crashed.
func (e *PanicError) Error() string {
	if len(e.Stack) == 0 {
		return fmt.Sprintf("panic: %v", e.Value)
	}
	return fmt.Sprintf("panic: %v\n\n%s", e.Value, e.Stack)
}

// Unwrap returns Value if it is an error (panic(err)), so errors.Is and
// errors.As reach it; Default still classifies the whole as Poison.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
