package sched

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSchedulerEDF: deadlines within the slack are served first, earliest
// first; the rest wait for their time; tiers get the picks in between.
func TestSchedulerEDF(t *testing.T) {
	ms := int64(time.Millisecond)
	cases := []struct {
		name      string
		slack     time.Duration
		deadlines []int64 // relative to t0, ID = index+1
		now       int64   // relative to t0
		want      []uint64
	}{
		{"within default slack, earliest first", 0, []int64{5 * ms, ms, 30 * ms, -ms, 10 * ms}, 0, []uint64{4, 2, 1, 5}},
		{"nothing within the slack", 0, []int64{11 * ms, 30 * ms}, 0, nil},
		{"later now brings more in", 0, []int64{11 * ms, 30 * ms, 50 * ms}, 20 * ms, []uint64{1, 2}},
		{"negative slack: only passed deadlines", -1, []int64{ms, -ms, 0}, 0, []uint64{2, 3}},
		{"wide slack", time.Hour, []int64{3 * ms, 2 * ms, ms}, 0, []uint64{3, 2, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := NewScheduler(SchedulerOptions{DeadlineSlack: tc.slack})
			for i, d := range tc.deadlines {
				s.Deadlines().Push(t0+d, Entry{ID: uint64(i + 1)})
			}
			var got []uint64
			for {
				p, ok := s.Next(0b00100, t0+tc.now, nil)
				require.True(t, ok)
				if !p.EDF {
					assert.Equal(t, 2, p.Tier, "tier pick once no deadline is near")
					break
				}
				assert.Equal(t, t0+tc.deadlines[p.Entry.ID-1], p.Deadline)
				got = append(got, p.Entry.ID)
			}
			assert.Equal(t, tc.want, got)
			assert.Equal(t, len(tc.deadlines)-len(tc.want), s.Deadlines().Len())
		})
	}
}

// TestSchedulerEDFRandom: with everything within the slack, deadline picks
// come out in deadline order, stale ones never.
func TestSchedulerEDFRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	s := NewScheduler(SchedulerOptions{DeadlineSlack: time.Hour})
	live := make(map[uint64]bool)
	var want []int64
	for id := uint64(1); id <= 5000; id++ {
		d := t0 + rng.Int64N(int64(time.Minute))
		s.Deadlines().Push(d, Entry{ID: id})
		live[id] = rng.IntN(3) != 0
		if live[id] {
			want = append(want, d)
		}
	}
	slices.Sort(want)
	var got []int64
	for {
		p, ok := s.Next(0, t0, func(e Entry) bool { return live[e.ID] })
		if !ok {
			break
		}
		require.True(t, p.EDF)
		require.True(t, live[p.Entry.ID], "stale entry served")
		got = append(got, p.Deadline)
	}
	assert.Equal(t, want, got)
	assert.Zero(t, s.Deadlines().Len())
}

// TestSchedulerNoLockWithoutNearDeadline: with no deadline pending, or only
// far ones, Next must not touch the heap's mutex. The test holds it; a
// Next that tried to lock would hang (and the test binary time out).
func TestSchedulerNoLockWithoutNearDeadline(t *testing.T) {
	s := NewScheduler(SchedulerOptions{})
	h := s.Deadlines()
	h.mu.Lock()
	p, ok := s.Next(0b00011, t0, nil)
	h.mu.Unlock()
	require.True(t, ok)
	assert.False(t, p.EDF)
	assert.Equal(t, 0, p.Tier)

	h.Push(t0+int64(time.Hour), Entry{ID: 1})
	h.mu.Lock()
	p, ok = s.Next(0b00010, t0, nil)
	h.mu.Unlock()
	require.True(t, ok)
	assert.False(t, p.EDF)
	assert.Equal(t, 1, p.Tier)

	_, ok = s.Next(0, t0, nil)
	assert.False(t, ok, "nothing near, nothing non-empty")
}

func TestSchedulerNoAllocs(t *testing.T) {
	s := NewScheduler(SchedulerOptions{})
	for i := range 64 {
		s.Deadlines().Push(t0, Entry{ID: uint64(i)})
	}
	for {
		if _, ok := s.Deadlines().PopIf(t0, nil); !ok {
			break
		}
	}
	now := t0
	allocs := testing.AllocsPerRun(1000, func() {
		now += 1000
		s.Deadlines().Push(now, Entry{ID: 1})
		s.Next(0b10101, now, nil)         // the deadline
		p, _ := s.Next(0b10101, now, nil) // a tier
		s.Picker().Served(p.Tier, now)
	})
	assert.Zero(t, allocs)
}

// DeadlineDue answers what Next would serve a deadline for: the earliest
// within the slack, not merely any deadline in the heap.
func TestSchedulerDeadlineDue(t *testing.T) {
	s := NewScheduler(SchedulerOptions{DeadlineSlack: time.Millisecond})
	now := int64(time.Hour)
	assert.False(t, s.DeadlineDue(now), "empty heap")
	s.Deadlines().Push(now+int64(24*time.Hour), Entry{ID: 1})
	assert.False(t, s.DeadlineDue(now), "a deadline a day away")
	s.Deadlines().Push(now+int64(time.Millisecond), Entry{ID: 2})
	assert.True(t, s.DeadlineDue(now), "a deadline at the slack's edge")
	pick, ok := s.Next(0, now, nil)
	require.True(t, ok)
	assert.True(t, pick.EDF, "Next serves what DeadlineDue said was due")
	assert.False(t, s.DeadlineDue(now), "the day-away one left")
}
