// Package enginetest holds the helpers that the tests of the root package
// and of the packages built on it (admin, prom) share: opening an engine
// that closes with the test, and waiting for a delivery. It is imported
// by tests only; nothing in the engine depends on it.
package enginetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

// WaitFor is how long Dequeue waits, in real time, for a delivery.
const WaitFor = 5 * time.Second

// Open opens an engine on dir ("" for memory only) and closes it when the
// test ends.
func Open(t testing.TB, dir string, o ringwal.Options) *ringwal.Engine {
	t.Helper()
	e, err := ringwal.Open(dir, o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// Dequeue waits (real time, up to WaitFor) until a delivery is ready and
// returns it; the test fails if none is.
func Dequeue(t testing.TB, e *ringwal.Engine) ringwal.Delivery {
	t.Helper()
	var d ringwal.Delivery
	require.Eventually(t, func() bool {
		var ok bool
		d, ok = e.TryDequeue()
		return ok
	}, WaitFor, time.Millisecond, "no delivery became ready")
	return d
}
