package ringwaltest_test

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

// signUp is the code under test: it enqueues a welcome email.
func signUp(ctx context.Context, e *ringwal.Engine, email string) error {
	_, err := e.Enqueue(ctx, ringwal.Message{
		Queue:   "emails",
		Key:     "smtp",
		Payload: []byte(email),
		Headers: map[string]string{"template": "welcome"},
	})
	return err
}

// sendEmail is the handler under test; the mail server refuses the first
// try.
func sendEmail(tries *int) ringwal.Handler {
	return func(_ context.Context, d ringwal.Delivery) error {
		*tries++
		if *tries == 1 {
			return classify.Mark(errors.New("421 try again later"), classify.Transient)
		}
		fmt.Printf("sent %s to %s\n", d.Message.Headers["template"], d.Message.Payload)
		return nil
	}
}

// A test of a sign-up that enqueues a welcome email, and of the email
// handler's retry: require the message was enqueued into the right queue
// with the right header, work it through the handler (which fails once),
// move the fake clock past the retry's backoff and work it again.
func Example() {
	t := newExampleT() // in a test: func TestSignUp(t *testing.T) { ... }
	defer t.cleanup()

	h := ringwaltest.New(t, ringwaltest.Options{Engine: ringwal.Options{
		Policies: map[classify.Category]classify.RetryPolicy{
			classify.Transient: {MaxAttempts: 3, Base: 30 * time.Second, Multiplier: 2, Jitter: classify.NoJitter},
		},
	}})
	if err := signUp(context.Background(), h.Engine, "ann@example.com"); err != nil {
		t.Fatalf("signUp: %v", err)
	}
	welcome := h.RequireEnqueued(ringwaltest.Match{
		Queue:   "emails",
		Payload: []byte("ann@example.com"),
		Headers: map[string]string{"template": "welcome"},
	})
	fmt.Println("enqueued:", welcome.State)

	tries := 0
	res := h.WorkOne("emails", sendEmail(&tries))
	fmt.Printf("attempt %d: %v, %s for %v\n", res.Delivery.Attempt, res.Err, res.Info.State, res.Info.NextAt.Sub(h.Clock.Now()))

	h.Advance(30 * time.Second)
	res = h.WorkOne("emails", sendEmail(&tries))
	fmt.Printf("attempt %d: acked %v\n", res.Delivery.Attempt, res.Acked)
	h.RequireNotEnqueued(ringwaltest.Match{Queue: "emails"})
	// Output:
	// enqueued: pending
	// attempt 1: 421 try again later, delayed for 30s
	// sent welcome to ann@example.com
	// attempt 2: acked true
}

// exampleT is the testing.TB this package's examples pass to ringwaltest,
// since an Example has no *testing.T: a failure panics with its message,
// and the example runs the cleanups itself.
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
