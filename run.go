package ringwal

import (
	"context"
	"errors"
	"runtime/debug"
	"sync"
	"time"

	"github.com/ringwal/ringwal/classify"
)

// Handler processes one delivery. Returning nil acks it. An error nacks it
// with that cause (see Nack). A panic nacks it as classify.Poison, with
// the panic value and stack as the recorded error. Its ctx ends when the
// lease expires, when the message is requeued (Requeue), when Run's ctx
// ends, or when Close's grace period ends.
type Handler func(ctx context.Context, d Delivery) error

// maxRunWorkers bounds Run's workers: each is a goroutine, started at
// once, and a count beyond this is a mistake (an unchecked computation),
// not a wish for millions of goroutines.
const maxRunWorkers = 1 << 16

// Run processes messages with workers goroutines calling h until ctx ends
// or the engine closes, then waits for the handlers in progress and
// returns nil. The wait has no bound of its own: a handler that ignores
// its ctx keeps Run from returning (Close stops waiting for it, Run does
// not). It returns an error only for bad arguments (ErrInvalid: workers
// outside [1, 65536], a nil h or ctx) or an engine whose Close has started
// (ErrClosed). Several Runs may share an engine; Run is safe for
// concurrent use.
//
// Acks do not wait for the log. When a handler returns nil, its worker
// frees the message and appends the ack record without waiting for it,
// then takes the next message. The ack becomes durable with the next
// group commit. In Write mode that is the next batch's write(2), in Fsync
// mode that batch's fsync, in Buffered mode within FlushInterval. A crash
// before then delivers again exactly the messages whose acks had not
// reached the log. Such a crash is a killed process in Write and Fsync
// modes, or a power loss in Fsync mode. So Run's delivery is at least
// once, as with every broker consumer that acks asynchronously. Close writes (and fsyncs) every ack appended before it,
// so a clean Close redelivers nothing a handler acked. Nacks (a handler's
// error or panic) do wait, as Nack does: the retry or dead letter is as
// durable as Options.Durability promises before the worker moves on. A
// An ordered key's ack (KeyPolicy.Ordered) waits all the same: the key's
// next message must not go out while this one could still come back. A
// consumer that needs each ack durable before it proceeds calls Dequeue
// and Ack (or AckBatch) itself.
func (e *Engine) Run(ctx context.Context, workers int, h Handler) error {
	return e.run(ctx, &e.defaultDelivery, workers, h)
}

// run is Run on rt's queue.
func (e *Engine) run(ctx context.Context, rt *queueDelivery, workers int, h Handler) error {
	if err := e.errIfClosing(); err != nil {
		return err // closed wins over bad arguments, as for every method
	}
	if workers <= 0 || workers > maxRunWorkers {
		return invalidf("Run with %d workers: must be in [1, %d]", workers, maxRunWorkers)
	}
	if h == nil {
		return invalidf("Run with a nil handler")
	}
	if ctx == nil {
		return invalidf("Run with a nil ctx")
	}
	e.closeMu.Lock()
	if e.closing.Load() {
		e.closeMu.Unlock()
		return ErrClosed
	}
	e.runs.Add(1)
	e.closeMu.Unlock()
	defer e.runs.Done()

	// Handlers' contexts end with Run's ctx or when Close's grace ends.
	handlerBase, cancelHandlers := context.WithCancel(ctx)
	defer cancelHandlers()
	go func() {
		select {
		case <-e.graceEnd:
			cancelHandlers()
		case <-handlerBase.Done():
		}
	}()

	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.work(ctx, handlerBase, rt, h)
		}()
	}
	wg.Wait()
	return nil
}

// work is one Run worker: dequeue, handle, settle, until ctx ends or the
// engine closes.
func (e *Engine) work(ctx, handlerBase context.Context, rt *queueDelivery, h Handler) {
	for {
		// dequeue returns ctx's error before it takes anything once ctx
		// has ended, so a steady backlog does not keep Run from returning.
		d, err := e.dequeue(ctx, rt)
		if err != nil {
			return // ctx ended or the engine is closing
		}
		hctx, cancel := context.WithCancel(handlerBase)
		rf, _ := e.leaseKey.ref(d.Lease)
		r := e.slab.at(rf.slot)
		// Lease expiry (or a Requeue) cancels the handler through r.cancel.
		// Set it while owning the record: a reader owning it for a
		// moment, or an expiry in progress, must not make the handler miss
		// its cancellation. A lease already gone starts it cancelled.
		cancelFn := cancel
		if r.own(rf.gen, stLeased) {
			r.cancel.Store(&cancelFn)
			r.keep(e.counts, stLeased) // the lease holds
		} else {
			cancel()
		}
		herr := e.call(hctx, h, d)
		r.cancel.CompareAndSwap(&cancelFn, nil)
		cancel()
		var serr error
		if herr == nil {
			serr = e.ackLater(d.Lease) // no wait for the log: see Run
		} else {
			serr = e.Nack(d.Lease, herr)
		}
		if serr != nil && !errors.Is(serr, ErrStaleLease) && !errors.Is(serr, ErrClosed) {
			e.logSettleFailure(d.ID, serr)
		}
	}
}

// call runs h, turning a panic into a Poison error carrying its stack.
func (e *Engine) call(ctx context.Context, h Handler, d Delivery) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = classify.Panic(v, debug.Stack())
		}
	}()
	return h(ctx, d)
}

// logSettleFailure warns about an Ack or Nack that could not be logged, at
// most once a second: a failing disk would otherwise warn per delivery.
func (e *Engine) logSettleFailure(id ID, err error) {
	now := e.now()
	last := e.lastSettleWarn.Load()
	if now-last < int64(time.Second) || !e.lastSettleWarn.CompareAndSwap(last, now) {
		return
	}
	e.opts.Logger.Warn("ringwal: settling a delivery failed (repeats suppressed for 1s)", "id", id, "err", err)
}
