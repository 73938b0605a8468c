package breaker

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestHugeOpenTimeout: an open timeout near the largest Duration
// ("stay open until Reset") must neither wrap the open timeout negative
// when it doubles nor wrap ReadyAt into the past, either of which lets
// calls through at once.
func TestHugeOpenTimeout(t *testing.T) {
	tests := []struct {
		name   string
		o      Options
		trips  int // trips in a row before the check
		closed time.Duration
	}{
		{"max open timeout", Options{OpenTimeout: math.MaxInt64, MaxOpenTimeout: math.MaxInt64}, 1, 0},
		{"doubling to an uncapped max", Options{OpenTimeout: time.Second, MaxOpenTimeout: math.MaxInt64}, 40, 0},
		{"doubling past half the range", Options{OpenTimeout: math.MaxInt64/2 + 1, MaxOpenTimeout: math.MaxInt64}, 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.ConsecutiveFailures = 1
			h := newHarness(t, tt.o)
			h.clk.Advance(time.Hour) // now > 0 inside the Set
			for i := range tt.trips {
				if i > 0 {
					// Force half-open without waiting: Reset would forget the
					// streak, so move the clock to ReadyAt instead when it is
					// reachable; otherwise the breaker must still be open.
					ra := h.s.ReadyAt("k")
					if ra.Sub(h.clk.Now()) > 100*365*24*time.Hour {
						break
					}
					h.clk.Set(ra)
				}
				if !h.call("k", false) {
					t.Fatalf("trip %d: the call was not admitted", i+1)
				}
				if got := h.s.State("k"); got != Open {
					t.Fatalf("after trip %d: state %v, want open (ReadyAt %v, now %v)", i+1, got, h.s.ReadyAt("k"), h.clk.Now())
				}
			}
			if _, ok := h.s.Allow("k"); ok {
				t.Fatalf("an open breaker with a huge timeout admitted a call (ReadyAt %v, now %v)", h.s.ReadyAt("k"), h.clk.Now())
			}
		})
	}
}

func TestOpenTimeoutSaturates(t *testing.T) {
	o := Options{OpenTimeout: time.Second, MaxOpenTimeout: math.MaxInt64}.withDefaults()
	prev := time.Duration(0)
	for streak := 1; streak < 200; streak++ {
		d := o.openTimeout(streak)
		if d < prev || d <= 0 {
			t.Fatalf("openTimeout(%d) = %v after %v", streak, d, prev)
		}
		prev = d
	}
}

// TestConcurrentProbeBound hammers one key from many goroutines on
// the real clock, with a short open timeout so that it cycles through
// every state, and checks that no half-open period ever has more than
// MaxProbes probes out at once, and that Keys never reports more.
func TestConcurrentProbeBound(t *testing.T) {
	const maxProbes = 3
	s := New(Options{
		ConsecutiveFailures: 2, FailureRate: 0.5, MinCalls: 4, Window: 20 * time.Millisecond,
		OpenTimeout: 200 * time.Microsecond, MaxOpenTimeout: time.Millisecond,
		MaxProbes: maxProbes, SuccessThreshold: 2, IdleTTL: time.Millisecond,
	})
	var mu sync.Mutex
	out := map[Ticket]int{} // a ticket is its breaker and generation
	var wg sync.WaitGroup
	deadline := time.Now().Add(300 * time.Millisecond)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 9))
			for i := 0; time.Now().Before(deadline); i++ {
				key := "k"
				if i%16 == 0 {
					key = "other" // makes new keys, which triggers sweeps
				}
				tk, ok := s.Allow(key)
				if !ok {
					continue
				}
				half := tk.b != nil && stateOf(tk.sg) == HalfOpen
				if half {
					mu.Lock()
					out[tk]++
					n := out[tk]
					mu.Unlock()
					if n > maxProbes {
						t.Errorf("%d probes out in half-open generation %d", n, tk.sg>>2)
					}
				}
				if r.IntN(50) == 0 {
					runtime.Gosched()
				}
				if half {
					mu.Lock()
					out[tk]--
					mu.Unlock()
				}
				switch r.IntN(3) {
				case 0:
					s.Done(tk, true)
				case 1:
					s.Done(tk, false)
				default:
					s.Release(tk)
				}
				if i%64 == 0 {
					for _, ks := range s.Keys() {
						if ks.Probes > maxProbes || ks.Probes < 0 {
							t.Errorf("Keys: %+v", ks)
						}
					}
				}
			}
		}()
	}
	wg.Wait()
}
