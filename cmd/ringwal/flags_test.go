package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A --reviewed value that means "any" (in any case, or empty) is no filter:
// purge, redrive and review must still refuse to act on every dead letter
// without --all.
func TestReviewedAnyIsNoFilter(t *testing.T) {
	for _, flag := range []string{"--reviewed=ANY", "--reviewed=Any", "--reviewed="} {
		f := newFixture(t)
		r := runBin(t, 30*time.Second, "dlq", "purge", flag, "--yes", f.dir)
		assert.Equal(t, 2, r.code, "dlq purge %s: stdout %q stderr %q", flag, r.stdout, r.stderr)
		out := ok(t, "dlq", "list", f.dir)
		assert.Contains(t, out, "3 dead letters", "dlq purge %s purged without --all", flag)
	}
}

// Bad flag values the engine refuses are usage errors (exit status 2),
// not failures.
func TestListBadFlagValuesAreUsageErrors(t *testing.T) {
	f := newFixture(t)
	for _, args := range [][]string{
		{"dlq", "list", "--limit", "-1", f.dir},
		{"dlq", "list", "--since", "2030-01-01", "--until", "2020-01-01", f.dir},
		{"dlq", "purge", "--since", "2030-01-01", "--until", "2020-01-01", f.dir},
	} {
		r := runBin(t, 30*time.Second, args...)
		assert.Equal(t, 2, r.code, "ringwal %v: stderr %q", args, r.stderr)
		require.Contains(t, r.stderr, "ringwal: ")
	}
}

// A huge --next lists what is pending instead of allocating for the
// number asked (Engine.Peek sizes its slice by n).
func TestInspectHugeNext(t *testing.T) {
	f := newFixture(t)
	r := runBin(t, 30*time.Second, "inspect", "--next", "1000000000000", "--json", f.dir)
	require.Equal(t, 0, r.code, "stderr %q", firstLine(r.stderr, 200))
	assert.Contains(t, r.stdout, `"urgent-1"`)
	r = runBin(t, 30*time.Second, "inspect", "--next", "-1", f.dir)
	assert.Equal(t, 2, r.code, "a negative --next is a usage error: stderr %q", r.stderr)
}
