package admin

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/ringwal/ringwal/clock"
)

// A client that has failed gets one guess per penalty even when its
// requests arrive together: the first one checked moves the penalty on
// before the others ask.
func TestThrottleAdmitsOneGuessAtATimeOnceAClientFailed(t *testing.T) {
	fake := clock.NewFake(time.Now())
	th := newThrottle(fake.Now)
	wait, tracked := th.admit("a")
	assert.Zero(t, wait)
	assert.False(t, tracked, "no record before a failure")
	assert.Equal(t, firstPenalty, th.fail("a"))

	fake.Advance(firstPenalty)
	wait, tracked = th.admit("a") // checked: the next penalty is reserved
	assert.Zero(t, wait)
	assert.True(t, tracked)
	wait, _ = th.admit("a") // sent beside it
	assert.Equal(t, 2*firstPenalty, wait, "a parallel guess waits for the next penalty")
	assert.Equal(t, 2*firstPenalty, th.fail("a"))

	fake.Advance(2*firstPenalty + forgetAfter + time.Second)
	wait, _ = th.admit("a")
	assert.Zero(t, wait)
	assert.Equal(t, firstPenalty, th.fail("a"), "long after, the count starts again")
}

// However many clients are in a penalty, one that has never failed has
// its credential checked: a full table of penalties (an attacker's wrong
// guesses from 4,096 addresses and more) never locks out an operator who
// arrives from a new address. A client that fails past the bound still
// gets a penalty of its own, the table staying bounded.
func TestThrottleNeverHoldsBackAClientThatHasNotFailed(t *testing.T) {
	fake := clock.NewFake(time.Now())
	th := newThrottle(fake.Now)
	for i := range maxThrottled + 10 {
		th.fail(fmt.Sprintf("10.0.%d.%d", i>>8, i&255))
	}
	assert.LessOrEqual(t, th.size(), maxThrottled, "bounded")

	wait, tracked := th.admit("192.0.2.1")
	assert.Zero(t, wait, "a client that has not failed is let through to the token check")
	assert.False(t, tracked)

	assert.Equal(t, firstPenalty, th.fail("192.0.2.1"), "its first wrong guess is its own first penalty")
	wait, tracked = th.admit("192.0.2.1")
	assert.Equal(t, firstPenalty, wait, "and it is held to it, though the table was full")
	assert.True(t, tracked)
	assert.LessOrEqual(t, th.size(), maxThrottled, "still bounded")
}
