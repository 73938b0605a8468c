package ringwal_test

// Bad input through the public API: every method given bad arguments
// returns an error wrapping the sentinel its contract names (ErrInvalid,
// or ErrNotFound / ErrStaleLease where that is the contract), never a
// panic and never a hang; and arguments at the edge of their range (huge
// durations, huge counts) work.

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
)

// badCall is one call and the sentinel its error must wrap (nil: it must
// succeed).
type badCall struct {
	name string
	call func(e *ringwal.Engine, other ringwal.Lease) error
	want error
}

// nilCtx is a nil context held in a variable, as a caller's bug would.
var nilCtx context.Context

func badCalls() []badCall {
	long := strings.Repeat("k", 4097)
	enq := func(m ringwal.Message) func(*ringwal.Engine, ringwal.Lease) error {
		return func(e *ringwal.Engine, _ ringwal.Lease) error { _, err := e.Enqueue(ctxBG, m); return err }
	}
	tryEnq := func(m ringwal.Message) func(*ringwal.Engine, ringwal.Lease) error {
		return func(e *ringwal.Engine, _ ringwal.Lease) error { _, err := e.TryEnqueue(m); return err }
	}
	query := func(q dlq.Query) func(*ringwal.Engine, ringwal.Lease) error {
		return func(e *ringwal.Engine, _ ringwal.Lease) error { _, err := e.DeadLetters(q); return err }
	}
	purge := func(q dlq.Query) func(*ringwal.Engine, ringwal.Lease) error {
		return func(e *ringwal.Engine, _ ringwal.Lease) error { _, err := e.PurgeDeadLetters(q); return err }
	}
	handler := func(context.Context, ringwal.Delivery) error { return nil }
	calls := []badCall{
		{"Enqueue priority above Critical", enq(ringwal.Message{Priority: ringwal.Critical + 1}), ringwal.ErrInvalid},
		{"Enqueue priority below Background", enq(ringwal.Message{Priority: math.MinInt8}), ringwal.ErrInvalid},
		{"Enqueue payload over MaxPayload", enq(ringwal.Message{Payload: make([]byte, 1<<20+1)}), ringwal.ErrInvalid},
		{"Enqueue negative Delay", enq(ringwal.Message{Delay: -1}), ringwal.ErrInvalid},
		{"Enqueue negative TTL", enq(ringwal.Message{TTL: math.MinInt64}), ringwal.ErrInvalid},
		{"Enqueue negative MaxAttempts", enq(ringwal.Message{MaxAttempts: -1}), ringwal.ErrInvalid},
		{"Enqueue Key too long", enq(ringwal.Message{Key: long}), ringwal.ErrInvalid},
		{"Enqueue DedupID too long", enq(ringwal.Message{DedupID: long}), ringwal.ErrInvalid},
		{"Enqueue Delay ending past 2262", enq(ringwal.Message{Delay: math.MaxInt64}), ringwal.ErrInvalid},
		{"Enqueue TTL ending past 2262", enq(ringwal.Message{TTL: math.MaxInt64}), ringwal.ErrInvalid},
		{"Enqueue Delay of a century", enq(ringwal.Message{Delay: 100 * 365 * 24 * time.Hour}), nil},
		{"Enqueue huge MaxAttempts", enq(ringwal.Message{MaxAttempts: math.MaxInt}), nil},
		{"Enqueue Deadline past 2262", enq(ringwal.Message{Deadline: time.Unix(1<<62, 0)}), ringwal.ErrInvalid},
		{"Enqueue Deadline before 1677", enq(ringwal.Message{Deadline: time.Unix(-1<<40, 0)}), ringwal.ErrInvalid},
		{"Enqueue Deadline before 1970", enq(ringwal.Message{Deadline: time.Unix(-1<<30, 0)}), nil},
		{"Enqueue nil ctx", func(e *ringwal.Engine, _ ringwal.Lease) error {
			_, err := e.Enqueue(nilCtx, ringwal.Message{})
			return err
		}, nil},
		{"TryEnqueue negative Delay", tryEnq(ringwal.Message{Delay: -time.Second}), ringwal.ErrInvalid},
		{"TryEnqueue priority out of range", tryEnq(ringwal.Message{Priority: 100}), ringwal.ErrInvalid},
		{"EnqueueBatch one bad message", func(e *ringwal.Engine, _ ringwal.Lease) error {
			_, err := e.EnqueueBatch(ctxBG, []ringwal.Message{{}, {TTL: -1}})
			return err
		}, ringwal.ErrInvalid},
		{"EnqueueBatch over MaxMessages", func(e *ringwal.Engine, _ ringwal.Lease) error {
			_, err := e.EnqueueBatch(ctxBG, make([]ringwal.Message, 1<<16+1))
			return err
		}, ringwal.ErrInvalid},
		{"EnqueueBatch nil", func(e *ringwal.Engine, _ ringwal.Lease) error { _, err := e.EnqueueBatch(ctxBG, nil); return err }, nil},
		{"EnqueueBatch nil ctx", func(e *ringwal.Engine, _ ringwal.Lease) error {
			_, err := e.EnqueueBatch(nilCtx, []ringwal.Message{{}})
			return err
		}, nil},
		{"Dequeue nil ctx", func(e *ringwal.Engine, _ ringwal.Lease) error { _, err := e.Dequeue(nilCtx); return err }, ringwal.ErrInvalid},
		{"DequeueBatch zero", func(e *ringwal.Engine, _ ringwal.Lease) error { _, err := e.DequeueBatch(ctxBG, 0); return err }, ringwal.ErrInvalid},
		{"DequeueBatch negative", func(e *ringwal.Engine, _ ringwal.Lease) error {
			_, err := e.DequeueBatch(ctxBG, math.MinInt)
			return err
		}, ringwal.ErrInvalid},
		{"DequeueBatch nil ctx", func(e *ringwal.Engine, _ ringwal.Lease) error { _, err := e.DequeueBatch(nilCtx, 1); return err }, ringwal.ErrInvalid},
		{"DequeueBatch huge", func(e *ringwal.Engine, _ ringwal.Lease) error {
			if _, err := e.Enqueue(ctxBG, ringwal.Message{}); err != nil {
				return err
			}
			ds, err := e.DequeueBatch(ctxBG, math.MaxInt)
			if err == nil && len(ds) == 0 {
				err = fmt.Errorf("no delivery")
			}
			return err
		}, nil},
		{"Ack zero lease", func(e *ringwal.Engine, _ ringwal.Lease) error { return e.Ack(ringwal.Lease{}) }, ringwal.ErrStaleLease},
		{"Ack foreign lease", func(e *ringwal.Engine, l ringwal.Lease) error { return e.Ack(l) }, ringwal.ErrStaleLease},
		{"Nack zero lease", func(e *ringwal.Engine, _ ringwal.Lease) error { return e.Nack(ringwal.Lease{}, nil) }, ringwal.ErrStaleLease},
		{"Nack foreign lease", func(e *ringwal.Engine, l ringwal.Lease) error { return e.Nack(l, fmt.Errorf("x")) }, ringwal.ErrStaleLease},
		{"Extend zero lease", func(e *ringwal.Engine, _ ringwal.Lease) error { return e.Extend(ringwal.Lease{}, time.Second) }, ringwal.ErrStaleLease},
		{"Extend foreign lease", func(e *ringwal.Engine, l ringwal.Lease) error { return e.Extend(l, time.Second) }, ringwal.ErrStaleLease},
		{"Extend by zero", func(e *ringwal.Engine, l ringwal.Lease) error { return e.Extend(l, 0) }, ringwal.ErrInvalid},
		{"Extend by a negative duration", func(e *ringwal.Engine, _ ringwal.Lease) error { return e.Extend(ringwal.Lease{}, math.MinInt64) }, ringwal.ErrInvalid},
		{"Extend by a huge duration", func(e *ringwal.Engine, _ ringwal.Lease) error {
			if _, err := e.Enqueue(ctxBG, ringwal.Message{}); err != nil {
				return err
			}
			d, err := e.Dequeue(ctxBG)
			if err != nil {
				return err
			}
			if err := e.Extend(d.Lease, math.MaxInt64); err != nil {
				return err
			}
			return e.Ack(d.Lease)
		}, nil},
		{"Run zero workers", func(e *ringwal.Engine, _ ringwal.Lease) error { return e.Run(ctxBG, 0, handler) }, ringwal.ErrInvalid},
		{"Run negative workers", func(e *ringwal.Engine, _ ringwal.Lease) error { return e.Run(ctxBG, math.MinInt, handler) }, ringwal.ErrInvalid},
		{"Run huge workers", func(e *ringwal.Engine, _ ringwal.Lease) error { return e.Run(ctxBG, math.MaxInt, handler) }, ringwal.ErrInvalid},
		{"Run nil handler", func(e *ringwal.Engine, _ ringwal.Lease) error { return e.Run(ctxBG, 1, nil) }, ringwal.ErrInvalid},
		{"Run nil ctx", func(e *ringwal.Engine, _ ringwal.Lease) error { return e.Run(nilCtx, 1, handler) }, ringwal.ErrInvalid},
		{"Get zero", func(e *ringwal.Engine, _ ringwal.Lease) error { _, err := e.Get(0); return err }, ringwal.ErrNotFound},
		{"Get unknown", func(e *ringwal.Engine, _ ringwal.Lease) error { _, err := e.Get(math.MaxUint64); return err }, ringwal.ErrNotFound},
		{"Requeue zero", func(e *ringwal.Engine, _ ringwal.Lease) error { return e.Requeue(0) }, ringwal.ErrNotFound},
		{"Requeue unknown", func(e *ringwal.Engine, _ ringwal.Lease) error { return e.Requeue(math.MaxUint64) }, ringwal.ErrNotFound},
		{"Redrive zero", func(e *ringwal.Engine, _ ringwal.Lease) error { return e.Redrive(0) }, ringwal.ErrNotFound},
		{"Redrive a live message", func(e *ringwal.Engine, _ ringwal.Lease) error {
			id, err := e.Enqueue(ctxBG, ringwal.Message{})
			if err != nil {
				return err
			}
			return e.Redrive(id)
		}, ringwal.ErrNotFound},
		{"MarkReviewed unknown", func(e *ringwal.Engine, _ ringwal.Lease) error { return e.MarkReviewed(math.MaxUint64, "n") }, ringwal.ErrNotFound},
		{"Peek negative", func(e *ringwal.Engine, _ ringwal.Lease) error { return peekLen(e, math.MinInt, 0) }, nil},
		{"Peek huge", func(e *ringwal.Engine, _ ringwal.Lease) error {
			if _, err := e.Enqueue(ctxBG, ringwal.Message{}); err != nil {
				return err
			}
			return peekLen(e, math.MaxInt, 1)
		}, nil},
		{"DeadLetters negative Limit", query(dlq.Query{Limit: -1}), ringwal.ErrInvalid},
		{"DeadLetters Since after Until", query(dlq.Query{Since: time.Unix(10, 0), Until: time.Unix(5, 0)}), ringwal.ErrInvalid},
		{"DeadLetters undeclared category", query(dlq.Query{Categories: []classify.Category{200}}), ringwal.ErrInvalid},
		{"DeadLetters undeclared Review", query(dlq.Query{Reviewed: 9}), ringwal.ErrInvalid},
		{"DeadLetters unknown cursor", query(dlq.Query{After: math.MaxUint64}), ringwal.ErrInvalid},
		{"DeadLetters huge Limit", query(dlq.Query{Limit: math.MaxInt}), nil},
		{"PurgeDeadLetters negative Limit", purge(dlq.Query{Limit: math.MinInt}), ringwal.ErrInvalid},
		{"PurgeDeadLetters undeclared category", purge(dlq.Query{Categories: []classify.Category{255}}), ringwal.ErrInvalid},
	}
	return calls
}

