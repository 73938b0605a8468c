package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
)

func TestPlural(t *testing.T) {
	for _, tc := range []struct {
		n         int
		one, many string
		want      string
	}{
		{0, "key", "keys", "0 keys"},
		{1, "key", "keys", "1 key"},
		{2, "key", "keys", "2 keys"},
		{1, "dead letter", "dead letters", "1 dead letter"},
		{739, "dead letter", "dead letters", "739 dead letters"},
		{1, "entry", "entries", "1 entry"},
		{3, "entry", "entries", "3 entries"},
	} {
		assert.Equal(t, tc.want, plural(tc.n, tc.one, tc.many))
	}
}

func TestSummarizeIDs(t *testing.T) {
	seq := func(from, n uint64) []uint64 {
		out := make([]uint64, n)
		for i := range out {
			out[i] = from + uint64(i)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		ids  []uint64
		want string
	}{
		{"none", nil, ""},
		{"one", []uint64{7}, "7"},
		{"twenty are all shown", seq(1, 20), "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20"},
		{"twenty-one are summarised", seq(1, 21), "1 2 3 4 5 6 7 8 9 10 ... 21 (the first 10 and the last of 21 shown; --json for all)"},
		{"hundreds", seq(1041, 739), "1041 1042 1043 1044 1045 1046 1047 1048 1049 1050 ... 1779 (the first 10 and the last of 739 shown; --json for all)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, summarizeIDs(tc.ids))
		})
	}
}

func TestMoreHint(t *testing.T) {
	for _, tc := range []struct {
		shown, limit int
		last         uint64
		more         bool
		want         string
	}{
		{10, 10, 42, true, "more: --after 42"},
		{10, 10, 42, false, ""}, // the page was full, but nothing follows
		{3, 10, 42, true, ""},   // not full: the end
		{10, 0, 42, true, ""},   // no --limit: everything was listed
	} {
		assert.Equal(t, tc.want, moreHint(tc.shown, tc.limit, tc.last, tc.more), "%+v", tc)
	}
}

func TestDLQFilterDescribe(t *testing.T) {
	for _, tc := range []struct {
		f     dlqFilter
		limit int
		after uint64
		want  string
	}{
		{dlqFilter{}, 0, 0, "every dead letter"},
		{dlqFilter{categories: []string{"poison", "permanent"}, key: "flaky"}, 0, 0, "category=poison,permanent, key=flaky"},
		{dlqFilter{queue: "emails", since: "1h", reviewed: "false"}, 0, 0, "queue=emails, since=1h, reviewed=false"},
		{dlqFilter{reviewed: "any"}, 100, 7, "every dead letter, after 7, at most 100"},
		{dlqFilter{key: "a\x1b[2Jb"}, 0, 0, safe("key=a\x1b[2Jb")},
	} {
		assert.Equal(t, tc.want, tc.f.describe(tc.limit, tc.after))
	}
}

// Without a terminal to answer on, a bulk verb by filter refuses (exit
// status 2, saying how to proceed) and changes nothing; --dry-run counts
// and changes nothing; --yes acts.
func TestBulkVerbsRefuseWithoutATerminal(t *testing.T) {
	f := newFixture(t)
	for _, args := range [][]string{
		{"dlq", "purge", f.dir, "--all"},
		{"dlq", "purge", f.dir, "--category", "permanent"},
		{"dlq", "redrive", f.dir, "--key", "api"},
		{"dlq", "review", f.dir, "--all", "--note", "n"},
	} {
		r := runBin(t, 30*time.Second, args...)
		assert.Equal(t, 2, r.code, "ringwal %v: stdout %q stderr %q", args, r.stdout, r.stderr)
		assert.Contains(t, r.stderr, "without confirmation: standard input is not a terminal; pass --yes to proceed, or --dry-run to only count", "%v", args)
		assert.Empty(t, r.stdout)
	}
	all := listJSON(t, f.dir)
	assert.Len(t, all, 3, "nothing purged or redriven")
	for _, d := range all {
		assert.False(t, d.Reviewed, "nothing reviewed")
	}

	out := ok(t, "dlq", "purge", f.dir, "--category", "permanent", "--dry-run")
	assert.Equal(t, "would purge 2 dead letters (category=permanent); nothing changed (--dry-run)\n", out)
	var dry struct {
		Action string `json:"action"`
		DryRun bool   `json:"dry_run"`
		Count  int    `json:"count"`
	}
	require.NoError(t, json.Unmarshal([]byte(ok(t, "dlq", "redrive", f.dir, "--all", "--dry-run", "--json")), &dry))
	assert.Equal(t, "redrive", dry.Action)
	assert.True(t, dry.DryRun)
	assert.Equal(t, 3, dry.Count)
	assert.Len(t, listJSON(t, f.dir), 3, "--dry-run changes nothing")

	out = ok(t, "dlq", "purge", f.dir, "--category", "permanent", "--yes")
	assert.Equal(t, fmt.Sprintf("purged 2 dead letters: %d %d\n", f.permanent[0], f.permanent[1]), out)
	assert.Equal(t, []uint64{f.poison}, ids(listJSON(t, f.dir)))
}

