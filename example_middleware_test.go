package ringwal_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/ringwal/ringwal"
)

// Middleware wraps every attempt of a handler: here one that counts
// attempts and HandlerTimeout, which bounds each attempt. The enqueue
// hook stamps the sender on every message before it is logged, so the
// header survives a restart and reaches the handler.
func ExampleChain() {
	e, err := ringwal.Open("", ringwal.Options{
		OnEnqueue: func(_ context.Context, m *ringwal.Message) {
			if m.Headers == nil {
				m.Headers = map[string]string{}
			}
			m.Headers["sent-by"] = "billing"
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	attempts := 0
	counting := func(next ringwal.Handler) ringwal.Handler {
		return func(ctx context.Context, d ringwal.Delivery) error {
			attempts++
			return next(ctx, d)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	handle := func(ctx context.Context, d ringwal.Delivery) error {
		fmt.Printf("%s from %s\n", d.Message.Payload, d.Message.Headers["sent-by"])
		cancel() // one message is the whole example
		return nil
	}

	if _, err := e.Enqueue(ctx, ringwal.Message{Payload: []byte("invoice 7")}); err != nil {
		log.Fatal(err)
	}
	h := ringwal.Chain(handle, counting, ringwal.HandlerTimeout(5*time.Second))
	if err := e.Run(ctx, 1, h); err != nil && err != context.Canceled {
		log.Fatal(err)
	}
	fmt.Println("attempts:", attempts)
	// Output:
	// invoice 7 from billing
	// attempts: 1
}
