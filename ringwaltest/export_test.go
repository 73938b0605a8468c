package ringwaltest

import "time"

// SetNoDeadlineWait sets the bound WorkOne applies to a ctx without a
// deadline, and returns a func that restores it.
func SetNoDeadlineWait(d time.Duration) (restore func()) {
	old := noDeadlineWait
	noDeadlineWait = d
	return func() { noDeadlineWait = old }
}
