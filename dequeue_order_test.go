package ringwal_test

// Scheduling order: tiers and weights, strict priority, aging, earliest
// deadline first.

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

var allPriorities = []ringwal.Priority{ringwal.Critical, ringwal.High, ringwal.Normal, ringwal.Low, ringwal.Background}

func TestFirstPickIsHighestNonEmptyTier(t *testing.T) {
	cases := []struct {
		name  string
		tiers []ringwal.Priority // enqueued in this order, lowest first
		want  ringwal.Priority
	}{
		{"all five", []ringwal.Priority{ringwal.Background, ringwal.Low, ringwal.Normal, ringwal.High, ringwal.Critical}, ringwal.Critical},
		{"low and background", []ringwal.Priority{ringwal.Background, ringwal.Low}, ringwal.Low},
		{"gaps", []ringwal.Priority{ringwal.Background, ringwal.Normal, ringwal.High}, ringwal.High},
		{"normal only", []ringwal.Priority{ringwal.Normal}, ringwal.Normal},
	}
	for _, strict := range []bool{false, true} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/strict=%v", tc.name, strict), func(t *testing.T) {
				e, _ := memEngine(t, ringwal.Options{Strict: strict, AgingAfter: noAging})
				for _, p := range tc.tiers {
					for i := 0; i < 3; i++ {
						enqueueP(t, e, p, p.String())
					}
				}
				d := dequeue(t, e)
				assert.Equal(t, tc.want, d.Message.Priority, "first pick")
			})
		}
	}
}

func TestStrictPriorityOrder(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{Strict: true, AgingAfter: noAging})
	// Interleave the tiers so that enqueue order cannot explain the result.
	for i := 0; i < 4; i++ {
		for j := len(allPriorities) - 1; j >= 0; j-- {
			p := allPriorities[(j+i)%len(allPriorities)]
			enqueueP(t, e, p, fmt.Sprintf("%v-%d", p, i))
		}
	}
	prev := ringwal.Critical
	for i := 0; i < 4*len(allPriorities); i++ {
		d := dequeue(t, e)
		assert.LessOrEqual(t, d.Message.Priority, prev, "pick %d: %v after %v", i, d.Message.Priority, prev)
		prev = d.Message.Priority
	}
}

func TestWeightedShares(t *testing.T) {
	cases := []struct {
		name    string
		weights [5]int // zero = default 16,8,4,2,1
		share   [5]float64
	}{
		{"default 16:8:4:2:1", [5]int{}, [5]float64{16.0 / 31, 8.0 / 31, 4.0 / 31, 2.0 / 31, 1.0 / 31}},
		{"custom 1:1:1:1:1", [5]int{1, 1, 1, 1, 1}, [5]float64{.2, .2, .2, .2, .2}},
		{"custom 3:1:1:1:2", [5]int{3, 1, 1, 1, 2}, [5]float64{3.0 / 8, 1.0 / 8, 1.0 / 8, 1.0 / 8, 2.0 / 8}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			const perTier = 3100
			e, _ := memEngine(t, ringwal.Options{Weights: tc.weights, AgingAfter: noAging,
				TierCapacity: 1 << 12, MaxMessages: 1 << 16})
			for _, p := range allPriorities {
				ms := make([]ringwal.Message, perTier)
				for i := range ms {
					ms[i] = ringwal.Message{Priority: p}
				}
				_, err := e.EnqueueBatch(ctxBG, ms)
				require.NoError(t, err)
			}
			// Every tier stays backlogged for all of these picks.
			const picks = perTier
			var got [5]int
			for i := 0; i < picks; i++ {
				d, ok := e.TryDequeue()
				require.True(t, ok, "pick %d", i)
				got[int(ringwal.Critical-d.Message.Priority)]++
				require.NoError(t, e.Ack(d.Lease))
			}
			for i, p := range allPriorities {
				share := float64(got[i]) / picks
				assert.InDelta(t, tc.share[i], share, 0.02, "%v: %d of %d picks (want share %.3f)", p, got[i], picks, tc.share[i])
			}
			t.Logf("picks by tier (Critical..Background): %v", got)
		})
	}
}

