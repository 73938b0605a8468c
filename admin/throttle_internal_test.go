package admin

import (
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
