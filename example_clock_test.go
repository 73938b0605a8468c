package ringwal_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
)

// A test of your own retry and delay timing need not sleep: give the
// engine a clock.Fake and move time by hand. A message is due exactly when
// the fake clock passes its due time, however long the test really took.
//
// The engine makes a due message ready on its own goroutine, a moment
// after Advance returns, so the test waits for it with a blocking Dequeue
// (under a real-time limit, in case of a bug); "not yet due" needs no
// wait at all: TryDequeue answers at once, and no amount of real time
// makes the message due while the fake clock stands still.
func Example_testRetryTimingWithFakeClock() {
	fake := clock.NewFake(time.Time{})
	e, err := ringwal.Open("", ringwal.Options{Clock: fake})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	// next waits for the next delivery, for at most 10 s of real time.
	next := func() ringwal.Delivery {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		d, err := e.Dequeue(ctx)
		if err != nil {
			log.Fatal(err)
		}
		return d
	}

	if _, err := e.TryEnqueue(ringwal.Message{Payload: []byte("send invoice 42"), Delay: time.Minute}); err != nil {
		log.Fatal(err)
	}
	_, ok := e.TryDequeue()
	fmt.Println("deliverable at once:", ok)

	fake.Advance(59 * time.Second)
	_, ok = e.TryDequeue()
	fmt.Println("deliverable after 59s:", ok)

	fake.Advance(time.Second)
	d := next()
	fmt.Printf("after 1m: %s, attempt %d\n", d.Message.Payload, d.Attempt)

	// The handler is told to come back in 5 s: classify.After replaces the
	// category's backoff with exactly that.
	busy := classify.Mark(errors.New("mail server busy"), classify.Transient)
	if err := e.Nack(d.Lease, classify.After(busy, 5*time.Second)); err != nil {
		log.Fatal(err)
	}
	fake.Advance(4 * time.Second)
	_, ok = e.TryDequeue()
	fmt.Println("redelivered after 4s:", ok)

	fake.Advance(time.Second)
	d = next()
	fmt.Printf("after 5s: %s, attempt %d\n", d.Message.Payload, d.Attempt)
	if err := e.Ack(d.Lease); err != nil {
		log.Fatal(err)
	}
	// Output:
	// deliverable at once: false
	// deliverable after 59s: false
	// after 1m: send invoice 42, attempt 1
	// redelivered after 4s: false
	// after 5s: send invoice 42, attempt 2
}
