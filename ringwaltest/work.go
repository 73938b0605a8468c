package ringwaltest

import (
	"context"
	"errors"
	"runtime/debug"
	"testing"
	"time"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
)

// Result is what WorkOne saw.
type Result struct {
	// Delivery is what the handler was given.
	Delivery ringwal.Delivery
	// Err is what the handler returned: nil (the message was acked), an
	// error (nacked with it), or a *classify.PanicError if it panicked
	// (nacked as Poison, as Run does).
	Err error
	// Acked is true when the handler returned nil and the message is gone.
	Acked bool
	// Info is the message as it stands once settled (Delayed for a retry
	// to come, Dead, Held behind an open breaker, Pending); its zero value
	// when Acked.
	Info ringwal.Info
}

// errHandlerStopped is the cause a message is nacked with when its handler
// stopped the test's goroutine (t.FailNow, require) instead of returning.
var errHandlerStopped = errors.New("ringwaltest: the handler stopped the test (t.FailNow or runtime.Goexit) before returning")

// noDeadlineWait is DefaultWait, as a variable so that this package's own
// test of the bound need not wait 10 s.
var noDeadlineWait = DefaultWait

// handoff is a delivery passed from Run's worker to the test's goroutine.
type handoff struct {
	ctx context.Context
	d   ringwal.Delivery
}

// WorkOne waits for the next ready message of queue ("" is the default
// queue), hands it to handler on the caller's goroutine and settles it
// exactly as Engine.Run does, then returns. It fails the test (t.Fatalf) if
// no message became ready before ctx ended or, for a ctx without a
// deadline, within DefaultWait.
//
// The message goes through the engine's own Run: Queue.Run with one
// worker, stopped once this message is settled. So nothing about settling
// is imitated. A nil return acks it without waiting for the log. An error
// nacks it: retry, hold, or dead letter, per its category. A panic nacks
// it as classify.Poison with the panic's stack. The handler's ctx is
// Run's, derived from ctx. It ends when the lease expires (the fake clock
// moved past it), on Requeue or Cancel, or when ctx ends.
// Only the handler's call itself is moved to the caller's goroutine, so
// that it may use t.Fatal and require: a handler that stops the test that
// way has its message nacked with an error saying so.
//
// Call it from the test's goroutine; another Run on the same queue may
// take the message instead.
func WorkOne(ctx context.Context, tb testing.TB, e *ringwal.Engine, queue string, handler ringwal.Handler) Result {
	tb.Helper()
	return workOne(ctx, tb, e, queue, handler, noDeadlineWait)
}

// workOne is WorkOne, waiting at most wait when ctx has no deadline. The
// bound is a timer of its own, not a deadline on ctx, so that the
// handler's ctx (derived from ctx, as Run's are from Run's) has none.
func workOne(ctx context.Context, tb testing.TB, e *ringwal.Engine, queue string, handler ringwal.Handler, wait time.Duration) Result {
	tb.Helper()
	if handler == nil {
		tb.Fatalf("ringwaltest.WorkOne: nil handler")
		return Result{}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	var bound <-chan time.Time
	if _, ok := ctx.Deadline(); !ok {
		t := time.NewTimer(wait)
		defer t.Stop()
		bound = t.C
	}

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	deliveries := make(chan handoff)
	results := make(chan error)
	runDone := make(chan error, 1)
	go func() { // owned here: every return below waits for runDone
		runDone <- e.Queue(queue).Run(runCtx, 1, func(hctx context.Context, d ringwal.Delivery) error {
			deliveries <- handoff{ctx: hctx, d: d}
			return <-results
		})
	}()

	var got handoff
	ctxDone, timedOut := runCtx.Done(), false
	for waiting := true; waiting; {
		select {
		case got = <-deliveries:
			waiting = false
		case <-ctxDone:
			// Run ends on its own; a message it took just before is
			// handled all the same (case above).
			ctxDone = nil
		case <-bound:
			bound, timedOut = nil, true
			stop() // as above
		case err := <-runDone:
			why := "Run returned: is the engine closed?"
			switch {
			case err != nil:
				why = "Run: " + err.Error()
			case ctx.Err() != nil:
				why = "ctx ended: " + context.Cause(ctx).Error()
			case timedOut:
				why = "waited " + wait.String()
			}
			tb.Fatalf("ringwaltest.WorkOne(queue %q): no message became ready (%s)", queue, why)
			return Result{}
		}
	}

	res := Result{Delivery: got.d}
	completed := false
	defer func() {
		if !completed { // the handler stopped this goroutine: let Run settle and end
			stop()
			results <- errHandlerStopped
			<-runDone
		}
	}()
	res.Err = call(got.ctx, handler, got.d)
	completed = true
	// Run's ctx ends before the worker goes back for another message, so
	// that it takes no other; the handler has returned, so its ctx no
	// longer matters.
	stop()
	results <- res.Err
	if err := <-runDone; err != nil {
		tb.Fatalf("ringwaltest.WorkOne(queue %q): Run: %v", queue, err)
		return res
	}
	info, err := e.Get(got.d.ID)
	switch {
	case errors.Is(err, ringwal.ErrNotFound):
		res.Acked = res.Err == nil
	case err != nil:
		tb.Fatalf("ringwaltest.WorkOne(queue %q): Get(%d) after settling: %v", queue, got.d.ID, err)
	default:
		res.Info = info
	}
	return res
}

// call runs handler, turning a panic into the error Run makes of one
// (classify.Panic with the panicking goroutine's stack), which Run then
// nacks as it nacks a panic.
func call(ctx context.Context, handler ringwal.Handler, d ringwal.Delivery) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = classify.Panic(v, debug.Stack())
		}
	}()
	return handler(ctx, d)
}
