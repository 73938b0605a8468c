// Package dlqstore holds dead letters: messages the engine gave up on, one
// Store per engine, indexed per failure category. Only the engine (the
// root package) uses it; what users see of dead letters (Entry, Query,
// Review, the errors) is package dlq, whose names this package aliases.
//
// It owns the in-memory indexes that answer a dlq.Query (category, key,
// queue, dead-letter time window, review state, cursor paging), operator
// review notes, removal for redrive and purge, the retention sweep that
// drops old reviewed entries, and Evict, which bounds the store (oldest
// reviewed entries first, then the oldest unreviewed ones). Reads by ID and
// counts per key, queue or category are O(1); CountQuery counts without
// copying, and its mark (Query.Through) lets a purge take exactly what was
// counted.
//
// It does not own durability or the message type: the engine writes every
// Add, MarkReviewed, Remove, Purge and Sweep to its write-ahead log and
// replays them into a fresh Store on start-up, and Store is generic over the
// message type M so that this package never imports the root package. It
// starts no goroutines: retention runs when the caller calls Sweep.
//
// Every Store method is safe for concurrent use: reads share a
// sync.RWMutex, writes hold it exclusively; Len, Count, Counts, QueueLen and
// QueueCounts read counts the writes keep, without the lock. A text search
// (Query.Text, in Query and CountQuery), which reads every entry the other
// filters leave, lets go of the lock between chunks of entries, so that a
// dead-lettering never waits for a whole walk: it reports the entries
// there when it started, each once, in order, less those removed before
// it reached them.
package dlqstore
