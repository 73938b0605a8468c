package ringwal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/classify"
)

// manyHeaders returns n headers named h0, h1, ... with values of size bytes.
func manyHeaders(n, size int) map[string]string {
	h := make(map[string]string, n)
	for i := range n {
		h[fmt.Sprint("h", i)] = strings.Repeat("v", size)
	}
	return h
}

// Headers are bounded like the payload: too many entries, a name too long
// or too many bytes in all is ErrInvalid naming what was wrong, on every
// way in (Enqueue, TryEnqueue, EnqueueBatch, AddSchedule's message, and
// headers an OnEnqueue hook adds); at the bounds they are accepted.
func TestHeadersPastTheirBoundsAreRefused(t *testing.T) {
	long := strings.Repeat("n", maxHeaderName+1)
	tests := []struct {
		name    string
		headers map[string]string
		why     string // "" accepted
	}{
		{"none", nil, ""},
		{"at the count bound", manyHeaders(maxHeaders, 1), ""},
		{"past the count bound", manyHeaders(maxHeaders+1, 1), "headers exceed"},
		{"a name at its bound", map[string]string{long[1:]: "v"}, ""},
		{"a name past its bound", map[string]string{long: "v"}, "header name of"},
		{"at the byte bound", map[string]string{"k": strings.Repeat("v", maxHeaderBytes-1)}, ""},
		{"one value past the byte bound", map[string]string{"k": strings.Repeat("v", maxHeaderBytes)}, "bytes (names and values) exceed"},
		{"many values past the byte bound", manyHeaders(64, maxHeaderBytes/64), "bytes (names and values) exceed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check := func(t *testing.T, err error) {
				t.Helper()
				if tt.why == "" {
					assert.NoError(t, err)
					return
				}
				assert.ErrorIs(t, err, ErrInvalid)
				assert.ErrorContains(t, err, tt.why)
			}
			e := openEngine(t, "", Options{})
			_, err := e.Enqueue(context.Background(), Message{Headers: tt.headers})
			check(t, err)
			_, err = e.TryEnqueue(Message{Headers: tt.headers})
			check(t, err)
			_, err = e.EnqueueBatch(context.Background(), []Message{{}, {Headers: tt.headers}})
			check(t, err)
			err = e.AddSchedule(Schedule{Name: "s", Spec: "@every 1h", Message: Message{Headers: tt.headers}})
			check(t, err)

			hooked := openEngine(t, "", Options{OnEnqueue: func(_ context.Context, m *Message) { m.Headers = tt.headers }})
			_, err = hooked.Enqueue(context.Background(), Message{})
			check(t, err)
		})
	}
}

// A failure's error text is kept (in the message's history, its dead
// letter and the log) cut to maxFailureText bytes at a UTF-8 boundary,
// ending with a marker that says it was cut and from how much; a text
// within the bound is kept as it is.
func TestFailureTextIsKeptBounded(t *testing.T) {
	tests := []struct {
		name string
		in   string
		cut  bool
	}{
		{"empty", "", false},
		{"short", "HTTP 503", false},
		{"at the bound", strings.Repeat("x", maxFailureText), false},
		{"one past", strings.Repeat("x", maxFailureText+1), true},
		{"a megabyte", strings.Repeat("x", 1<<20), true},
		{"multibyte across the cut", strings.Repeat("é", maxFailureText), true},
		{"four-byte runes", strings.Repeat("𝄞", maxFailureText), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := failureText(tt.in)
			assert.LessOrEqual(t, len(got), maxFailureText)
			assert.Equal(t, got, failureText(got), "cutting again changes nothing")
			if !tt.cut {
				assert.Equal(t, tt.in, got)
				return
			}
			assert.True(t, utf8.ValidString(got), "cut at a UTF-8 boundary")
			assert.Contains(t, got, fmt.Sprintf("[cut from %d bytes]", len(tt.in)))
			kept, _, _ := strings.Cut(got, " …[cut from")
			assert.True(t, strings.HasPrefix(tt.in, kept), "what is kept is the text's start")
		})
	}
}

// A handler's huge error texts (a downstream's whole answer) cost the heap
// and the log the bound, not their size: every failure kept in the
// history and the dead letter is cut, and a reopen replays the cut text.
func TestHugeFailureTextsAreCutInTheHistoryTheDeadLetterAndTheLog(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	huge := strings.Repeat("upstream said: no. ", 1<<16) // 1.2 MiB
	want := failureText(huge)
	require.Less(t, len(want), len(huge))

	id, err := e.Enqueue(context.Background(), Message{Payload: []byte("x")})
	require.NoError(t, err)
	d, err := e.Dequeue(context.Background())
	require.NoError(t, err)
	require.NoError(t, e.Nack(d.Lease, classify.After(errors.New(huge), time.Nanosecond)))
	info, err := e.Get(id)
	require.NoError(t, err)
	assert.Equal(t, want, info.LastError, "the live message's history")
	var retry Delivery
	require.Eventually(t, func() bool {
		var ok bool
		retry, ok = e.TryDequeue()
		return ok
	}, 5*time.Second, time.Millisecond)
	require.NoError(t, e.Nack(retry.Lease, classify.Mark(errors.New(huge), classify.Permanent)))

	check := func(what string) {
		dl, err := e.DeadLetter(id)
		require.NoError(t, err, what)
		require.Len(t, dl.Failures, 2, what)
		for i, f := range dl.Failures {
			assert.Equal(t, want, f.Error, "%s: failure %d", what, i)
		}
	}
	check("the dead letter")
	require.NoError(t, e.Close())
	e, err = Open(dir, Options{})
	require.NoError(t, err)
	defer e.Close()
	check("the dead letter after a reopen")
}
