package main

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/classify"
)

func TestSafeEscapesWhatATerminalActsOn(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"plain key slack:#ops/eu", "plain key slack:#ops/eu"},
		{"héllo wörld 日本 🙂", "héllo wörld 日本 🙂"},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"\x1b]0;pwned\x07", `\x1b]0;pwned\x07`},
		{"a\tb\nc\rd", `a\tb\nc\rd`},
		{"\x00\x7f", `\x00\x7f`},
		{"\u009b31m", `\u009b31m`},
		{"\u0085next line", `\u0085next line`},
		{"abc\u202egnp.exe", `abc\u202egnp.exe`},
		{"line\u2028sep", `line\u2028sep`},
		{"bad \x9b utf-8 \xff", `bad \x9b utf-8 \xff`},
		{`already \x1b`, `already \x1b`},
	} {
		assert.Equal(t, tc.want, safe(tc.in), "%q", tc.in)
	}
	assert.Equal(t, "one \\x1b\ntwo\\t", safeLines("one \x1b\ntwo\t"))
	assert.Equal(t, "-", cell(""))
}

// hostile is text a producer, a downstream or an operator may send:
// terminal escapes (a window title with BEL, a screen clear, a CSI in C1
// form) and tabs and newlines that would forge table cells and rows.
const hostile = "\x1b]0;pwned\x07\x1b[2J\u009b31m\tforged\tcell\nforged row"

// noControls fails if out holds any byte or rune a terminal acts on.
func noControls(t *testing.T, what, out string) {
	t.Helper()
	for _, bad := range []string{"\x1b", "\x07", "\u009b", "\x9b", "\r"} {
		assert.NotContains(t, out, bad, "%s: %q", what, out)
	}
	assert.NotContains(t, out, "\nforged row", "%s: a forged row", what)
}

// TestCLIOutputHoldsNoControlCharacters: keys, headers, dedup IDs,
// failure texts and notes carrying escape sequences and line breaks are
// printed escaped by every text command, over a directory and over
// --addr; --json keeps them exact.
func TestCLIOutputHoldsNoControlCharacters(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	e, err := ringwal.Open(dir, ringwal.Options{})
	require.NoError(t, err)
	ctx := context.Background()
	key := "k" + hostile
	id, err := e.Enqueue(ctx, ringwal.Message{Key: key, DedupID: "d" + hostile, Payload: []byte("p" + hostile),
		Headers: map[string]string{"h" + hostile: "v" + hostile}})
	require.NoError(t, err)
	d, got := e.TryDequeue()
	require.True(t, got)
	require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("HTTP 500: "+hostile), classify.Permanent)))
	require.NoError(t, e.MarkReviewed(id, "note"+hostile))
	_, err = e.Enqueue(ctx, ringwal.Message{Key: key, Payload: []byte("pending" + hostile)})
	require.NoError(t, err)
	require.NoError(t, e.PauseKey(key, time.Time{}))
	require.NoError(t, e.Close())

	runs := [][]string{
		{"dlq", "list", dir},
		{"dlq", "show", dir, fmt.Sprint(id)},
		{"inspect", dir},
		{"keys", "list", dir},
		{"messages", dir, key},
		{"cancel", dir, "999999"},
		{"keys", "resume", dir, key},
	}
	for _, args := range runs {
		r := runBin(t, 30*time.Second, args...)
		noControls(t, strings.Join(args[:2], " ")+" stdout", r.stdout)
		noControls(t, strings.Join(args[:2], " ")+" stderr", r.stderr)
	}
	show := ok(t, "dlq", "show", dir, fmt.Sprint(id))
	for _, want := range []string{`\x1b]0;pwned\x07`, `\u009b31m`, `\tforged\tcell\nforged row`} {
		assert.Contains(t, show, want, "escaped, still readable")
	}
	list := ok(t, "dlq", "list", dir)
	assert.Len(t, strings.Split(strings.TrimSpace(list), "\n"), 3, "a header, one row, the count: %s", list)

	js := ok(t, "dlq", "show", "--json", dir, fmt.Sprint(id))
	assert.Contains(t, js, `\u001b]0;pwned\u0007`, "JSON is JSON: exact, escaped by encoding/json")

	// The same over the admin API.
	e, err = ringwal.Open(dir, ringwal.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	srv := httptest.NewServer(admin.NewHandler(e, admin.Options{}))
	t.Cleanup(srv.Close)
	for _, args := range [][]string{
		{"dlq", "list", "--addr", srv.URL},
		{"dlq", "show", "--addr", srv.URL, fmt.Sprint(id)},
		{"keys", "list", "--addr", srv.URL},
		{"messages", "--addr", srv.URL, key},
		{"keys", "pause", "--addr", srv.URL, key},
	} {
		r := runBin(t, 30*time.Second, args...)
		require.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		noControls(t, strings.Join(args[:2], " ")+" --addr", r.stdout+r.stderr)
	}
}
