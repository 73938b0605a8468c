package ringwal_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
)

// Keys name downstream targets. Here one chat channel is ordered and
// paced, one target is paused by an operator, and a message is cancelled;
// every other key keeps flowing.
func Example_keys() {
	e, err := ringwal.Open("", ringwal.Options{
		KeyPolicy: func(key string) ringwal.KeyPolicy {
			if key == "slack:#ops" {
				// One at a time, in order, at most 1 message a second.
				return ringwal.KeyPolicy{Ordered: true, Rate: 1, Burst: 1}
			}
			return ringwal.KeyPolicy{}
		},
	})
	if err != nil {
		panic(err)
	}
	defer e.Close()
	ctx := context.Background()
	enqueue := func(key, text string) ringwal.ID {
		id, err := e.Enqueue(ctx, ringwal.Message{Key: key, Payload: []byte(text)})
		if err != nil {
			panic(err)
		}
		return id
	}
	enqueue("slack:#ops", "deploy started")
	second := enqueue("slack:#ops", "deploy finished")
	enqueue("api.example.com", "webhook")
	_ = e.PauseKey("discord", time.Time{}) // until ResumeKey
	enqueue("discord", "held back")
	spam := enqueue("sms", "do not send")
	_ = e.Cancel(spam)

	for {
		d, ok := e.TryDequeue()
		if !ok {
			break
		}
		fmt.Printf("%s: %s\n", d.Message.Key, d.Message.Payload)
		_ = e.Ack(d.Lease)
	}
	info, _ := e.Get(second)
	fmt.Println("second #ops message waits:", info.Waiting)
	_, err = e.Get(spam)
	fmt.Println("cancelled:", errors.Is(err, ringwal.ErrNotFound))

	// A 429 with Retry-After pauses its whole key, not just the message.
	enqueue("api.example.com", "rate limited")
	d, _ := e.TryDequeue()
	_ = e.Nack(d.Lease, classify.Mark(classify.After(errors.New("429"), time.Hour), classify.RateLimited))
	enqueue("api.example.com", "also waits")
	_, ok := e.TryDequeue()
	fmt.Println("api.example.com deliverable:", ok)
	// Unordered output:
	// slack:#ops: deploy started
	// api.example.com: webhook
	// second #ops message waits: rate
	// cancelled: true
	// api.example.com deliverable: false
}

// An operator counts what a purge would take, then purges exactly that:
// the count's mark keeps out dead letters that arrive meanwhile.
func ExampleEngine_CountDeadLetters() {
	e, _ := ringwal.Open("", ringwal.Options{})
	defer e.Close()
	ctx := context.Background()
	reject := func() {
		_, _ = e.Enqueue(ctx, ringwal.Message{Key: "sms", Payload: []byte("hi")})
		d, _ := e.Dequeue(ctx)
		_ = e.Nack(d.Lease, classify.Mark(errors.New("invalid number"), classify.Permanent))
	}
	reject()
	reject()
	q := dlq.Query{Key: "sms"}
	n, mark, _ := e.CountDeadLetters(q)
	fmt.Println("to purge:", n)

	reject() // arrives after the count
	q.Through = mark
	purged, _ := e.PurgeDeadLetters(q)
	left, _ := e.DeadLetterKeys()
	fmt.Println("purged:", purged, "left:", left["sms"])
	// Output:
	// to purge: 2
	// purged: 2 left: 1
}