// TestAging: a Background message is served despite Critical load once its
// tier has been unserved for AgingAfter.
func TestAging(t *testing.T) {
	cases := []struct {
		name string
		o    ringwal.Options
	}{
		{"strict", ringwal.Options{Strict: true}},
		// With weights 1000:1 smooth weighted round-robin would not pick
		// Background for about 500 picks.
		{"weighted", ringwal.Options{Weights: [5]int{1000, 1, 1, 1, 1}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.AgingAfter = 10 * time.Millisecond
			e, fake := memEngine(t, o)
			bg := enqueueP(t, e, ringwal.Background, "bg")
			ms := make([]ringwal.Message, 2000)
			for i := range ms {
				ms[i] = ringwal.Message{Priority: ringwal.Critical, Payload: []byte("crit")}
			}
			_, err := e.EnqueueBatch(ctxBG, ms)
			require.NoError(t, err)

			for i := 0; i < 20; i++ {
				d := dequeue(t, e)
				require.Equal(t, ringwal.Critical, d.Message.Priority, "pick %d before aging", i)
				require.NoError(t, e.Ack(d.Lease))
			}
			fake.Advance(15 * time.Millisecond)
			served := 0
			found := assert.Eventually(t, func() bool {
				d, ok := e.TryDequeue()
				if !ok {
					return false
				}
				if d.ID == bg {
					return true
				}
				served++
				_ = e.Ack(d.Lease)
				return false
			}, waitFor, tick)
			if found {
				t.Logf("Background served after %d more Critical picks", served)
			}
		})
	}
}

// TestEDF: a message whose Deadline is within DeadlineSlack comes before
// higher tiers, earliest deadline first.
func TestEDF(t *testing.T) {
	t.Run("within slack beats High", func(t *testing.T) {
		e, fake := memEngine(t, ringwal.Options{AgingAfter: noAging}) // DeadlineSlack default 10ms
		for i := 0; i < 3; i++ {
			enqueueP(t, e, ringwal.High, "high")
		}
		urgent := enqueue(t, e, ringwal.Message{Priority: ringwal.Normal, Deadline: fake.Now().Add(5 * time.Millisecond)})
		d := dequeue(t, e)
		assert.Equal(t, urgent, d.ID, "Normal with a deadline 5ms away (slack 10ms) goes first")
	})

	t.Run("far deadline waits until within slack", func(t *testing.T) {
		e, fake := memEngine(t, ringwal.Options{Strict: true, AgingAfter: noAging, DeadlineSlack: 10 * time.Millisecond})
		later := enqueue(t, e, ringwal.Message{Priority: ringwal.Normal, Deadline: fake.Now().Add(200 * time.Millisecond)})
		ms := make([]ringwal.Message, 2000)
		for i := range ms {
			ms[i] = ringwal.Message{Priority: ringwal.High}
		}
		_, err := e.EnqueueBatch(ctxBG, ms)
		require.NoError(t, err)
		for i := 0; i < 5; i++ {
			d := dequeue(t, e)
			require.Equal(t, ringwal.High, d.Message.Priority, "deadline still 200ms away")
			require.NoError(t, e.Ack(d.Lease))
		}
		fake.Advance(195 * time.Millisecond)
		assert.Eventually(t, func() bool {
			d, ok := e.TryDequeue()
			if !ok {
				return false
			}
			_ = e.Ack(d.Lease)
			return d.ID == later
		}, waitFor, tick, "the Normal message was not served within its slack")
	})

	t.Run("earliest deadline first", func(t *testing.T) {
		e, fake := memEngine(t, ringwal.Options{AgingAfter: noAging, DeadlineSlack: 10 * time.Millisecond})
		now := fake.Now()
		for i := 0; i < 5; i++ {
			enqueueP(t, e, ringwal.Critical, "crit")
		}
		low := enqueue(t, e, ringwal.Message{Priority: ringwal.Low, Deadline: now.Add(8 * time.Millisecond)})
		normal := enqueue(t, e, ringwal.Message{Priority: ringwal.Normal, Deadline: now.Add(3 * time.Millisecond)})
		overdue := enqueue(t, e, ringwal.Message{Priority: ringwal.Background, Deadline: now.Add(-time.Second)})
		got := []ringwal.ID{dequeue(t, e).ID, dequeue(t, e).ID, dequeue(t, e).ID}
		assert.Equal(t, []ringwal.ID{overdue, normal, low}, got)
		assert.Equal(t, ringwal.Critical, dequeue(t, e).Message.Priority)
	})
}
