// Package ringwaltest helps a user's tests of code that enqueues and
// handles ringwal messages, without sleeping and without a Run loop in
// the background.
//
// New opens a memory-only engine on a fake clock (clock.Fake), closed
// when the test ends. WorkOne works one ready message of a queue through
// a handler now, on the test's goroutine. It settles the message exactly
// as Run does: nil acks, an error nacks, a panic nacks as classify.Poison.
// It returns what the handler got, what it returned and where the message
// stands.
//
// RequireEnqueued, RequireEnqueuedN and RequireNotEnqueued check what was
// enqueued through the engine's read API (Engine.Messages). They check
// the queue, key, payload, headers, dedup ID and state. When a check
// fails, they fail the test with a list of what the engine does hold.
// Advance moves the fake clock and waits until the engine's timer
// goroutine has done what came due.
//
// The functions take a testing.TB and report through it (t.Helper, then
// t.Fatalf), so a failure points at the caller's line. Each is both a
// method of Harness (what New returns) and a function of the package that
// takes an engine. The function serves a test that opens its own engine,
// a durable one or one shared by several helpers.
//
// The root package does not import this one (nor package testing).
package ringwaltest
