package ringwal

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/dlq"
	"github.com/ringwal/ringwal/internal/wal"
)

// The helpers the internal tests (package ringwal) share. The black-box
// tests have theirs in helpers_test.go.

var ctxBG = context.Background()

// openEngine opens an engine on dir ("" for memory only) and closes it
// when the test ends.
func openEngine(t testing.TB, dir string, o Options) *Engine {
	t.Helper()
	e, err := Open(dir, o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// openFake is openEngine on a fresh fake clock, which it returns.
func openFake(t testing.TB, dir string, o Options) (*Engine, *clock.Fake) {
	t.Helper()
	fake := clock.NewFake(time.Time{})
	o.Clock = fake
	return openEngine(t, dir, o), fake
}

// "Log, then make visible, then wait": what a mutation makes visible
// before its record is durable, seen with the log writer held.

// holdWriter makes e's log writer stop after its next batch until the
// returned release is called: records appended meanwhile wait in memory.
func holdWriter(t *testing.T, e *Engine) (release func()) {
	t.Helper()
	held, gate := make(chan struct{}), make(chan struct{})
	first := true
	hook := func(wal.BatchInfo) {
		if first {
			first = false
			close(held)
			<-gate
		}
	}
	e.afterBatchForTest.Store(&hook)
	// A batch of its own: once it is written the writer waits at the gate
	// (whether before or after it releases that batch's waiter).
	go func() { _, _ = e.TryEnqueue(Message{Payload: []byte("gate")}) }()
	<-held
	released := false
	release = func() {
		if !released {
			released = true
			close(gate)
		}
	}
	t.Cleanup(release)
	return release
}

// drain takes every deliverable message and returns their payloads.
func drain(e *Engine) []string {
	var got []string
	for {
		d, ok := e.TryDequeue()
		if !ok {
			return got
		}
		got = append(got, string(d.Message.Payload))
	}
}

// waitFor polls cond until it holds. The deadline only turns a hang into
// a failure; nothing is asserted about how long the wait takes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
		time.Sleep(20 * time.Microsecond)
	}
}

func failureAt(now int64) dlq.Failure {
	return dlq.Failure{At: time.Unix(0, now), Category: classify.Permanent, Error: "x"}
}
