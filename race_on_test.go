//go:build race

package ringwal_test

// raceEnabled: the tests run under the race detector (several times
// slower): the largest ones scale down.
const raceEnabled = true
