//go:build !race

package ringwal_test

// raceEnabled: the tests run without the race detector.
const raceEnabled = false
