// Package clock abstracts time so that every time-based piece of ringwal
// (timing wheel, breaker, leases, TTLs, backoff) can be driven by a fake,
// manually advanced clock in tests instead of sleeps.
//
// It owns the Clock interface, the real clock backed by package time, and
// Fake. It does not own any scheduling policy: callers decide what to do
// when a timer fires.
package clock
