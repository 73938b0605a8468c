package ringwal

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/clock"
)

// The helpers the internal tests (package ringwal) share. The black-box
// tests have theirs in engine_test.go.

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