// peekLen checks that Peek(n) returns want entries.
func peekLen(e *ringwal.Engine, n, want int) error {
	if got := len(e.Peek(n)); got != want {
		return fmt.Errorf("Peek(%d) returned %d entries, want %d", n, got, want)
	}
	return nil
}

// callNoPanic runs fn and turns a panic into a test failure.
func callNoPanic(t *testing.T, fn func() error) (err error, panicked bool) {
	t.Helper()
	defer func() {
		if v := recover(); v != nil {
			t.Errorf("panic: %v", v)
			panicked = true
		}
	}()
	return fn(), false
}

func TestBadInputThroughTheAPI(t *testing.T) {
	// A lease of another engine, whose slot this one's slab may not have.
	other, _ := memEngine(t, ringwal.Options{MaxMessages: 1 << 20})
	for i := 0; i < 3; i++ {
		enqueue(t, other, ringwal.Message{})
	}
	var foreign ringwal.Lease
	for i := 0; i < 3; i++ {
		foreign = dequeue(t, other).Lease
	}
	for _, dir := range []string{"", "dir"} {
		for _, c := range badCalls() {
			t.Run(fmt.Sprintf("%s/durable=%v", c.name, dir != ""), func(t *testing.T) {
				d := ""
				if dir != "" {
					d = t.TempDir()
				}
				e, _ := memEngineIn(t, d, ringwal.Options{MaxMessages: 1 << 16, CloseGrace: time.Millisecond})
				done := make(chan struct{})
				var err error
				var panicked bool
				go func() {
					defer close(done)
					err, panicked = callNoPanic(t, func() error { return c.call(e, foreign) })
				}()
				select {
				case <-done:
				case <-time.After(waitFor):
					require.FailNow(t, "the call did not return")
				}
				if panicked {
					return
				}
				if c.want == nil {
					assert.NoError(t, err)
				} else {
					assert.ErrorIs(t, err, c.want)
				}
				// After Close every method refuses, still without a panic.
				require.NoError(t, e.Close())
				if c.want != nil {
					err, _ = callNoPanic(t, func() error { return c.call(e, foreign) })
					assert.Error(t, err)
				}
			})
		}
	}
}

