package ringwal_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/ringwal/ringwal"
)

// Checkpoint writes a snapshot of the live state and drops the log it
// covers, so that disk use follows the live messages, not the traffic,
// and a restart replays the snapshot instead of the history. It runs by
// itself once the log passes Options.CheckpointBytes (64 MiB by default);
// a call of your own suits a quiet moment after a large drain, or just
// before a Backup, whose copy it makes smaller.
func ExampleEngine_Checkpoint() {
	dir, err := os.MkdirTemp("", "ringwal-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	e, err := ringwal.Open(dir, ringwal.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer func() { e.Close() }()

	// A burst of 1,000 messages, all but 10 of them handled since.
	ctx := context.Background()
	var ms []ringwal.Message
	for i := range 1000 {
		ms = append(ms, ringwal.Message{Payload: fmt.Appendf(nil, "event %d", i)})
	}
	if _, err := e.EnqueueBatch(ctx, ms); err != nil {
		log.Fatal(err)
	}
	for handled := 0; handled < 990; {
		batch, err := e.DequeueBatch(ctx, min(100, 990-handled))
		if err != nil {
			log.Fatal(err)
		}
		leases := make([]ringwal.Lease, len(batch))
		for i, d := range batch {
			leases[i] = d.Lease
		}
		if err := e.AckBatch(leases); err != nil {
			log.Fatal(err)
		}
		handled += len(batch)
	}

	before := e.Stats().WAL
	if err := e.Checkpoint(); err != nil {
		log.Fatal(err)
	}
	after := e.Stats().WAL
	fmt.Println("log since the snapshot: some before:", before.SinceCheckpoint > 0, "after:", after.SinceCheckpoint)
	fmt.Println("disk use shrank:", after.DiskBytes < before.DiskBytes)
	fmt.Println("last checkpoint taken: before", !before.LastCheckpoint.IsZero(), "after", !after.LastCheckpoint.IsZero())

	// A restart reads the snapshot: the 10 live messages, and no log
	// records after it.
	if err := e.Close(); err != nil {
		log.Fatal(err)
	}
	e, err = ringwal.Open(dir, ringwal.Options{})
	if err != nil {
		log.Fatal(err)
	}
	s := e.Stats()
	fmt.Println("after reopen: pending", s.Pending, "records replayed after the snapshot", s.Recovery.Records)
	// Output:
	// log since the snapshot: some before: true after: 0
	// disk use shrank: true
	// last checkpoint taken: before false after true
	// after reopen: pending 10 records replayed after the snapshot 0
}
