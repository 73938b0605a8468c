package ringwal_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
)

// A TTL is for a message that is worthless late, such as a push
// notification for a sale that ends: once its TTL passes undelivered it
// is dead-lettered as classify.Expired, whether or not anyone is
// dequeuing, so it is never sent late and an operator still sees it.
// A fake clock stands in for the ten minutes.
func ExampleMessage_ttl() {
	e, fake := openOnFakeClock(ringwal.Options{})
	defer e.Close()

	if _, err := e.Enqueue(context.Background(), ringwal.Message{Payload: []byte("receipt")}); err != nil {
		log.Fatal(err)
	}
	push, err := e.Enqueue(context.Background(), ringwal.Message{Payload: []byte("flash sale: 20% off"), TTL: 10 * time.Minute})
	if err != nil {
		log.Fatal(err)
	}

	// No consumer runs. BlockUntil waits for the engine's timer goroutine
	// to act on the time that passed (it arms its timer again once done).
	fake.Advance(10 * time.Minute)
	fake.BlockUntil(1)

	info, err := e.Get(push)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %s\n", info.Message.Payload, info.State)
	dead, err := e.DeadLetters(dlq.Query{Categories: []classify.Category{classify.Expired}})
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range dead {
		fmt.Printf("dead letter %d: %s, %s\n", d.ID, d.Category, d.Failures[len(d.Failures)-1].Error)
	}
	s := e.Stats()
	fmt.Println("expired:", s.Expired, "pending:", s.Pending)
	// Output:
	// flash sale: 20% off: dead
	// dead letter 2: expired, ttl of 10m0s expired
	// expired: 1 pending: 1
}

// A Deadline is soft: it never drops or dead-letters a message. Once the
// deadline is within Options.DeadlineSlack, the message is served before
// every tier, earliest deadline first, and it stays first once the
// deadline has passed. Until then its priority places it. A fake clock
// stands in for the minutes.
func ExampleMessage_deadline() {
	e, fake := openOnFakeClock(ringwal.Options{
		// Served first from a minute before its deadline: the default
		// 10ms suits deadlines of a request, not of a business process.
		DeadlineSlack: time.Minute,
	})
	defer e.Close()

	ctx := context.Background()
	refund, err := e.Enqueue(ctx, ringwal.Message{
		Priority: ringwal.Low,
		Payload:  []byte("refund order 7"),
		Deadline: fake.Now().Add(10 * time.Minute),
	})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := e.Enqueue(ctx, ringwal.Message{Priority: ringwal.High, Payload: []byte("resize images")}); err != nil {
		log.Fatal(err)
	}
	next := func() string {
		var names []string
		for _, in := range e.Peek(2) {
			names = append(names, string(in.Message.Payload))
		}
		return fmt.Sprint(names)
	}
	fmt.Println("at once:", next())

	fake.Advance(9*time.Minute + 30*time.Second)
	fmt.Println("30s before the deadline:", next())

	fake.Advance(time.Minute)
	fake.BlockUntil(1)
	info, err := e.Get(refund)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("30s after the deadline:", info.State, next())

	for range 2 {
		d, err := e.Dequeue(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("dequeued: %s (%s)\n", d.Message.Payload, d.Message.Priority)
		if err := e.Ack(d.Lease); err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// at once: [resize images refund order 7]
	// 30s before the deadline: [refund order 7 resize images]
	// 30s after the deadline: pending [refund order 7 resize images]
	// dequeued: refund order 7 (low)
	// dequeued: resize images (high)
}
