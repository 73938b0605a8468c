package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/classify"
)

// listJSON runs `dlq list --json` with extra arguments.
func listJSON(t *testing.T, dir string, args ...string) []admin.DeadLetterView {
	t.Helper()
	var out []admin.DeadLetterView
	require.NoError(t, json.Unmarshal([]byte(ok(t, append([]string{"dlq", "list", "--json", dir}, args...)...)), &out))
	return out
}

func ids(ds []admin.DeadLetterView) []uint64 {
	out := make([]uint64, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

func TestDLQListAndShow(t *testing.T) {
	f := newFixture(t)
	p1, p2, poison := f.permanent[0], f.permanent[1], f.poison

	table := ok(t, "dlq", "list", f.dir)
	assert.Contains(t, table, "ID")
	assert.Contains(t, table, "LAST ERROR")
	assert.Contains(t, table, "HTTP 400: bad request")
	assert.Contains(t, table, "3 dead letters")
	lines := strings.Split(strings.TrimSpace(table), "\n")
	require.Len(t, lines, 5, table) // header, 3 entries, total
	assert.True(t, strings.HasPrefix(lines[1], fmt.Sprint(p1)), table)

	all := listJSON(t, f.dir)
	assert.Equal(t, []uint64{p1, p2, poison}, ids(all), "dead-letter order")
	assert.Equal(t, classify.Permanent, all[0].Category)
	assert.Equal(t, "api", all[0].Key)
	assert.Equal(t, "order-1", all[0].Message.Payload)
	assert.Equal(t, admin.PayloadText, all[0].Message.PayloadEncoding)
	assert.Equal(t, "HTTP 400: bad request", all[0].LastError)
	require.Len(t, all[0].Failures, 1)
	assert.Equal(t, 1, all[0].Attempts)

	assert.Equal(t, []uint64{p1, p2}, ids(listJSON(t, f.dir, "--category", "permanent")))
	assert.Equal(t, []uint64{p1, p2, poison}, ids(listJSON(t, f.dir, "--category", "permanent,poison")))
	assert.Equal(t, []uint64{poison}, ids(listJSON(t, f.dir, "--category", "Poison", "--category", "transient")))
	assert.Equal(t, []uint64{poison}, ids(listJSON(t, f.dir, "--key", "mail")))
	assert.Empty(t, listJSON(t, f.dir, "--key", "nobody"))
	assert.Len(t, listJSON(t, f.dir, "--since", "1h"), 3)
	assert.Empty(t, listJSON(t, f.dir, "--since", time.Now().Add(time.Hour).Format(time.RFC3339)))
	assert.Empty(t, listJSON(t, f.dir, "--until", "2000-01-01"))
	assert.Len(t, listJSON(t, f.dir, "--reviewed=no"), 3)
	assert.Empty(t, listJSON(t, f.dir, "--reviewed"))
	assert.Equal(t, []uint64{p1}, ids(listJSON(t, f.dir, "--limit", "1")))
	assert.Equal(t, []uint64{p2}, ids(listJSON(t, f.dir, "--limit", "1", "--after", fmt.Sprint(p1))))

	show := ok(t, "dlq", "show", f.dir, fmt.Sprint(poison))
	assert.Contains(t, show, "category      poison")
	assert.Contains(t, show, `"poison-1"`)
	assert.Contains(t, show, "panic: cannot decode")
	assert.Contains(t, show, "last error in full:", "a panic's stack is shown")
	r := runBin(t, 30*time.Second, "dlq", "show", f.dir, "999999")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "no dead letter with ID 999999")
}

func TestDLQReviewRedrivePurge(t *testing.T) {
	f := newFixture(t)
	p1, p2, poison := f.permanent[0], f.permanent[1], f.poison

	out := ok(t, "dlq", "review", f.dir, fmt.Sprint(poison), "--note", "decoder bug, ticket 12")
	assert.Contains(t, out, fmt.Sprintf("reviewed 1 dead letter: %d", poison))
	rev := listJSON(t, f.dir, "--reviewed")
	require.Len(t, rev, 1)
	assert.Equal(t, poison, rev[0].ID)
	assert.Equal(t, "decoder bug, ticket 12", rev[0].Note)
	assert.False(t, rev[0].ReviewedAt.IsZero())
	assert.Equal(t, []uint64{p1, p2}, ids(listJSON(t, f.dir, "--reviewed=no")))
	assert.Equal(t, []uint64{p1, p2}, ids(listJSON(t, f.dir, "--reviewed=false")))
	assert.Equal(t, []uint64{poison}, ids(listJSON(t, f.dir, "--reviewed=true")))

	out = ok(t, "dlq", "redrive", f.dir, fmt.Sprint(p2))
	assert.Contains(t, out, fmt.Sprintf("redriven 1 dead letter: %d", p2))
	var rep inspectReport
	require.NoError(t, json.Unmarshal([]byte(ok(t, "inspect", "--json", f.dir)), &rep))
	assert.Equal(t, 4, rep.Pending, "the redriven message is pending again")
	assert.Equal(t, 2, rep.Dead)

	r := runBin(t, 30*time.Second, "dlq", "redrive", f.dir, fmt.Sprint(p2))
	assert.Equal(t, 1, r.code, "redriving it again: it is no longer dead")

	var res struct {
		Action string   `json:"action"`
		Done   []uint64 `json:"done"`
	}
	require.NoError(t, json.Unmarshal([]byte(ok(t, "dlq", "purge", f.dir, fmt.Sprint(p1), "--json")), &res))
	assert.Equal(t, "purge", res.Action)
	assert.Equal(t, []uint64{p1}, res.Done)
	assert.Equal(t, []uint64{poison}, ids(listJSON(t, f.dir)))

	out = ok(t, "dlq", "purge", f.dir, "--category", "permanent")
	assert.Contains(t, out, "purged 0 dead letters")
	out = ok(t, "dlq", "purge", f.dir, "--all", "--yes")
	assert.Contains(t, out, fmt.Sprintf("purged 1 dead letter: %d", poison))
	assert.Empty(t, listJSON(t, f.dir))
}

func TestDLQBulkByFilter(t *testing.T) {
	f := newFixture(t)
	out := ok(t, "dlq", "redrive", f.dir, "--key", "api", "--json", "--yes")
	var res struct {
		Done   []uint64 `json:"done"`
		Failed []any    `json:"failed"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.ElementsMatch(t, []uint64{f.permanent[0], f.permanent[1]}, res.Done)
	assert.Empty(t, res.Failed)
	assert.Equal(t, []uint64{f.poison}, ids(listJSON(t, f.dir)))
}
