package ringwal_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/ringwaltest"
)

// Debounce: every change to user 42 asks for a reindex, but a burst of
// changes should run it once, a while after the last change, with the
// last change's data. Replace with a Delay does that: a repeat that finds
// the first still waiting replaces its payload and restarts its delay,
// and keeps its ID. (ringwaltest's fake clock stands in for time passing.)
func ExampleUnique_debounce() {
	t := newExampleT() // in a test: your *testing.T
	defer t.cleanup()
	h := ringwaltest.New(t, ringwaltest.Options{})

	reindex := func(rev string) ringwal.ID {
		id, err := h.Enqueue(context.Background(), ringwal.Message{
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
	h.Advance(4 * time.Second)
	second := reindex("rev 2")
	h.Advance(4 * time.Second)
	third := reindex("rev 3")
	queued := h.RequireEnqueued(ringwaltest.Match{DedupID: "reindex-user-42", States: []ringwal.State{ringwal.Delayed}})
	fmt.Printf("one message: %v, %s, due in %v\n", first == second && second == third && queued.ID == first,
		queued.Message.Payload, queued.NextAt.Sub(h.Clock.Now()))

	h.Advance(9 * time.Second) // 17 s after the first change, 9 s after the last
	fmt.Println("9s after the last change:", h.RequireEnqueued(ringwaltest.Match{DedupID: "reindex-user-42"}).State)

	h.Advance(time.Second)
	h.WorkOne("", func(_ context.Context, d ringwal.Delivery) error {
		fmt.Printf("reindex %s\n", d.Message.Payload)
		return nil
	})
	// Output:
	// one message: true, user 42 at rev 3, due in 10s
	// 9s after the last change: delayed
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
