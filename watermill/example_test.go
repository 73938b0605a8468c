package watermill_test

import (
	"context"
	"fmt"
	"log"

	wm "github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ringwal/ringwal"
	rwm "github.com/ringwal/ringwal/watermill"
)

// A Publisher and two consumer groups over one engine: each group gets its
// own copy of every message published after it subscribed.
func Example() {
	e, err := ringwal.Open("", ringwal.Options{}) // a directory makes it durable
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	pub, _ := rwm.NewPublisher(e, rwm.PublisherConfig{})
	billing, _ := rwm.NewSubscriber(e, rwm.SubscriberConfig{ConsumerGroup: "billing"})
	audit, _ := rwm.NewSubscriber(e, rwm.SubscriberConfig{ConsumerGroup: "audit"})
	defer billing.Close()
	defer audit.Close()

	bills, _ := billing.Subscribe(context.Background(), "orders")
	audits, _ := audit.Subscribe(context.Background(), "orders")

	msg := message.NewMessage(wm.NewUUID(), []byte(`{"order":42}`))
	msg.Metadata.Set("kind", "order.created")
	if err := pub.Publish("orders", msg); err != nil {
		log.Fatal(err)
	}

	m := <-bills
	fmt.Println("billing:", string(m.Payload), m.Metadata.Get("kind"))
	m.Ack()
	m = <-audits
	fmt.Println("audit:", string(m.Payload))
	m.Ack()
	// Output:
	// billing: {"order":42} order.created
	// audit: {"order":42}
}

// A watermill router handles a topic through ringwal: an error returned by
// the handler is a Nack, redelivered at once (the router's Retry
// middleware, if any, decides how often), and the lease is renewed while
// the handler runs.
func Example_router() {
	e, err := ringwal.Open("", ringwal.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	pub, _ := rwm.NewPublisher(e, rwm.PublisherConfig{})
	sub, _ := rwm.NewSubscriber(e, rwm.SubscriberConfig{ConsumerGroup: "mailer"})
	// Bind the group's queue before publishing: a topic keeps nothing for
	// a group that has not subscribed yet.
	if err := sub.SubscribeInitialize("signups"); err != nil {
		log.Fatal(err)
	}
	_ = pub.Publish("signups", message.NewMessage(wm.NewUUID(), []byte("ada@example.com")))

	router, err := message.NewRouter(message.RouterConfig{}, wm.NopLogger{})
	if err != nil {
		log.Fatal(err)
	}
	done := make(chan struct{})
	tries := 0
	router.AddConsumerHandler("welcome-mail", "signups", sub, func(m *message.Message) error {
		tries++
		if tries == 1 {
			return fmt.Errorf("smtp: try again") // nacked: delivered again at once
		}
		fmt.Printf("mailed %s on try %d\n", m.Payload, tries)
		close(done)
		return nil
	})
	go func() { _ = router.Run(context.Background()) }()
	<-done
	_ = router.Close()
	// Output:
	// mailed ada@example.com on try 2
}
