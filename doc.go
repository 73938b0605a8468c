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
// The runnable examples go further: Example (priorities), ExampleEngine_Run,
// ExampleEngine_Nack (retries), ExampleEngine_Redrive (dead letters),
// ExampleOpen_durable (restarts), Example_failingDownstreams (breakers and
// held messages), Example_keys, ExampleEngine_Queue (named queues),
// ExampleEngine_AddSchedule, ExampleUnique_debounce, ExampleChain
// (middleware), ExampleEngine_RedriveMatching and ExampleEngine_WaitIdle
// (bulk verbs and waiting), Example_testRetryTimingWithFakeClock. README.md
// is the tour; ARCHITECTURE.md maps each mechanism to the one file that
// owns it.
//
// The root package owns the public API (Engine, Message, Options), the
// record lifecycle, the journal (log records and their replay), recovery,
// checkpoints and Stats. It does not own the data structures below it
// (ring, sched, wal, classify, breaker, dlq, the dead-letter store in
// internal/dlqstore, clock) nor any adapter: the HTTP admin API and web
// console live in package admin, the Prometheus collector in package prom,
// and the root imports neither net/http nor client_golang. Its exported
// names are chiefly the engine (Open, Engine and its methods, Options, Queue,
// QueueOptions), what goes in and comes out (Message, ID, Delivery, Lease,
// Info, State, DeadLetter, Filter), the policies (Priority, KeyPolicy,
// Unique, Schedule, Middleware), Stats and its parts, and the sentinel
// errors: everything a producer, a consumer or an operator calls.
//
// # Goroutines
//
// An Engine starts exactly these goroutines, and Close stops all of them:
//
//   - the housekeeper (housekeeper.go): the sched.Timers goroutine that owns
//     the timing wheel, fed through an MPSC ring; it makes delayed and
//     retried messages ready, expires TTLs and leases (by scanning the
//     records when the earliest lease is due: a timer per lease would cost
//     more than the delivery), releases held messages when their breaker
//     half-opens, calls OnDeadLetter, and runs the maintenance pass
//     (maintenance.go: dedup and retention sweeps, a dead-letter summary,
//     automatic checkpoints). With nothing due it sleeps;
//   - the clock ticker (coarseclock.go), which caches the wall clock every
//     millisecond for the hot path while the engine is used, and parks
//     when nobody read it for 16-32 ms (an idle engine costs no CPU),
//     unless Options.Clock is set;
//   - the WAL writer (package wal), unless the engine is memory-only, and
//     the WAL's gather timer, which writes in the writer's place what was
//     appended during an fsync (its function runs on a goroutine of its
//     own for a moment; Close stops the timer), and in Write and Buffered
//     modes the WAL's writeback goroutine, which starts the kernel's
//     writeback of the tail segment as it grows (internal/wal/writeback.go; the
//     writer stops it as it closes);
//   - Run's workers and one watcher per Run call that ends the handlers'
//     contexts when Close's grace runs out, while Run is running (Run owns
//     and waits for them).
//
// Open also uses short-lived helpers, each waited for before Open
// returns: two allocate the memory replay will fill while it starts, and
// replay stops them once it is done (reserve.go); the WAL's replay decodes
// the snapshot and the log a few chunks or batches ahead of the records
// being applied, on up to four goroutines (wal.Log.Replay; there
// replay.go's prepareRecord copies payloads and allocates slab chunks);
// restore allocates the tiers' rings and scans half the slab while it
// orders the messages it places, and publishes the plain ones in parts,
// one goroutine a part (restore.go).
//
// Every other piece of work runs on the caller's goroutine.
package ringwal
