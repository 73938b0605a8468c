package ringwal_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/clock"
)

// Debounce: every change to user 42 asks for a reindex, but a burst of
// changes should run it once, a while after the last change, with the
// last change's data. Replace with a Delay does that: a repeat that finds
// the first still waiting replaces its payload and restarts its delay,
// and keeps its ID. (The fake clock stands in for time passing.)
func ExampleUnique_debounce() {
	fake := clock.NewFake(time.Time{})
	e, err := ringwal.Open("", ringwal.Options{Clock: fake})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	reindex := func(rev string) ringwal.ID {
		id, err := e.Enqueue(context.Background(), ringwal.Message{
			DedupID: "reindex-user-42",
			Unique:  ringwal.UniqueQueued, // once it runs, a new change asks again
			Replace: true,
			Delay:   10 * time.Second,
			Payload: []byte("user 42 at " + rev),
		})
		if err != nil {
			log.Fatal(err)
		}
		return id
	}
	first := reindex("rev 1")
	fake.Advance(4 * time.Second)
	second := reindex("rev 2")
	fake.Advance(4 * time.Second)
	third := reindex("rev 3")
	fmt.Println("one message:", first == second && second == third, e.Stats().Delayed)

	fake.Advance(9 * time.Second) // 17 s after the first change, 9 s after the last
	_, ok := e.TryDequeue()
	fmt.Println("ready 9s after the last change:", ok)

	fake.Advance(time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := e.Dequeue(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("reindex %s\n", d.Message.Payload)
	_ = e.Ack(d.Lease)
	// Output:
	// one message: true 1
	// ready 9s after the last change: false
	// reindex user 42 at rev 3
}

// An import job must not run twice at once, but may run again once it is
// done: UniqueLive refuses a repeat while the first is live (queued,
// running or waiting for a retry) and accepts one once it is acked,
// cancelled or dead-lettered. A refused repeat gets the running job's ID.
func ExampleUnique_importJob() {
	e, err := ringwal.Open("", ringwal.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	startImport := func() (ringwal.ID, error) {
		return e.Enqueue(context.Background(), ringwal.Message{
			DedupID: "import-customers.csv",
			Unique:  ringwal.UniqueLive,
			Payload: []byte("customers.csv"),
		})
	}
	id, _ := startImport()
	d, _ := e.TryDequeue() // the import is running

	again, err := startImport()
	fmt.Println("while running:", errors.Is(err, ringwal.ErrDuplicate), again == id)

	_ = e.Ack(d.Lease) // done
	next, err := startImport()
	fmt.Println("once done:", err == nil, next != id)
	// Output:
	// while running: true true
	// once done: true true
}
