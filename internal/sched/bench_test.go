package sched

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringwal/ringwal/clock"
)

func BenchmarkWheel(b *testing.B) {
	b.Run("Add", func(b *testing.B) {
		// Steady state: the node pool has grown, and every 1<<16 adds the
		// wheel is emptied off the clock, so Add never allocates.
		const batch = 1 << 16
		w := NewWheel(time.Millisecond, testStart)
		now := testStart
		drain := func() {
			now = now.Add(time.Hour)
			w.Advance(now, nil)
		}
		for i := range batch {
			w.Add(now.Add(time.Duration(i)*time.Millisecond), Entry{ID: uint64(i)})
		}
		drain()
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if i%batch == batch-1 {
				b.StopTimer()
				drain()
				b.StartTimer()
			}
			// Delays from 1ms to about 16 minutes: every level but the top.
			w.Add(now.Add(time.Duration(1+i%batch*15)*time.Millisecond), Entry{ID: uint64(i)})
		}
	})
	b.Run("AdvanceFire", func(b *testing.B) {
		// Steady state: 65536 entries pending with delays spread over 1ms to
		// about 65s, so one entry falls due per millisecond on average. Per
		// op: Advance by 1ms, fire what is due (cascades included) and
		// re-add each fired entry at a new pseudo-random delay, which keeps
		// the wheel's size constant.
		const pending = 1 << 16
		w := NewWheel(time.Millisecond, testStart)
		now := testStart
		seq := uint64(0)
		delay := func() time.Duration {
			seq++
			return time.Duration(1+seq*0x9E3779B97F4A7C15%pending) * time.Millisecond
		}
		for i := range pending {
			w.Add(now.Add(delay()), Entry{ID: uint64(i)})
		}
		fired := 0
		fire := func(_ time.Time, e Entry) {
			fired++
			w.Add(now.Add(delay()), e)
		}
		for range pending { // settle into the steady state
			now = now.Add(time.Millisecond)
			w.Advance(now, fire)
		}
		fired = 0
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			now = now.Add(time.Millisecond)
			w.Advance(now, fire)
		}
		b.StopTimer()
		b.ReportMetric(float64(fired)/float64(b.N), "fires/op")
		if w.Len() != pending {
			b.Fatalf("pending %d, want %d", w.Len(), pending)
		}
	})
}

func BenchmarkHeap(b *testing.B) {
	b.Run("PushPop", func(b *testing.B) {
		// A heap holding 1024 deadlines; per op one Push and one Pop.
		var h DeadlineHeap
		for i := range 1024 {
			h.Push(int64(i*7919%1024), Entry{ID: uint64(i)})
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			h.Push(int64(1024+i), Entry{ID: uint64(i)})
			h.Pop()
		}
	})
}

func BenchmarkPicker(b *testing.B) {
	b.Run("Next", func(b *testing.B) {
		p := NewPicker(PickerOptions{})
		now := t0
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			tier, _ := p.Next(0b11111, now)
			p.Served(tier, now)
			now += 100
		}
	})
	b.Run("NextParallel", func(b *testing.B) {
		p := NewPicker(PickerOptions{})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			now := t0
			for pb.Next() {
				tier, _ := p.Next(0b10101, now)
				p.Served(tier, now)
				now += 100
			}
		})
	})
	b.Run("SchedulerNoDeadline", func(b *testing.B) {
		s := NewScheduler(SchedulerOptions{})
		now := t0
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			p, _ := s.Next(0b11111, now, nil)
			s.Picker().Served(p.Tier, now)
			now += 100
		}
	})
}

func BenchmarkTimers(b *testing.B) {
	b.Run("ScheduleFire", func(b *testing.B) {
		// End to end on the real clock: parallel producers schedule
		// entries that are already due; per op, one entry through the feed
		// (or the spill list when the owner falls behind), the wheel and
		// fire.
		var fired atomic.Int64
		all := make(chan struct{})
		n := int64(b.N)
		tm := NewTimers(clock.Real(), TimerOptions{}, func(time.Time, Entry) {
			if fired.Add(1) == n {
				close(all)
			}
		})
		tm.Start()
		defer tm.Stop()
		at := time.Now()
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				tm.Schedule(at, Entry{ID: 1})
			}
		})
		<-all
		b.ReportMetric(float64(tm.Spilled())/float64(b.N), "spilled/op")
	})
	b.Run("ScheduleLater", func(b *testing.B) {
		// The delayed-enqueue shape: parallel producers schedule entries due
		// an hour later while the owner sleeps; per op, one Schedule, and
		// the owner's drain of the feed each time it is half full.
		// spilled/op: the share that found the feed full anyway.
		tm := NewTimers(clock.Real(), TimerOptions{}, nil)
		tm.Start()
		defer tm.Stop()
		at := time.Now().Add(time.Hour)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				tm.Schedule(at, Entry{ID: 1})
			}
		})
		b.StopTimer()
		b.ReportMetric(float64(tm.Spilled())/float64(b.N), "spilled/op")
	})
}
