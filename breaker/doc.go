// Package breaker keeps one circuit breaker per downstream key ("slack",
// "api.example.com"), so that a target that keeps failing is left alone
// for a while instead of burning every message's attempts.
//
// It owns the per-key state machine: closed, open, half-open. It owns the
// trip rules: consecutive failures, or a failure rate over a rolling
// window. It owns the open timeout with exponential growth on repeated
// trips, half-open probing with generation tickets, state-change
// notification, and the eviction of idle keys.
//
// It does not own what a failure is (the engine decides, with
// classify.CountsAgainstBreaker), nor what happens to work refused while a
// breaker is open (the engine holds those messages until ReadyAt). It
// starts no goroutines: open breakers turn half-open lazily on the next
// Allow, and idle keys are swept on the call that creates a new key, or
// when the caller calls Sweep.
//
// The closed state counts over a rolling, bucketed window; it does not
// clear its counts every interval. Half-open bounds the probes in flight
// (MaxProbes) separately from the successes needed to close
// (SuccessThreshold). The open timeout doubles on each consecutive trip.
//
// Exported surface: Options, with its Default constants, is
// ringwal.Options.Breaker, the trip rules an application tunes. State and
// KeyState are what Stats reports of a key's breaker. Set, New and Ticket
// are the engine's, exported because the engine is another package.
package breaker
