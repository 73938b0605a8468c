package breaker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The cause given with the failure that opens a breaker is kept for
// TripCause, whether the breaker trips closed or re-opens from half-open;
// failures that trip nothing leave it alone.
func TestTripCauseIsTheFailureThatOpenedTheBreaker(t *testing.T) {
	h := newHarness(t, Options{ConsecutiveFailures: 2, OpenTimeout: time.Second})
	_, ok := h.s.TripCause("k")
	assert.False(t, ok, "unknown key")

	tk, _ := h.s.Allow("k")
	h.s.Fail(tk, 7)
	_, ok = h.s.TripCause("k")
	assert.False(t, ok, "one failure of two: not open yet")
	tk, _ = h.s.Allow("k")
	h.s.Fail(tk, 3)
	require.Equal(t, Open, h.s.State("k"))
	cause, ok := h.s.TripCause("k")
	assert.True(t, ok)
	assert.Equal(t, uint8(3), cause, "the failure that tripped it")

	h.clk.Advance(time.Second)
	tk, ok = h.s.Allow("k")
	require.True(t, ok)
	assert.True(t, tk.IsProbe(), "admitted half-open")
	h.s.Fail(tk, 5)
	require.Equal(t, Open, h.s.State("k"))
	cause, _ = h.s.TripCause("k")
	assert.Equal(t, uint8(5), cause, "a failed probe re-opens it with its own cause")

	h.clk.Advance(2 * time.Second)
	tk, _ = h.s.Allow("k")
	h.s.Done(tk, true)
	require.Equal(t, Closed, h.s.State("k"))
	tk, _ = h.s.Allow("k")
	assert.False(t, tk.IsProbe(), "admitted closed")
	h.s.Fail(tk, 9) // does not trip
	cause, ok = h.s.TripCause("k")
	assert.True(t, ok)
	assert.Equal(t, uint8(5), cause, "kept until the next trip")
}
