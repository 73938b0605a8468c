package breaker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGobreakerSemantics checks, rule by rule, the behaviour documented
// for sony/gobreaker (README and godoc of github.com/sony/gobreaker, the
// Settings and Counts docs, and the TwoStepCircuitBreaker), and pins down
// where ringwal's breaker deliberately differs. Each case quotes the rule.
func TestGobreakerSemantics(t *testing.T) {
	tripOnce := func(h *harness) {
		for h.s.State("k") == Closed {
			require.True(t, h.call("k", false))
		}
	}
	tests := []struct {
		name string
		opt  Options
		run  func(t *testing.T, h *harness)
	}{
		{
			// gobreaker: "ReadyToTrip is called with a copy of Counts
			// whenever a request fails in the closed state. If ReadyToTrip
			// returns true, the CircuitBreaker will be placed into the
			// open state." Default: "returns true when the number of
			// consecutive failures is more than 5".
			// ringwal DIFFERS: trips at ConsecutiveFailures (default 5),
			// i.e. on the 5th failure, not the 6th.
			name: "trip on consecutive failures, checked on failure only",
			run: func(t *testing.T, h *harness) {
				for range 4 {
					h.call("k", false)
				}
				assert.Equal(t, Closed, h.s.State("k"))
				h.call("k", false)
				assert.Equal(t, Open, h.s.State("k"))
			},
		},
		{
			// gobreaker Counts: "CircuitBreaker clears the internal Counts
			// either on the change of the state or at the closed-state
			// intervals."
			// ringwal: counts are cleared on every state change; in the
			// closed state a rolling window ages calls out instead of an
			// Interval clearing them all at once.
			name: "counts cleared on state change",
			opt:  Options{ConsecutiveFailures: 3},
			run: func(t *testing.T, h *harness) {
				h.call("k", false)
				h.call("k", false)
				h.s.Reset("k") // not open: no-op, counts survive
				assert.Equal(t, 2, h.s.Keys()[0].ConsecutiveFailures)
				h.call("k", false)
				require.Equal(t, Open, h.s.State("k"))
				ks := h.s.Keys()[0]
				assert.Zero(t, ks.ConsecutiveFailures)
				assert.Zero(t, ks.Calls)
				h.clk.Advance(5 * time.Second)
				h.call("k", true) // closes: a new generation, counts from zero
				h.call("k", false)
				h.call("k", false)
				assert.Equal(t, Closed, h.s.State("k"), "failures before the trip do not count")
			},
		},
		{
			// gobreaker Counts: "Counts ignores the results of the requests
			// sent before clearing." (the generation check in afterRequest:
			// a result whose generation differs is dropped).
			name: "results from an older generation are ignored",
			run: func(t *testing.T, h *harness) {
				var early []Ticket
				for range 3 {
					tk, _ := h.s.Allow("k")
					early = append(early, tk)
				}
				tripOnce(h)
				h.clk.Advance(5 * time.Second)
				probe, ok := h.s.Allow("k")
				require.True(t, ok)
				for _, tk := range early {
					h.s.Done(tk, false)
				}
				assert.Equal(t, HalfOpen, h.s.State("k"), "stale failures did not re-open it")
				h.s.Done(probe, true)
				assert.Equal(t, Closed, h.s.State("k"))
			},
		},
		{
			// gobreaker: "Timeout is the period of the open state, after
			// which the state of the CircuitBreaker becomes half-open. If
			// Timeout is 0, the timeout value of the CircuitBreaker is set
			// to 60 seconds." Open requests fail with ErrOpenState.
			// ringwal DIFFERS: default 5s, doubling per consecutive trip
			// up to MaxOpenTimeout (1 min); the transition is lazy, as in
			// gobreaker (currentState is evaluated on each call).
			name: "open refuses, then becomes half-open after the timeout",
			run: func(t *testing.T, h *harness) {
				tripOnce(h)
				_, ok := h.s.Allow("k")
				assert.False(t, ok)
				h.clk.Advance(5*time.Second - 1)
				_, ok = h.s.Allow("k")
				assert.False(t, ok)
				h.clk.Advance(1)
				assert.Equal(t, HalfOpen, h.s.State("k"))
			},
		},
		{
			// gobreaker: "MaxRequests is the maximum number of requests
			// allowed to pass through when the CircuitBreaker is
			// half-open. If MaxRequests is 0, the CircuitBreaker allows
			// only 1 request." Extra requests get ErrTooManyRequests.
			// ringwal: MaxProbes (0 means 1) bounds probes in flight;
			// gobreaker bounds requests per half-open generation (see
			// sony/gobreaker#53) and needs MaxRequests consecutive
			// successes to close, which ringwal separates out as
			// SuccessThreshold.
			name: "half-open admits MaxProbes, 0 means 1",
			run: func(t *testing.T, h *harness) {
				tripOnce(h)
				h.clk.Advance(5 * time.Second)
				tk, ok := h.s.Allow("k")
				require.True(t, ok)
				_, ok = h.s.Allow("k")
				assert.False(t, ok, "too many requests")
				h.s.Done(tk, true)
			},
		},
		{
			// gobreaker onSuccess, half-open: "if
			// cb.counts.ConsecutiveSuccesses >= cb.maxRequests" then
			// closed.
			name: "half-open closes after enough successes",
			opt:  Options{MaxProbes: 2, SuccessThreshold: 2},
			run: func(t *testing.T, h *harness) {
				tripOnce(h)
				h.clk.Advance(5 * time.Second)
				a, _ := h.s.Allow("k")
				b, _ := h.s.Allow("k")
				h.s.Done(a, true)
				assert.Equal(t, HalfOpen, h.s.State("k"))
				h.s.Done(b, true)
				assert.Equal(t, Closed, h.s.State("k"))
			},
		},
		{
			// gobreaker onFailure, half-open: setState(StateOpen) on any
			// failure.
			name: "any failure in half-open re-opens",
			opt:  Options{MaxProbes: 3, SuccessThreshold: 3},
			run: func(t *testing.T, h *harness) {
				tripOnce(h)
				h.clk.Advance(5 * time.Second)
				a, _ := h.s.Allow("k")
				b, _ := h.s.Allow("k")
				h.s.Done(a, true)
				h.s.Done(b, false)
				assert.Equal(t, Open, h.s.State("k"))
				assert.Equal(t, h.clk.Now().Add(10*time.Second), h.s.ReadyAt("k"), "ringwal: the timeout grew")
			},
		},
		{
			// gobreaker: "OnStateChange is called whenever the state of
			// the CircuitBreaker changes."
			// ringwal: also called for every change, outside the locks,
			// in order.
			name: "OnStateChange on every change",
			run: func(t *testing.T, h *harness) {
				tripOnce(h)
				h.clk.Advance(5 * time.Second)
				h.call("k", false)
				h.clk.Advance(10 * time.Second)
				h.call("k", true)
				assert.Equal(t, []string{
					"k:closed->open", "k:open->half-open", "k:half-open->open",
					"k:open->half-open", "k:half-open->closed",
				}, h.takeEvents())
			},
		},
		{
			// gobreaker TwoStepCircuitBreaker: "Allow checks if a new
			// request can proceed. It returns a callback that should be
			// used to register the success or failure in a separate step."
			// ringwal: Allow returns a Ticket; Done(ticket, success) is
			// the callback. IsSuccessful's role (which errors count) is
			// the engine's, via classify.CountsAgainstBreaker; Release is
			// gobreaker v2's "excluded" error: it counts as neither.
			name: "two-step: Allow then Done, Release counts nothing",
			opt:  Options{ConsecutiveFailures: 2},
			run: func(t *testing.T, h *harness) {
				tk, _ := h.s.Allow("k")
				h.s.Done(tk, false)
				tk, _ = h.s.Allow("k")
				h.s.Release(tk)
				assert.Equal(t, 1, h.s.Keys()[0].ConsecutiveFailures, "Release neither failed nor reset the run")
				h.call("k", false)
				assert.Equal(t, Open, h.s.State("k"))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.run(t, newHarness(t, tt.opt))
		})
	}
}
