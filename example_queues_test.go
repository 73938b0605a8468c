package ringwal_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/ringwal/ringwal"
)

// Named queues: each kind of work has its own queue, with its own workers,
// lease timeout, retry policies and cap, over the engine's one log.
// Engine.Dequeue and Run serve the default queue ("").
func ExampleEngine_Queue() {
	e, err := ringwal.Open("", ringwal.Options{
		Queues: map[string]ringwal.QueueOptions{
			"emails":   {LeaseTimeout: time.Minute},
			"webhooks": {MaxMessages: 10_000},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	ctx := context.Background()
	emails := e.Queue("emails")
	if _, err := emails.Enqueue(ctx, ringwal.Message{Payload: []byte("welcome mail")}); err != nil {
		log.Fatal(err)
	}
	// Message.Queue routes through the engine just as well.
	if _, err := e.Enqueue(ctx, ringwal.Message{Queue: "webhooks", Payload: []byte("POST /hook")}); err != nil {
		log.Fatal(err)
	}

	d, _ := e.Queue("webhooks").TryDequeue()
	fmt.Printf("%s from %s\n", d.Message.Payload, d.Message.Queue)
	_ = e.Ack(d.Lease)
	_, ok := e.TryDequeue()
	fmt.Println("default queue has work:", ok)
	fmt.Println("emails pending:", emails.Stats().Pending)
	// Output:
	// POST /hook from webhooks
	// default queue has work: false
	// emails pending: 1
}

// Pausing one queue holds back its deliveries while the others go on.
func ExampleQueue_Pause() {
	e, err := ringwal.Open("", ringwal.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	billing, reports := e.Queue("billing"), e.Queue("reports")
	_, _ = billing.TryEnqueue(ringwal.Message{Payload: []byte("invoice")})
	_, _ = reports.TryEnqueue(ringwal.Message{Payload: []byte("weekly")})

	_ = billing.Pause(time.Time{}) // until Resume
	_, ok := billing.TryDequeue()
	fmt.Println("billing delivers while paused:", ok)
	d, ok := reports.TryDequeue()
	fmt.Println("reports delivers:", ok, string(d.Message.Payload))

	_ = billing.Resume()
	d, ok = billing.TryDequeue()
	fmt.Println("billing after Resume:", ok, string(d.Message.Payload))
	// Output:
	// billing delivers while paused: false
	// reports delivers: true weekly
	// billing after Resume: true invoice
}

// Topics fan a message out: every queue bound to the topic gets its own
// copy, with its own ID and fate. One queue per consumer group.
func ExampleEngine_Publish() {
	e, err := ringwal.Open("", ringwal.Options{
		Queues: map[string]ringwal.QueueOptions{
			"audit":   {Topics: []string{"orders"}},
			"billing": {Topics: []string{"orders"}},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	ids, err := e.Publish(context.Background(), "orders", ringwal.Message{Payload: []byte("order 42")})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("copies:", len(ids))
	for _, q := range []string{"audit", "billing"} {
		d, _ := e.Queue(q).TryDequeue()
		fmt.Printf("%s got %q\n", q, d.Message.Payload)
	}
	ids, _ = e.Publish(context.Background(), "nobody-listens", ringwal.Message{})
	fmt.Println("unrouted copies:", len(ids), "counted:", e.Stats().UnroutedPublishes)
	// Output:
	// copies: 2
	// audit got "order 42"
	// billing got "order 42"
	// unrouted copies: 0 counted: 1
}

// A queue can be deleted once it holds nothing; the refusal says what it
// still holds.
func ExampleEngine_DeleteQueue() {
	e, err := ringwal.Open("", ringwal.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	_ = e.DeclareQueue("scratch", ringwal.QueueOptions{})
	_, _ = e.Queue("scratch").TryEnqueue(ringwal.Message{})
	fmt.Println(e.DeleteQueue("scratch"))
	d, _ := e.Queue("scratch").TryDequeue()
	_ = e.Ack(d.Lease)
	fmt.Println(e.DeleteQueue("scratch"))
	fmt.Println(len(e.Queues()), "queue left: the default one")
	// Output:
	// ringwal: invalid argument: queue "scratch" holds 1 live messages and 0 dead letters
	// <nil>
	// 1 queue left: the default one
}
