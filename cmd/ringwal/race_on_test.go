//go:build race

package main

// raceEnabled: the tests run under the race detector, so the binary they
// build is built with it too.
const raceEnabled = true
