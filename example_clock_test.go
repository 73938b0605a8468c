package ringwal_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/ringwaltest"
)

// A test of your own retry and delay timing need not sleep: ringwaltest
// gives it an engine on a fake clock, and time moves only when the test
// moves it. A message is due exactly when the fake clock passes its due
// time, however long the test really took; Advance returns once the
// engine has made what came due ready, and "not yet due" needs no wait at
// all. WorkOne hands the next ready message to a handler and settles it
// as Engine.Run would.
func Example_testRetryTimingWithFakeClock() {
	t := newExampleT() // in a test: your *testing.T
	defer t.cleanup()
	h := ringwaltest.New(t, ringwaltest.Options{})

	id, _ := h.TryEnqueue(ringwal.Message{Payload: []byte("send invoice 42"), Delay: time.Minute})
	invoice := ringwaltest.Match{Payload: []byte("send invoice 42")}
	fmt.Println("at once:", h.RequireEnqueued(invoice).State)

	h.Advance(59 * time.Second)
	fmt.Println("after 59s:", h.RequireEnqueued(invoice).State)

	h.Advance(time.Second)
	// The handler is told to come back in 5 s: classify.After replaces the
	// category's backoff with exactly that.
	res := h.WorkOne("", func(_ context.Context, d ringwal.Delivery) error {
		fmt.Printf("after 1m: %s, attempt %d\n", d.Message.Payload, d.Attempt)
		busy := classify.Mark(errors.New("mail server busy"), classify.Transient)
		return classify.After(busy, 5*time.Second)
	})
	fmt.Printf("then: %s for %v (%s)\n", res.Info.State, res.Info.NextAt.Sub(h.Clock.Now()), res.Info.LastError)

	h.Advance(4 * time.Second)
	fmt.Println("after 4s:", h.RequireEnqueued(invoice).State)

	h.Advance(time.Second)
	res = h.WorkOne("", func(_ context.Context, d ringwal.Delivery) error {
		fmt.Printf("after 5s: %s, attempt %d\n", d.Message.Payload, d.Attempt)
		return nil
	})
	fmt.Println("acked:", res.Acked, res.Delivery.ID == id)
	// Output:
	// at once: delayed
	// after 59s: delayed
	// after 1m: send invoice 42, attempt 1
	// then: delayed for 5s (mail server busy)
	// after 4s: delayed
	// after 5s: send invoice 42, attempt 2
	// acked: true true
}

// exampleT is the testing.TB the examples hand to ringwaltest, since an
// Example has no *testing.T: a failure panics with its message, and the
// example runs the cleanups itself.
type exampleT struct {
	testing.TB // the methods ringwaltest does not call: nil, never called
	cleanups   []func()
}

func newExampleT() *exampleT { return &exampleT{} }

func (*exampleT) Helper()                        {}
func (*exampleT) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }
func (*exampleT) Errorf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }
func (t *exampleT) Cleanup(f func())             { t.cleanups = append(t.cleanups, f) }

// cleanup runs the cleanups, last first, as a test's end does.
func (t *exampleT) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}
