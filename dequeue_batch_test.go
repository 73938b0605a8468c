package ringwal_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/clock"
)

// DequeueBatch takes a tier's messages in one pass when the scheduler has
// nothing else to decide; whatever the backlog, a batch must deliver
// exactly what as many TryDequeue calls would, in the same order: two
// engines on the same fake clock get the same enqueues, one is drained by
// batches and the other message by message.
func TestDequeueBatchDeliversWhatDequeueWould(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name    string
		opts    ringwal.Options
		backlog func(t *testing.T, e *ringwal.Engine) // enqueues (and cancels) through the API
	}{
		{"one tier", ringwal.Options{}, func(t *testing.T, e *ringwal.Engine) {
			for i := range 150 {
				mustEnqueue(t, e, ringwal.Message{Payload: []byte(fmt.Sprint(i))})
			}
		}},
		{"one tier with cancelled entries", ringwal.Options{}, func(t *testing.T, e *ringwal.Engine) {
			for i := range 100 {
				id := mustEnqueue(t, e, ringwal.Message{Payload: []byte(fmt.Sprint(i))})
				if i%7 == 3 {
					require.NoError(t, e.Cancel(id))
				}
			}
		}},
		{"tiers weighted", ringwal.Options{}, func(t *testing.T, e *ringwal.Engine) {
			for i := range 120 {
				mustEnqueue(t, e, ringwal.Message{Payload: []byte(fmt.Sprint(i)), Priority: ringwal.Priority(i % 3)})
			}
		}},
		{"tiers strict", ringwal.Options{Strict: true}, func(t *testing.T, e *ringwal.Engine) {
			for i := range 120 {
				mustEnqueue(t, e, ringwal.Message{Payload: []byte(fmt.Sprint(i)), Priority: ringwal.Priority(i % 3)})
			}
		}},
		{"deadlines", ringwal.Options{}, func(t *testing.T, e *ringwal.Engine) {
			for i := range 100 {
				m := ringwal.Message{Payload: []byte(fmt.Sprint(i))}
				if i%10 == 9 {
					m.Deadline = t0.Add(time.Duration(100-i) * time.Microsecond) // due: within DeadlineSlack
				}
				mustEnqueue(t, e, m)
			}
		}},
		{"ordered keys", ringwal.Options{KeyPolicy: func(k string) ringwal.KeyPolicy { return ringwal.KeyPolicy{Ordered: k == "k"} }}, func(t *testing.T, e *ringwal.Engine) {
			for i := range 60 {
				key := ""
				if i%4 == 0 {
					key = "k"
				}
				mustEnqueue(t, e, ringwal.Message{Payload: []byte(fmt.Sprint(i)), Key: key})
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			drain := func(batch int) []string {
				o := tc.opts
				o.Clock = clock.NewFake(t0)
				e, err := ringwal.Open("", o)
				require.NoError(t, err)
				defer e.Close()
				tc.backlog(t, e)
				var got []string
				for {
					var ds []ringwal.Delivery
					if batch > 0 {
						if len(e.Peek(1)) == 0 {
							return got
						}
						ds, err = e.DequeueBatch(ctxBG, batch)
						require.NoError(t, err)
					} else {
						d, ok := e.TryDequeue()
						if !ok {
							return got
						}
						ds = []ringwal.Delivery{d}
					}
					for _, d := range ds {
						got = append(got, string(d.Message.Payload))
						require.NoError(t, e.Ack(d.Lease))
					}
				}
			}
			want := drain(0)
			require.NotEmpty(t, want)
			for _, n := range []int{1, 7, 64, 100} {
				assert.Equal(t, want, drain(n), "batches of %d", n)
			}
		})
	}
}

func TestDequeueBatch(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	var want []ringwal.ID
	for i := 0; i < 5; i++ {
		want = append(want, enqueueP(t, e, ringwal.Normal, fmt.Sprint(i)))
	}
	waitCounts(t, e, stateCounts{Pending: 5})
	b1, err := e.DequeueBatch(ctxBG, 3)
	require.NoError(t, err)
	assert.Len(t, b1, 3, "5 ready, max 3")
	b2, err := e.DequeueBatch(ctxBG, 10)
	require.NoError(t, err)
	assert.Len(t, b2, 2, "the 2 left, without waiting for more")
	assert.Equal(t, want, append(ids(b1), ids(b2)...))
	for _, d := range append(b1, b2...) {
		assert.Equal(t, 1, d.Attempt)
		assert.NoError(t, e.Ack(d.Lease))
	}

	// Blocks for the first only.
	ch := make(chan []ringwal.Delivery, 1)
	go func() {
		ds, _ := e.DequeueBatch(ctxBG, 4)
		ch <- ds
	}()
	time.Sleep(quiet)
	id := enqueueP(t, e, ringwal.Normal, "late")
	select {
	case ds := <-ch:
		require.NotEmpty(t, ds)
		assert.Equal(t, id, ds[0].ID)
	case <-time.After(waitFor):
		t.Fatal("DequeueBatch did not return after the first message")
	}
}
