// Package ringwal is a durable, in-process message and job engine: priority
// tiers on lock-free rings, a segmented write-ahead log replayed on start-up,
// leases, retries with backoff, per-key circuit breakers and per-category
// dead-letter queues.
//
//	e, err := ringwal.Open("data/jobs", ringwal.Options{}) // "" for memory only
//	if err != nil {
//		return err
//	}
//	defer e.Close()
//	id, err := e.Enqueue(ctx, ringwal.Message{Key: "customer-42", Payload: body})
//	// Workers: nil acks; an error retries with backoff, then dead-letters.
//	err = e.Run(ctx, 8, func(ctx context.Context, d ringwal.Delivery) error {
//		return send(ctx, d.Message.Payload)
//	})
//	// Or by hand: d, err := e.Dequeue(ctx); ...; err = e.Ack(d.Lease)
//
// # What it does
//
// Open returns an Engine over a data directory, or over memory only. A
// producer enqueues a Message with a priority, and optionally a delay, a
// deadline, a TTL, a DedupID and a Key that names its downstream target. A
// consumer leases a Delivery and acks or nacks it, or hands a handler to
// Run. A failure is classified, counted against the key's circuit breaker,
// retried with backoff, and finally moved to a dead-letter queue of its
// category. Every change is logged before it is acknowledged, so a process
// killed with kill -9 comes back with nothing it acknowledged lost.
//
// # Where to go next
//
// Each feature has a runnable example:
//   - Priorities and workers: Example, ExampleEngine_Run.
//   - Retries and dead letters: ExampleEngine_Nack, ExampleEngine_Redrive,
//     ExampleEngine_CountDeadLetters, ExampleEngine_RedriveMatching.
//   - Restarts and backups: ExampleOpen_durable, ExampleEngine_Checkpoint,
//     ExampleEngine_Backup.
//   - Batches: ExampleEngine_EnqueueBatch, ExampleEngine_DequeueBatch,
//     ExampleEngine_AckBatch.
//   - Long handlers and time limits: ExampleEngine_Extend,
//     ExampleMessage_ttl, ExampleMessage_deadline.
//   - Downstream targets: Example_keys, Example_failingDownstreams.
//   - Queues and topics: ExampleEngine_Queue, ExampleQueue_Pause,
//     ExampleEngine_Publish, ExampleEngine_DeleteQueue.
//   - Schedules and uniqueness: ExampleEngine_AddSchedule,
//     ExampleUnique_debounce, ExampleUnique_importJob.
//   - Inspection: ExampleEngine_Stats, ExampleEngine_Peek,
//     ExampleEngine_Messages, ExampleEngine_WaitIdle.
//   - Middleware: ExampleChain.
//   - Tests on a fake clock: Example_testRetryTimingWithFakeClock, and
//     package ringwaltest.
//
// README.md is the tour. Package admin serves the JSON API and the web
// console, package prom exports metrics, and cmd/ringwal is the operator's
// command line. ARCHITECTURE.md maps each mechanism to the one file that
// owns it, and lists the goroutines an Engine starts.
package ringwal
