// Package clock is the time source of ringwal: the Clock interface that
// Options.Clock and breaker.Options.Clock take, the real clock, and Fake,
// a clock that moves only when a test advances it.
//
// With a Fake a test of retry, delay, TTL or lease timing runs without
// sleeping: advance the clock past the due time and the engine acts as if
// that time had passed (see the root package's example
// Example_testRetryTimingWithFakeClock). A Clock of your own
// (two methods) works the same way.
//
// It owns no scheduling policy: callers decide what to do when a timer
// fires.
//
// Exported surface: Clock (with Timer and Ticker) is what Options.Clock
// takes; Real is the default; Fake and NewFake are for tests.
package clock
