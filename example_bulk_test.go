package ringwal_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
)

// An operator fixed a downstream bug: count the dead letters the bug
// caused, then redrive exactly those. The count's mark, passed as
// Through, keeps out any dead letter added after the count.
func ExampleEngine_RedriveMatching() {
	e, err := ringwal.Open("", ringwal.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	bug := classify.Mark(errors.New("schema mismatch"), classify.Permanent)
	for range 3 {
		if _, err := e.Enqueue(ctx, ringwal.Message{Key: "billing"}); err != nil {
			log.Fatal(err)
		}
		d, err := e.Dequeue(ctx)
		if err != nil {
			log.Fatal(err)
		}
		_ = e.Nack(d.Lease, bug)
	}

	q := dlq.Query{Key: "billing", Categories: []classify.Category{classify.Permanent}}
	n, mark, err := e.CountDeadLetters(q)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("counted:", n)

	q.Through = mark
	redriven, err := e.RedriveMatching(q)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("redriven:", redriven)
	fmt.Println("pending:", e.Stats().Pending)
	// Output:
	// counted: 3
	// redriven: 3
	// pending: 3
}

// A batch job enqueues its work, lets workers run it, and waits until
// nothing is left pending, delayed, leased or held before it reports.
func ExampleEngine_WaitIdle() {
	e, err := ringwal.Open("", ringwal.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	for i := range 100 {
		if _, err := e.Enqueue(ctx, ringwal.Message{Payload: fmt.Appendf(nil, "job %d", i)}); err != nil {
			log.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() {
		done <- e.Run(ctx, 4, func(context.Context, ringwal.Delivery) error { return nil })
	}()

	if err := e.WaitIdle(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("acked:", e.Stats().Acked)
	stop()
	<-done
	// Output:
	// acked: 100
}
