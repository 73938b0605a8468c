package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/internal/wal"
)

// The names, keys and headers the CLI prints may hold characters that
// show as nothing or reverse the text after them: a queue and a schedule
// an older version declared (new names refuse them), any key or header.
const (
	oddQueue = "orders\u202ebackwards"
	oddSched = "nightly\u200b"
	oddKey   = "acct\u2066-1\u2069"
)

// invisibleRunes are what none of the CLI's output may hold raw.
var invisibleRunes = []string{"\u202e", "\u200b", "\u2066", "\u2069", "\ufeff"}

// oddDir writes a data directory whose log declares oddQueue and oddSched
// (as an older version would have), with a dead letter of oddKey in
// oddQueue carrying odd headers and error text.
func oddDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	l, err := wal.Open(dir, wal.Options{})
	require.NoError(t, err)
	_, err = l.Replay(func(*wal.Record) error { return nil })
	require.NoError(t, err)
	require.NoError(t, l.RequireFormat(2))
	for _, r := range []wal.Record{
		{Kind: wal.KindQueue, Queue: 1, Key: oddQueue, Time: 1},
		{Kind: wal.KindSchedule, Key: oddSched, Time: 1, Text: `{"spec":"@every 1h","message":{"Queue":"` + oddQueue + `"}}`},
	} {
		require.NoError(t, l.Append(&r))
	}
	require.NoError(t, l.Close())

	e, err := ringwal.Open(dir, ringwal.Options{})
	require.NoError(t, err)
	ctx := context.Background()
	_, err = e.Enqueue(ctx, ringwal.Message{Queue: oddQueue, Key: oddKey, Payload: []byte("x"),
		Headers: map[string]string{"h\u200b": "v\u202e\ufeff"}})
	require.NoError(t, err)
	d, err := e.Queue(oddQueue).Dequeue(ctx)
	require.NoError(t, err)
	require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("refused by \u202eevil"), classify.Permanent)))
	_, err = e.Enqueue(ctx, ringwal.Message{Queue: oddQueue, Key: oddKey, Payload: []byte("y")})
	require.NoError(t, err)
	require.NoError(t, e.Close())
	return dir
}

// Every text and JSON printer of the CLI, `wal dump` included, shows such
// characters as escapes (\u202e): never raw, where the terminal would
// hide them or reverse the line.
func TestPrintedNamesKeysAndHeadersShowInvisibleCharactersEscaped(t *testing.T) {
	dir := oddDir(t)
	for _, args := range [][]string{
		{"queues", "list", dir},
		{"queues", "list", "--json", dir},
		{"schedules", "list", dir},
		{"schedules", "list", "--json", dir},
		{"dlq", "list", dir},
		{"dlq", "show", dir, "1"},
		{"dlq", "show", "--json", dir, "1"},
		{"messages", dir, oddKey, "--queue", oddQueue},
		{"keys", "list", dir},
		{"wal", "dump", dir},
	} {
		t.Run(strings.Join(args[:len(args)-1], " "), func(t *testing.T) {
			out := ok(t, args...)
			for _, raw := range invisibleRunes {
				assert.NotContains(t, out, raw, "%q raw in:\n%s", raw, out)
			}
			assert.True(t, strings.Contains(out, `\u202e`) || strings.Contains(out, `\u2066`),
				"an escape shows where it was:\n%s", out)
		})
	}
	dump := ok(t, "wal", "dump", "--kind", "queue", dir)
	assert.Contains(t, dump, `"key":"orders\u202ebackwards"`, "the dump's JSON escapes it, meaning the same string")
}
