package clock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFakeTimerFiresOnlyWhenAdvancedPast(t *testing.T) {
	f := NewFake(time.Time{})
	start := f.Now()
	tm := f.NewTimer(10 * time.Millisecond)
	f.Advance(9 * time.Millisecond)
	select {
	case <-tm.C():
		t.Fatal("fired early")
	default:
	}
	f.Advance(time.Millisecond)
	select {
	case at := <-tm.C():
		assert.Equal(t, start.Add(10*time.Millisecond), at)
	default:
		t.Fatal("did not fire at its time")
	}
	assert.Equal(t, 0, f.Waiters())
	assert.False(t, tm.Stop(), "stopping a fired timer")
	assert.False(t, tm.Reset(time.Second), "reset of a fired timer reports inactive")
	assert.Equal(t, 1, f.Waiters())
	assert.True(t, tm.Stop())
	f.Advance(time.Hour)
	select {
	case <-tm.C():
		t.Fatal("a stopped timer fired")
	default:
	}
}

func TestFakeTickerAndOrder(t *testing.T) {
	f := NewFake(time.Time{})
	tk := f.NewTicker(time.Second)
	var ticks int
	for i := 0; i < 5; i++ {
		f.Advance(time.Second)
		select {
		case <-tk.C():
			ticks++
		default:
		}
	}
	assert.Equal(t, 5, ticks)
	tk.Stop()
	assert.Equal(t, 0, f.Waiters())

	// Timers fire in time order inside one Advance, each seeing its own time.
	a, b := f.NewTimer(2*time.Second), f.NewTimer(time.Second)
	base := f.Now()
	f.Advance(5 * time.Second)
	assert.Equal(t, base.Add(2*time.Second), <-a.C())
	assert.Equal(t, base.Add(time.Second), <-b.C())
	assert.Equal(t, base.Add(5*time.Second), f.Now())
}

func TestFakeSleepAndBlockUntil(t *testing.T) {
	f := NewFake(time.Time{})
	done := make(chan struct{})
	go func() {
		f.Sleep(time.Minute)
		close(done)
	}()
	f.BlockUntil(1)
	f.Advance(time.Minute)
	<-done
	f.Set(f.Now().Add(-time.Hour)) // never backwards
	require.Equal(t, NewFake(time.Time{}).Now().Add(time.Minute), f.Now())
	assert.Equal(t, time.Minute, f.Since(NewFake(time.Time{}).Now()))
}

func TestRealClock(t *testing.T) {
	c := Real()
	before := time.Now()
	assert.False(t, c.Now().Before(before))
	tm := c.NewTimer(time.Millisecond)
	<-tm.C()
	assert.False(t, tm.Stop(), "a fired timer is no longer active")
}
