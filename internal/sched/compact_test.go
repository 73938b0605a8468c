package sched

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWheelCompactKeepsLiveEntriesAndTheirTimes(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := NewWheel(time.Millisecond, start)
	rng := rand.New(rand.NewPCG(1, 2))
	due := map[uint64]time.Time{}
	for id := uint64(1); id <= 20000; id++ {
		at := start.Add(time.Duration(rng.Int64N(int64(40 * 24 * time.Hour))))
		w.Add(at, Entry{ID: id})
		due[id] = at
	}
	// Something already due sits in the ready list.
	w.Add(start.Add(-time.Second), Entry{ID: 0})
	due[0] = start.Add(-time.Second)
	removed := w.Compact(func(e Entry) bool { return e.ID%3 != 0 })
	assert.Equal(t, 6667, removed)
	require.Equal(t, 20001-removed, w.Len())
	fired := 0
	w.Advance(start.Add(41*24*time.Hour), func(at time.Time, e Entry) {
		fired++
		assert.NotZero(t, e.ID%3, "a compacted entry fired")
		assert.Equal(t, due[e.ID], at)
	})
	assert.Equal(t, 20001-removed, fired)
	assert.Equal(t, 0, w.Len())
	// Nodes went back to the pool: adding again does not grow it.
	chunks := len(w.chunks)
	for id := uint64(1); id <= 10000; id++ {
		w.Add(start.Add(50*24*time.Hour), Entry{ID: id})
	}
	assert.Equal(t, chunks, len(w.chunks))
}

func TestPreviewMatchesNext(t *testing.T) {
	for _, policy := range []Policy{Weighted, Strict} {
		p := NewPicker(PickerOptions{Policy: policy, AgingAfter: -1})
		// Move the cursors somewhere first.
		for i := 0; i < 7; i++ {
			p.Next(0b11111, 0)
		}
		backlog := [NumTiers]int{5, 7, 3, 2, 40}
		preview := p.Preview(backlog, 100)
		require.Len(t, preview, 57)
		for i, want := range preview {
			var m uint8
			for tier, c := range backlog {
				if c > 0 {
					m |= 1 << tier
				}
			}
			got, ok := p.Next(m, 0)
			require.True(t, ok)
			require.Equal(t, want, got, "pick %d (policy %d)", i, policy)
			backlog[got]--
		}
	}
}