// memEngineIn opens an engine on dir ("" = memory) on a fake clock.
func memEngineIn(t *testing.T, dir string, o ringwal.Options) (*ringwal.Engine, error) {
	t.Helper()
	if dir == "" {
		e, _ := memEngine(t, o)
		return e, nil
	}
	return open(t, dir, o), nil
}

func TestInvalidInput(t *testing.T) {
	const maxPayload = 16
	// leased returns a live lease on a fresh message.
	leased := func(t *testing.T, e *ringwal.Engine) ringwal.Lease {
		enqueueP(t, e, ringwal.Normal, "x")
		return dequeue(t, e).Lease
	}
	cases := []struct {
		name string
		// words: the error's text must contain one of them (lower case).
		words []string
		// enqueue: a rejected message must not be enqueued.
		enqueue bool
		call    func(t *testing.T, e *ringwal.Engine) error
	}{
		{"priority too high", []string{"priority"}, true, func(t *testing.T, e *ringwal.Engine) error {
			_, err := e.Enqueue(ctxBG, ringwal.Message{Priority: ringwal.Critical + 1})
			return err
		}},
		{"priority too low", []string{"priority"}, true, func(t *testing.T, e *ringwal.Engine) error {
			_, err := e.Enqueue(ctxBG, ringwal.Message{Priority: ringwal.Background - 1})
			return err
		}},
		{"priority TryEnqueue", []string{"priority"}, true, func(t *testing.T, e *ringwal.Engine) error {
			_, err := e.TryEnqueue(ringwal.Message{Priority: 100})
			return err
		}},
		{"payload over MaxPayload", []string{"payload"}, true, func(t *testing.T, e *ringwal.Engine) error {
			_, err := e.Enqueue(ctxBG, ringwal.Message{Payload: make([]byte, maxPayload+1)})
			return err
		}},
		{"payload over MaxPayload TryEnqueue", []string{"payload"}, true, func(t *testing.T, e *ringwal.Engine) error {
			_, err := e.TryEnqueue(ringwal.Message{Payload: make([]byte, maxPayload+1)})
			return err
		}},
		{"negative Delay", []string{"delay"}, true, func(t *testing.T, e *ringwal.Engine) error {
			_, err := e.Enqueue(ctxBG, ringwal.Message{Delay: -time.Millisecond})
			return err
		}},
		{"negative TTL", []string{"ttl"}, true, func(t *testing.T, e *ringwal.Engine) error {
			_, err := e.Enqueue(ctxBG, ringwal.Message{TTL: -time.Second})
			return err
		}},
		{"negative MaxAttempts", []string{"attempts"}, true, func(t *testing.T, e *ringwal.Engine) error {
			_, err := e.Enqueue(ctxBG, ringwal.Message{MaxAttempts: -1})
			return err
		}},
		{"batch with one bad message", []string{"priority"}, true, func(t *testing.T, e *ringwal.Engine) error {
			_, err := e.EnqueueBatch(ctxBG, []ringwal.Message{{}, {Priority: 7}, {}})
			return err
		}},
		{"DequeueBatch max 0", []string{"max", "batch", "positive"}, false, func(t *testing.T, e *ringwal.Engine) error {
			_, err := e.DequeueBatch(ctxBG, 0)
			return err
		}},
		{"DequeueBatch max -1", []string{"max", "batch", "positive"}, false, func(t *testing.T, e *ringwal.Engine) error {
			_, err := e.DequeueBatch(ctxBG, -1)
			return err
		}},
		{"Extend by 0", []string{"extend", "duration", "positive"}, false, func(t *testing.T, e *ringwal.Engine) error {
			return e.Extend(leased(t, e), 0)
		}},
		{"Extend by negative", []string{"extend", "duration", "positive"}, false, func(t *testing.T, e *ringwal.Engine) error {
			return e.Extend(leased(t, e), -time.Second)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := memEngine(t, ringwal.Options{MaxPayload: maxPayload})
			var err error
			require.NotPanics(t, func() { err = tc.call(t, e) })
			require.Error(t, err)
			assert.ErrorIs(t, err, ringwal.ErrInvalid)
			assert.True(t, containsAny(errText(err), tc.words), "error %q should say what was wrong (one of %q)", err, tc.words)
			if tc.enqueue {
				s := e.Stats()
				assert.Equal(t, uint64(0), s.Enqueued, "a rejected message is not enqueued")
				assert.Equal(t, 0, s.Pending)
			}
			// The engine still works.
			id := enqueueP(t, e, ringwal.Normal, "fine")
			d := dequeue(t, e)
			assert.Equal(t, id, d.ID)
		})
	}

	t.Run("payload of exactly MaxPayload is fine", func(t *testing.T) {
		e, _ := memEngine(t, ringwal.Options{MaxPayload: maxPayload})
		_, err := e.Enqueue(ctxBG, ringwal.Message{Payload: make([]byte, maxPayload)})
		assert.NoError(t, err)
	})

	t.Run("Peek with n <= 0", func(t *testing.T) {
		e, _ := memEngine(t, ringwal.Options{})
		enqueueP(t, e, ringwal.Normal, "x")
		assert.NotPanics(t, func() {
			assert.Empty(t, e.Peek(0))
			assert.Empty(t, e.Peek(-1))
		})
	})
}

func TestUnknownIDs(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	acked := enqueueP(t, e, ringwal.Normal, "a")
	d := dequeue(t, e)
	require.NoError(t, e.Ack(d.Lease))
	for _, id := range []ringwal.ID{0, 12345, 1 << 62, acked} {
		_, err := e.Get(id)
		assert.ErrorIs(t, err, ringwal.ErrNotFound, "Get(%d)", id)
		assert.ErrorIs(t, e.Requeue(id), ringwal.ErrNotFound, "Requeue(%d)", id)
		assert.ErrorIs(t, e.Redrive(id), ringwal.ErrNotFound, "Redrive(%d)", id)
		assert.ErrorIs(t, e.MarkReviewed(id, "n"), ringwal.ErrNotFound, "MarkReviewed(%d)", id)
	}
}
