// Package prom exports a ringwal engine's statistics as Prometheus
// metrics.
//
// It owns the Prometheus collector (NewCollector): the metric names, their
// labels and help texts, and the cap on per-key series. It owns nothing
// else: the figures come from the engine's public Stats, which the engine
// keeps with atomics and lock-free histograms of its own, so nothing from
// client_golang runs on the engine's hot path, and the root package
// imports neither client_golang nor net/http. It does not register the
// collector, serve /metrics or add runtime collectors: the caller does
// (cmd/ringwal serve shows how).
//
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(prom.NewCollector(e))
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// Collect calls Stats, Queues and Schedules once per scrape (cheap: their
// counts are kept, not scanned; Queues and Schedules cost a little per
// declared queue and schedule).
// Two engines on one registry need their own labels: register each through
// prometheus.WrapRegistererWith(prometheus.Labels{"engine": name}, reg).
// Unregister the collector when the engine closes if the registry
// outlives it (a closed engine's Stats still answer, frozen).
//
// Every metric is prefixed ringwal_; no label is unbounded (breaker keys,
// queues and schedules are capped, see below). Durations are in seconds.
//
// Counters (since Open):
//
//	ringwal_enqueued_total                      messages enqueued (duplicates not included)
//	ringwal_dequeued_total                      deliveries handed out (leases granted)
//	ringwal_acked_total                         deliveries acknowledged
//	ringwal_cancelled_total                     messages removed by Cancel
//	ringwal_nacked_total                        deliveries nacked by consumers (not lease expiries)
//	ringwal_retried_total                       failed deliveries scheduled for another attempt
//	ringwal_expired_total                       messages dead-lettered because their TTL passed
//	ringwal_dead_lettered_total{category}       messages moved to a dead-letter queue
//	ringwal_lease_expiries_total                leases that ended without an ack or nack
//	ringwal_duplicates_refused_total            enqueues refused as repeats of a DedupID
//	ringwal_backpressure_waits_total            enqueues that found no room (waited or got ErrFull)
//	ringwal_breaker_trips_total                 circuit breaker trips to open, all keys
//	ringwal_redriven_total                      dead letters redriven
//	ringwal_requeued_total                      messages requeued by an operator
//	ringwal_dead_letters_evicted_total          dead letters evicted at the store's bound (MaxDeadLetters), oldest first
//	ringwal_dead_letters_purged_total           dead letters purged (PurgeDeadLetters, PurgeDeadLetter) or removed by retention
//	ringwal_dead_letters_reviewed_total         dead letters marked reviewed (a re-review included)
//	ringwal_wal_written_bytes_total             framed bytes handed to write(2) (disk engines only)
//	ringwal_wal_failed_batches_total            WAL batches whose write or fsync failed (disk engines only)
//	ringwal_published_total                     Publish calls that put copies into the queues bound to the topic
//	ringwal_unrouted_publishes_total            Publish calls to a topic no queue binds (no copy made)
//	ringwal_queue_enqueued_total{queue}         messages enqueued per queue (published copies included)
//	ringwal_queue_acked_total{queue}            deliveries acknowledged per queue
//	ringwal_queue_dead_lettered_total{queue}    messages dead-lettered per queue
//	ringwal_schedule_runs_total{schedule}       runs per schedule (ticks, catch-ups, triggers), kept across restarts
//	ringwal_schedule_skipped_total{schedule}    ticks per schedule not run (overlap, catch-up, a full queue)
//
// Gauges:
//
//	ringwal_messages{state,priority}            live messages; state is pending, delayed, leased or held
//	ringwal_dead_letters{category}              dead letters held
//	ringwal_dead_letters_max                    the dead-letter store's bound (MaxDeadLetters)
//	ringwal_dead_letters_unreviewed             dead letters held that no operator has reviewed
//	ringwal_tier_utilization_ratio{priority}    fill ratio of each priority ring
//	ringwal_breaker_state{key}                  0 closed, 1 half-open, 2 open (see below)
//	ringwal_breakers{state}                     breakers by state (closed, open, half-open)
//	ringwal_waiting_messages{reason}            pending messages kept aside by their key (ordered, in-flight, rate, paused)
//	ringwal_keys{condition}                     keys paused, throttled (out of tokens, messages waiting) or at_cap
//	ringwal_key_waiting_messages{key}           messages kept aside per key (at most 50 keys, rest under "_other")
//	ringwal_delivery_paused                     1 while a Pause of all delivery is in force
//	ringwal_queues                              declared queues, the default queue included
//	ringwal_queue_messages{queue,state}         live messages per queue; state is pending, delayed, leased or held
//	ringwal_queue_dead_letters{queue}           dead letters held per queue
//	ringwal_queue_oldest_pending_age_seconds{queue}  age of the queue's longest-waiting pending message
//	ringwal_queue_paused{queue}                 1 while the queue is paused (Queue.Pause); for "_other", how many are
//	ringwal_oldest_pending_age_seconds          age of the longest-waiting pending message
//	ringwal_recovery_duration_seconds           how long Open took to recover (disk engines only)
//	ringwal_recovery_records                    log records Open replayed (disk engines only)
//	ringwal_recovery_torn_bytes                 bytes of torn log tail Open cut (disk engines only)
//	ringwal_closed                              1 once Close has begun
//	ringwal_wal_since_checkpoint_bytes          log bytes after the newest snapshot: what a restart replays (disk engines only)
//	ringwal_wal_disk_bytes                      bytes the log's segments and snapshots take (disk engines only)
//	ringwal_wal_last_checkpoint_timestamp_seconds  Unix time of the newest snapshot, 0 before the first (disk engines only)
//	ringwal_wal_unusable                        1 once the log is unusable (a failed fsync or repair; disk engines only)
//
// Histograms:
//
//	ringwal_wait_seconds                        enqueue (or becoming due) to dequeue, sampled
//	ringwal_handling_seconds                    dequeue to ack or nack, sampled
//	ringwal_enqueue_seconds                     an Enqueue call from claiming its record to returning, sampled
//	ringwal_wal_batch_records                   records per WAL batch (disk engines only)
//	ringwal_wal_write_seconds                   time in write(2) per WAL batch (disk engines only)
//	ringwal_wal_fsync_seconds                   time in fsync per WAL sync (disk engines only)
//
// "Disk engines only" is Stats.Durable: a memory-only engine has no log
// and no recovery, and exports none of those series.
//
// ringwal_breaker_state exports at most MaxBreakerKeys keys one by one,
// those not closed first, then by name; the remaining keys (and any key
// that is not valid UTF-8 or is literally "_other") are summed under
// key="_other", so sum(ringwal_breaker_state) does not depend on the cap
// and key="_other" is above 0 exactly when one of them is not closed.
//
// The queue label: the default queue (Message.Queue "") is
// queue="_default" (DefaultQueueLabel); names starting with "_" are the
// engine's, so no named queue can be mistaken for it or for "_other". At
// most MaxQueueSeries (50) named queues are exported one by one, the rest
// summed under queue="_other" (OtherQueueLabel): the gauges add up, the
// oldest pending age is the oldest of them. The choice sticks, so that no
// counter series goes back. A named queue gets a series of its own when
// the collector first sees it while fewer than 50 have one; at the first
// scrape, that is the first 50 by name. It keeps the series until it is
// deleted, which frees its place for a queue first seen later. A queue
// first seen with every place taken stays under "_other" while it lives.
// Once it is deleted, its totals as of the last scrape stay in "_other"'s
// counters; what it counted after that scrape is not added. A queue deleted and
// declared again is a new queue: its own series restarts from 0, which
// Prometheus reads as a counter reset.
//
// The schedule label is capped the same way. At most MaxScheduleSeries
// (50) schedules are exported one by one: the first the collector sees,
// a choice that sticks until the schedule is removed. The rest are summed
// under schedule="_other" (OtherScheduleLabel), which keeps the totals of
// those removed. A schedule's counts are the engine's ScheduleInfo.Runs
// and Skipped. They are logged, and kept across restarts and across an
// AddSchedule that replaces the schedule. One removed and added again
// starts from 0.
//
// The default queue's totals are the engine's less the named queues'
// (QueueStats), deleted named queues' totals taken away too. A scrape
// racing with named queues' traffic reads them a little low, so the
// collector never exports one below the last it exported.
//
// The wait, handling and enqueue histograms measure one message in 64 (chosen by
// ID, so that the hot path reads the precise clock rarely): their _count
// is that fraction of the deliveries; their quantiles are unbiased. Their
// buckets are powers of two from 1µs; the last finite one is 2^26µs
// (67 s).
//
// Enqueued, dequeued and acked are derived from other counters at scrape
// time; a scrape racing with an enqueue or a settle may see them a little
// behind (never ahead), and they never go backwards.
//
// Exported surface: NewCollector, and the constants that name the label
// values a dashboard queries (the default queue's label, the _other series
// of capped queues, schedules and breaker keys, and the caps).
package prom
