package ringwal_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
)

// A memory-only engine: messages are handed out highest priority first,
// and each delivery is settled with Ack.
func Example() {
	e, err := ringwal.Open("", ringwal.Options{}) // "" = memory only
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	ctx := context.Background()
	for _, m := range []ringwal.Message{
		{Priority: ringwal.Low, Payload: []byte("tidy up")},
		{Priority: ringwal.Critical, Payload: []byte("page on-call")},
		{Priority: ringwal.Normal, Payload: []byte("send receipt")},
		{Priority: ringwal.High, Payload: []byte("charge card")},
	} {
		if _, err := e.Enqueue(ctx, m); err != nil {
			log.Fatal(err)
		}
	}

	for range 4 {
		d, err := e.Dequeue(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%d %-8s %s\n", d.ID, d.Message.Priority, d.Message.Payload)
		if err := e.Ack(d.Lease); err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// 2 critical page on-call
	// 4 high     charge card
	// 3 normal   send receipt
	// 1 low      tidy up
}

// Run calls the handler from a pool of workers: returning nil acks the
// delivery, and an error marked Permanent sends it straight to the
// dead-letter queue without a retry.
func ExampleEngine_Run() {
	e, err := ringwal.Open("", ringwal.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	ctx := context.Background()
	for _, p := range []string{"a", "b", "bad", "c", "d"} {
		if _, err := e.Enqueue(ctx, ringwal.Message{Payload: []byte(p)}); err != nil {
			log.Fatal(err)
		}
	}

	errRejected := errors.New("rejected by the target")
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- e.Run(runCtx, 4, func(ctx context.Context, d ringwal.Delivery) error {
			if string(d.Message.Payload) == "bad" {
				return classify.Mark(errRejected, classify.Permanent)
			}
			return nil // ack
		})
	}()

	// Stop Run once all five messages are settled.
	for s := e.Stats(); s.Acked+s.DeadLettered < 5; s = e.Stats() {
		time.Sleep(time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		log.Fatal(err)
	}

	s := e.Stats()
	fmt.Println("acked:", s.Acked)
	fmt.Println("dead-lettered:", s.DeadLetteredByCategory[classify.Permanent], "permanent")
	dead, err := e.DeadLetters(dlq.Query{})
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range dead {
		fmt.Printf("dead letter %d: %s (%s, %d attempt): %s\n",
			d.ID, d.Message.Payload, d.Category, d.Attempts, d.Failures[len(d.Failures)-1].Error)
	}
	// Output:
	// acked: 4
	// dead-lettered: 1 permanent
	// dead letter 3: bad (permanent, 1 attempt): rejected by the target
}

// A handler that knows when to try again wraps its error with
// classify.After: the message comes back after exactly that delay instead
// of the category policy's backoff, and the attempt still counts against
// the policy's MaxAttempts.
func ExampleEngine_Nack() {
	e, err := ringwal.Open("", ringwal.Options{
		Policies: map[classify.Category]classify.RetryPolicy{
			classify.Transient: {MaxAttempts: 2, Base: time.Second},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	ctx := context.Background()
	id, err := e.Enqueue(ctx, ringwal.Message{Payload: []byte("poll job 7")})
	if err != nil {
		log.Fatal(err)
	}

	const retryIn = 5 * time.Millisecond
	notReady := classify.Mark(errors.New("job 7 not finished"), classify.Transient)

	d, err := e.Dequeue(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("attempt", d.Attempt)
	if err := e.Nack(d.Lease, classify.After(notReady, retryIn)); err != nil {
		log.Fatal(err)
	}

	// Back after retryIn, not after the policy's one-second Base.
	d, err = e.Dequeue(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("attempt", d.Attempt)

	// That was the policy's last attempt (After adds none): this Nack
	// dead-letters the message.
	if err := e.Nack(d.Lease, classify.After(notReady, retryIn)); err != nil {
		log.Fatal(err)
	}
	info, err := e.Get(id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("state:", info.State, "attempts:", info.Attempts, "last error:", info.LastError)
	// Output:
	// attempt 1
	// attempt 2
	// state: dead attempts: 2 last error: job 7 not finished
}

// An operator lists the dead letters, marks one reviewed once its cause is
// fixed, and redrives it: it is pending again under the same ID, with its
// attempts reset.
func ExampleEngine_Redrive() {
	e, err := ringwal.Open("", ringwal.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	ctx := context.Background()
	id, err := e.Enqueue(ctx, ringwal.Message{Key: "billing", Payload: []byte(`{"order":42}`)})
	if err != nil {
		log.Fatal(err)
	}
	d, err := e.Dequeue(ctx)
	if err != nil {
		log.Fatal(err)
	}
	bad := classify.Mark(errors.New("unknown currency"), classify.Permanent)
	if err := e.Nack(d.Lease, bad); err != nil {
		log.Fatal(err)
	}

	dead, err := e.DeadLetters(dlq.Query{
		Categories: []classify.Category{classify.Permanent},
		Key:        "billing",
		Reviewed:   dlq.OnlyUnreviewed,
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, dl := range dead {
		fmt.Printf("dead letter %d: %s after %d attempt: %s\n",
			dl.ID, dl.Category, dl.Attempts, dl.Failures[len(dl.Failures)-1].Error)
	}

	// A listed dead letter's ID is the engine's ID: no conversion.
	if err := e.MarkReviewed(dead[0].ID, "currency table fixed"); err != nil {
		log.Fatal(err)
	}
	reviewed, err := e.DeadLetters(dlq.Query{Reviewed: dlq.OnlyReviewed})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("reviewed: %d %q\n", reviewed[0].ID, reviewed[0].Note)

	if err := e.Redrive(reviewed[0].ID); err != nil {
		log.Fatal(err)
	}
	info, err := e.Get(id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("after redrive:", info.State)

	d, err = e.Dequeue(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("redelivered %d, attempt %d: %s\n", d.ID, d.Attempt, d.Message.Payload)
	if err := e.Ack(d.Lease); err != nil {
		log.Fatal(err)
	}
	// Output:
	// dead letter 1: permanent after 1 attempt: unknown currency
	// reviewed: 1 "currency table fixed"
	// after redrive: pending
	// redelivered 1, attempt 1: {"order":42}
}

// With a data directory, an enqueued message survives Close (or a killed
// process) and is pending again when the directory is reopened.
func ExampleOpen_durable() {
	dir, err := os.MkdirTemp("", "ringwal-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	e, err := ringwal.Open(dir, ringwal.Options{Durability: ringwal.Fsync})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	id, err := e.Enqueue(ctx, ringwal.Message{Payload: []byte("survive me")})
	if err != nil {
		log.Fatal(err)
	}
	if err := e.Close(); err != nil {
		log.Fatal(err)
	}

	e, err = ringwal.Open(dir, ringwal.Options{Durability: ringwal.Fsync})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	info, err := e.Get(id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d %s: %s\n", info.ID, info.State, info.Message.Payload)

	d, err := e.Dequeue(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if err := e.Ack(d.Lease); err != nil {
		log.Fatal(err)
	}
	fmt.Println("pending after ack:", e.Stats().Pending)
	// Output:
	// 1 pending: survive me
	// pending after ack: 0
}
