package prom

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A name with its own series that goes and comes back between two
// scrapes (a queue deleted and declared again) keeps counting up from
// where its series was; one folded under _other leaves its last totals
// there.
func TestCappedSeriesNeverGoBack(t *testing.T) {
	c := newCapped[scheduleTotals](1, OtherScheduleLabel)
	c.begin([]string{"a", "b"})
	own, got := c.place("a", scheduleTotals{runs: 5})
	assert.True(t, own)
	assert.Equal(t, scheduleTotals{runs: 5}, got)
	own, got = c.place("b", scheduleTotals{runs: 7})
	assert.False(t, own, "no place left")
	assert.Equal(t, scheduleTotals{runs: 7}, got)

	other := c.begin([]string{"a", "b"})
	own, got = c.place("a", scheduleTotals{runs: 2}) // gone and back: counts from 0 again
	assert.True(t, own)
	assert.Equal(t, scheduleTotals{runs: 7}, got, "5 before, 2 since")
	_, add := c.place("b", scheduleTotals{runs: 1})
	assert.Equal(t, scheduleTotals{runs: 8}, other.plus(add), "b's 7 stay in _other")

	c.begin([]string{"a", "b"})
	_, got = c.place("a", scheduleTotals{runs: 3})
	assert.Equal(t, scheduleTotals{runs: 8}, got)
}
