package ringwal_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/ringwal/ringwal"
)

// EnqueueBatch writes its messages to the log in one write and waits for
// it once: in Fsync mode one fsync for the batch, where Enqueue would wait
// for one per message. A repeated DedupID does not fail the batch: the
// repeat gets the first message's ID, the others are added, and the error
// wraps ErrDuplicate.
func ExampleEngine_EnqueueBatch() {
	e, done := openInTempDir(ringwal.Options{Durability: ringwal.Fsync})
	defer done()

	ids, err := e.EnqueueBatch(context.Background(), []ringwal.Message{
		{DedupID: "order-1", Payload: []byte("order 1")},
		{DedupID: "order-2", Payload: []byte("order 2")},
		{DedupID: "order-1", Payload: []byte("order 1 again")},
		{DedupID: "order-3", Payload: []byte("order 3")},
	})
	if err != nil && !errors.Is(err, ringwal.ErrDuplicate) {
		log.Fatal(err)
	}
	fmt.Println("error:", err)
	fmt.Println("IDs returned:", len(ids), "repeat has the first's ID:", ids[2] == ids[0])
	fmt.Println("pending:", e.Stats().Pending)
	// Output:
	// error: 1 of 4 messages: ringwal: duplicate message
	// IDs returned: 4 repeat has the first's ID: true
	// pending: 3
}

// A batch consumer: DequeueBatch blocks for the first message only, then
// takes what else is ready, up to max, so a consumer gets full batches
// under load and a short one, never a wait, when the queue runs dry.
// AckBatch then settles the whole batch with one wait for the log.
func ExampleEngine_DequeueBatch() {
	e, err := ringwal.Open("", ringwal.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	var ms []ringwal.Message
	for i := 1; i <= 5; i++ {
		ms = append(ms, ringwal.Message{Payload: fmt.Appendf(nil, "row %d", i)})
	}
	if _, err := e.EnqueueBatch(ctx, ms); err != nil {
		log.Fatal(err)
	}

	for handled := 0; handled < len(ms); {
		batch, err := e.DequeueBatch(ctx, 2)
		if err != nil {
			log.Fatal(err)
		}
		leases := make([]ringwal.Lease, 0, len(batch))
		for _, d := range batch {
			fmt.Printf("%s ", d.Message.Payload) // the batch's work, e.g. one bulk insert
			leases = append(leases, d.Lease)
		}
		fmt.Println("| acked a batch of", len(batch))
		if err := e.AckBatch(leases); err != nil {
			log.Fatal(err)
		}
		handled += len(batch)
	}
	fmt.Println("acked:", e.Stats().Acked)
	// Output:
	// row 1 row 2 | acked a batch of 2
	// row 3 row 4 | acked a batch of 2
	// row 5 | acked a batch of 1
	// acked: 5
}

// One stale lease does not fail the batch: AckBatch acks every lease that
// is still valid and its error, wrapping ErrStaleLease, names the stale
// ones by their index in the slice. Here an operator cancelled one of the
// messages while the consumer worked on it.
func ExampleEngine_AckBatch() {
	e, err := ringwal.Open("", ringwal.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	_, err = e.EnqueueBatch(ctx, []ringwal.Message{
		{Payload: []byte("a")}, {Payload: []byte("b")}, {Payload: []byte("c")},
	})
	if err != nil {
		log.Fatal(err)
	}
	batch, err := e.DequeueBatch(ctx, 3)
	if err != nil {
		log.Fatal(err)
	}

	if err := e.Cancel(batch[1].ID); err != nil { // "b" is no longer wanted
		log.Fatal(err)
	}

	leases := []ringwal.Lease{batch[0].Lease, batch[1].Lease, batch[2].Lease}
	err = e.AckBatch(leases)
	fmt.Println(err)
	fmt.Println("stale:", errors.Is(err, ringwal.ErrStaleLease))
	s := e.Stats()
	fmt.Println("acked:", s.Acked, "cancelled:", s.Cancelled, "leased:", s.Leased)
	// Output:
	// ringwal: ack batch: 1 of 3 leases stale (indexes 1): ringwal: stale lease
	// stale: true
	// acked: 2 cancelled: 1 leased: 0
}