// A single ID needs no confirmation: the operator named it.
func TestBulkVerbsByIDDoNotAsk(t *testing.T) {
	f := newFixture(t)
	out := ok(t, "dlq", "purge", f.dir, fmt.Sprint(f.poison))
	assert.Equal(t, fmt.Sprintf("purged 1 dead letter: %d\n", f.poison), out)
	r := runBin(t, 30*time.Second, "dlq", "purge", f.dir, fmt.Sprint(f.permanent[0]), "--limit", "1")
	assert.Equal(t, 2, r.code, "IDs and --limit together: stderr %q", r.stderr)
}

// purge takes --limit and --after as list does: the first N in
// dead-letter order, after a cursor.
func TestDLQPurgeLimitAndAfter(t *testing.T) {
	f := newFixture(t)
	out := ok(t, "dlq", "purge", f.dir, "--all", "--limit", "1", "--after", fmt.Sprint(f.permanent[0]), "--yes")
	assert.Equal(t, fmt.Sprintf("purged 1 dead letter: %d\n", f.permanent[1]), out)
	assert.Equal(t, []uint64{f.permanent[0], f.poison}, ids(listJSON(t, f.dir)))
	r := runBin(t, 30*time.Second, "dlq", "purge", f.dir, "--all", "--limit", "-1", "--yes")
	assert.Equal(t, 2, r.code, "a negative --limit: stderr %q", r.stderr)
}

// ptyRun runs the binary on a pseudo-terminal (its stdin, stdout and
// stderr), waits for the confirmation question, calls before (nil: none),
// answers, and returns everything the terminal showed and the exit
// status.
func ptyRun(t *testing.T, answer string, before func(), args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = binEnv("TERM=xterm")
	f, err := pty.Start(cmd)
	if err != nil && os.Getenv("CI") != "true" && isNoPty(err) {
		t.Skipf("no pseudo-terminal on this machine: %v", err)
	}
	require.NoError(t, err, "starting ringwal on a pseudo-terminal")
	defer f.Close()

	var mu sync.Mutex
	var out bytes.Buffer
	asked := make(chan struct{})
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		buf := make([]byte, 4096)
		once := sync.Once{}
		for {
			n, err := f.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			if strings.Contains(out.String(), "Proceed? [y/N]") {
				once.Do(func() { close(asked) })
			}
			mu.Unlock()
			if err != nil { // EIO once ringwal exited and closed the terminal
				return
			}
		}
	}()
	text := func() string {
		mu.Lock()
		defer mu.Unlock()
		return out.String()
	}
	select {
	case <-asked:
	case <-ctx.Done():
		t.Fatalf("ringwal %v never asked; the terminal showed:\n%s", args, text())
	}
	if before != nil {
		before()
	}
	_, err = f.Write([]byte(answer + "\n"))
	require.NoError(t, err)
	werr := cmd.Wait()
	_ = f.Close()
	<-copied
	require.NoError(t, ctx.Err(), "ringwal %v did not end; the terminal showed:\n%s", args, text())
	code := 0
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, werr)
	}
	return text(), code
}

// On a terminal, dlq purge says how many it is about to purge and asks:
// "n" purges nothing, "y" purges exactly what was counted.
func TestDLQPurgeAsksOnATerminal(t *testing.T) {
	f := newFixture(t)
	text, code := ptyRun(t, "n", nil, "dlq", "purge", f.dir, "--category", "permanent")
	assert.Equal(t, 0, code, text)
	assert.Contains(t, text, "About to purge 2 dead letters (category=permanent). Proceed? [y/N]")
	assert.Contains(t, text, "nothing purged: declined")
	assert.Len(t, listJSON(t, f.dir), 3, "answering n purges nothing")

	text, code = ptyRun(t, "y", nil, "dlq", "purge", f.dir, "--category", "permanent")
	assert.Equal(t, 0, code, text)
	assert.Contains(t, text, fmt.Sprintf("purged 2 dead letters: %d %d", f.permanent[0], f.permanent[1]))
	assert.Equal(t, []uint64{f.poison}, ids(listJSON(t, f.dir)), "answering y purges the two counted")
}

