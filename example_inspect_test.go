package ringwal_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/ringwal/ringwal"
)

// Stats is what a dashboard or an alert reads: the counts by state, by
// priority, and the age of the longest-waiting pending message, which
// grows when consumers fall behind. It is cheap enough to poll, not to
// call per message. A fake clock makes the age exact.
func ExampleEngine_Stats() {
	e, fake := openOnFakeClock(ringwal.Options{})
	defer e.Close()

	ctx := context.Background()
	enqueueAll(ctx, e, []ringwal.Message{
		{Priority: ringwal.High, Payload: []byte("charge card")},
		{Payload: []byte("send receipt")},
		{Payload: []byte("ask for a review"), Delay: time.Hour},
		{Priority: ringwal.Low, Payload: []byte("tidy up")},
	})
	if _, err := e.Dequeue(ctx); err != nil { // a consumer takes "charge card"
		log.Fatal(err)
	}
	// 20s pass, within the consumer's lease (Options.LeaseTimeout, 30s).
	// BlockUntil waits for the engine's timer goroutine to act on them (it
	// arms its timer again once done).
	fake.Advance(20 * time.Second)
	fake.BlockUntil(1)

	s := e.Stats()
	fmt.Println("pending:", s.Pending, "delayed:", s.Delayed, "leased:", s.Leased)
	fmt.Println("pending normal:", s.PendingByPriority[ringwal.Normal], "low:", s.PendingByPriority[ringwal.Low])
	fmt.Println("oldest pending:", s.OldestPending)
	fmt.Println("enqueued:", s.Enqueued, "dequeued:", s.Dequeued)
	// Output:
	// pending: 2 delayed: 1 leased: 1
	// pending normal: 1 low: 1
	// oldest pending: 20s
	// enqueued: 4 dequeued: 1
}

// Peek lists the pending messages in the order Dequeue would hand them
// out now, without leasing any: what an operator looks at to see what
// runs next. Here the Dequeues that follow take them in that order. (Peek
// does not predict aging, which serves a tier left waiting AgingAfter:
// the fake clock keeps the example's time still.)
func ExampleEngine_Peek() {
	e, _ := openOnFakeClock(ringwal.Options{})
	defer e.Close()

	ctx := context.Background()
	enqueueAll(ctx, e, []ringwal.Message{
		{Priority: ringwal.Low, Payload: []byte("tidy up")},
		{Payload: []byte("send receipt")},
		{Priority: ringwal.Critical, Payload: []byte("page on-call")},
	})

	for _, in := range e.Peek(10) {
		fmt.Printf("next: %s (%s)\n", in.Message.Payload, in.Message.Priority)
	}
	fmt.Println("leased after Peek:", e.Stats().Leased)

	for range 3 {
		d, err := e.Dequeue(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("dequeued:", string(d.Message.Payload))
		if err := e.Ack(d.Lease); err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// next: page on-call (critical)
	// next: send receipt (normal)
	// next: tidy up (low)
	// leased after Peek: 0
	// dequeued: page on-call
	// dequeued: send receipt
	// dequeued: tidy up
}

// Messages walks the live messages a Filter selects, in every live state
// (pending, delayed, leased, held), without leasing or copying them all
// first: "what do we still hold for this customer?". A fake clock makes
// the due time exact.
func ExampleEngine_Messages() {
	e, fake := openOnFakeClock(ringwal.Options{})
	defer e.Close()

	ctx := context.Background()
	enqueueAll(ctx, e, []ringwal.Message{
		{Key: "customer-7", Payload: []byte("charge card")},
		{Key: "customer-9", Payload: []byte("charge card")},
		{Key: "customer-7", Payload: []byte("send receipt")},
		{Key: "customer-7", Payload: []byte("ask for a review"), Delay: time.Hour},
	})
	if _, err := e.Dequeue(ctx); err != nil { // a consumer takes customer-7's charge
		log.Fatal(err)
	}

	for in := range e.Messages(ringwal.Filter{Key: "customer-7"}) {
		fmt.Printf("%d %s: %s", in.ID, in.Message.Payload, in.State)
		if in.State == ringwal.Delayed {
			fmt.Printf(", due in %v", in.NextAt.Sub(fake.Now()))
		}
		fmt.Println()
	}

	// The States filter narrows the walk, here to what no consumer has yet.
	n := 0
	for range e.Messages(ringwal.Filter{States: []ringwal.State{ringwal.Pending, ringwal.Delayed}}) {
		n++
	}
	fmt.Println("waiting for a consumer, every key:", n)
	// Output:
	// 1 charge card: leased
	// 3 send receipt: pending
	// 4 ask for a review: delayed, due in 1h0m0s
	// waiting for a consumer, every key: 3
}

// enqueueAll enqueues msgs in order, as the inspection examples' setup: a
// failure ends the example.
func enqueueAll(ctx context.Context, e *ringwal.Engine, msgs []ringwal.Message) {
	for _, m := range msgs {
		if _, err := e.Enqueue(ctx, m); err != nil {
			log.Fatal(err)
		}
	}
}
