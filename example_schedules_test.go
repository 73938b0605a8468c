package ringwal_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/clock"
)

// A nightly report: a schedule enqueues a message into the reports queue
// at 03:00 New York time every night. It is logged, so a service adds it
// at every start (an equal schedule changes nothing) and a night missed
// while the service was down runs once when it is back (CatchUpOne).
// Here a fake clock stands in for the nights.
func ExampleEngine_AddSchedule() {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		log.Fatal(err)
	}
	fake := clock.NewFake(time.Date(2026, 3, 2, 12, 0, 0, 0, ny))
	e, err := ringwal.Open("", ringwal.Options{Clock: fake})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	err = e.AddSchedule(ringwal.Schedule{
		Name:    "nightly-report",
		Spec:    "CRON_TZ=America/New_York 0 3 * * *",
		CatchUp: ringwal.CatchUpOne,
		Message: ringwal.Message{Queue: "reports", Payload: []byte(`{"report":"sales"}`)},
	})
	if err != nil {
		log.Fatal(err)
	}
	next := e.Schedules()[0].Next
	fmt.Println("next run:", next.In(ny).Format("Mon Jan 2 15:04 MST"))

	fake.Advance(next.Sub(fake.Now()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := e.Queue("reports").Dequeue(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s for the tick of %s\n", d.Message.Payload, d.Message.Headers[ringwal.TickHeader])
	if err := e.Ack(d.Lease); err != nil {
		log.Fatal(err)
	}
	// Output:
	// next run: Tue Mar 3 03:00 EST
	// {"report":"sales"} for the tick of 2026-03-03T08:00:00Z
}