// Through a live engine's admin API, a dead letter that arrives while
// the question waits for its answer is not purged: what was confirmed is
// exactly what is purged.
func TestDLQPurgeOnATerminalPurgesWhatWasCounted(t *testing.T) {
	f := newFixture(t)
	e, err := ringwal.Open(f.dir, ringwal.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	for { // the fixture's pending messages go, so that the late one is next
		d, ok := e.TryDequeue()
		if !ok {
			break
		}
		require.NoError(t, e.Ack(d.Lease))
	}
	srv := httptest.NewServer(admin.NewHandler(e, admin.Options{}))
	t.Cleanup(srv.Close)

	var late ringwal.ID
	text, code := ptyRun(t, "y", func() {
		ctx := context.Background()
		late, err = e.Enqueue(ctx, ringwal.Message{Key: "api", Payload: []byte("late")})
		require.NoError(t, err)
		d, ok := e.TryDequeue()
		require.True(t, ok)
		require.Equal(t, late, d.ID)
		require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("HTTP 400"), classify.Permanent)))
	}, "dlq", "purge", "--addr", srv.URL, "--key", "api")
	assert.Equal(t, 0, code, text)
	assert.Contains(t, text, "About to purge 2 dead letters (key=api). Proceed? [y/N]")
	assert.Contains(t, text, fmt.Sprintf("purged 2 dead letters: %d %d", f.permanent[0], f.permanent[1]))
	ds, err := e.DeadLetters(dlq.Query{Key: "api"})
	require.NoError(t, err)
	require.Len(t, ds, 1, "the dead letter that arrived after the count stays")
	assert.Equal(t, late, ds[0].ID)
}

// A list cut by --limit ends with how to ask for the next page, and only
// when one follows.
func TestListsSayWhenMoreFollow(t *testing.T) {
	f := newFixture(t)
	out := ok(t, "dlq", "list", f.dir, "--limit", "2")
	assert.Contains(t, out, "2 dead letters\n")
	assert.True(t, strings.HasSuffix(out, fmt.Sprintf("more: --after %d\n", f.permanent[1])), out)
	next := ok(t, "dlq", "list", f.dir, "--limit", "2", "--after", fmt.Sprint(f.permanent[1]))
	assert.Contains(t, next, "1 dead letter\n")
	assert.NotContains(t, next, "more:", "the last page")
	assert.NotContains(t, ok(t, "dlq", "list", f.dir, "--limit", "3"), "more:", "exactly full, nothing follows")
	assert.Len(t, listJSON(t, f.dir, "--limit", "2"), 2, "--json lists the page alone")

	msgs := ok(t, "messages", f.dir, "mail", "--limit", "1")
	assert.Contains(t, msgs, "1 message\n")
	assert.Contains(t, msgs, "more: --after ")
	assert.NotContains(t, ok(t, "messages", f.dir, "mail"), "more:")
}

// cancel by filter counts, asks and cancels exactly what it counted: no
// terminal, no cancel without --yes; --dry-run counts; --yes acts.
func TestCancelByFilter(t *testing.T) {
	f := newFixture(t)
	r := runBin(t, 30*time.Second, "cancel", f.dir, "--key", "mail")
	assert.Equal(t, 2, r.code, "stderr %q", r.stderr)
	assert.Contains(t, r.stderr, "refusing to cancel 3 messages (key=mail) without confirmation")
	assert.Equal(t, "would cancel 3 messages (key=mail); nothing changed (--dry-run)\n", ok(t, "cancel", f.dir, "--key", "mail", "--dry-run"))
	assert.Equal(t, "cancelled 2 messages (key=mail, state=pending)\n", ok(t, "cancel", f.dir, "--key", "mail", "--state", "pending", "--yes"))
	assert.Contains(t, ok(t, "messages", f.dir, "mail"), "1 message\n", "the delayed one stays")
	for _, args := range [][]string{
		{"cancel", f.dir},
		{"cancel", f.dir, "5", "--key", "mail"},
		{"cancel", f.dir, "--queue", admin.DefaultQueue, "--yes"},
	} {
		r := runBin(t, 30*time.Second, args...)
		assert.Equal(t, 2, r.code, "%v: stderr %q", args, r.stderr)
	}
}

// On a terminal, cancel by filter asks; a message enqueued while the
// question waits is not cancelled.
func TestCancelOnATerminalCancelsWhatWasCounted(t *testing.T) {
	f := newFixture(t)
	e, err := ringwal.Open(f.dir, ringwal.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	srv := httptest.NewServer(admin.NewHandler(e, admin.Options{}))
	t.Cleanup(srv.Close)

	text, code := ptyRun(t, "n", nil, "cancel", "--addr", srv.URL, "--key", "mail")
	assert.Equal(t, 0, code, text)
	assert.Contains(t, text, "About to cancel 3 messages (key=mail). Proceed? [y/N]")
	assert.Contains(t, text, "nothing cancelled: declined")

	var late ringwal.ID
	text, code = ptyRun(t, "y", func() {
		late, err = e.Enqueue(context.Background(), ringwal.Message{Key: "mail", Payload: []byte("late")})
		require.NoError(t, err)
	}, "cancel", "--addr", srv.URL, "--key", "mail")
	assert.Equal(t, 0, code, text)
	assert.Contains(t, text, "cancelled 3 messages (key=mail)")
	var left []ringwal.ID
	for in := range e.Messages(ringwal.Filter{Key: "mail"}) {
		left = append(left, in.ID)
	}
	assert.Equal(t, []ringwal.ID{late}, left, "the message enqueued after the count stays")
}
