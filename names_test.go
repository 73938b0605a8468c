package ringwal

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/internal/wal"
)

// invisibleNames hold a character that shows as nothing or reorders the
// text around it: a console, a terminal or a log would show another name.
var invisibleNames = []struct{ what, name string }{
	{"right-to-left override U+202E", "orders\u202ebackwards"},
	{"zero-width space U+200B", "orders\u200b"},
	{"left-to-right isolate U+2066", "\u2066orders"},
	{"pop directional isolate U+2069", "orders\u2069"},
	{"right-to-left mark U+200F", "ord\u200fers"},
	{"byte order mark U+FEFF", "\ufefforders"},
	{"soft hyphen U+00AD", "or\u00adders"},
	{"zero-width joiner U+200D", "or\u200dders"},
	{"Hangul filler U+3164", "orders\u3164"},
	{"variation selector U+FE0F", "orders\ufe0f"},
	{"tag character U+E0041", "orders\U000e0041"},
	{"control U+0001", "orders\x01"},
	{"C1 control U+009B", "orders\u009b"},
	{"DEL", "orders\x7f"},
}

// visibleNames are accepted: non-ASCII letters, symbols and punctuation
// show as themselves.
var visibleNames = []string{"orders", "café", "注文", "box📦", "a-b.c:d/e@f", "naïve"}

// A new queue or schedule name may not hold an invisible or reordering
// character (ErrInvalid naming it), on every way a name is made: DeclareQueue,
// an Enqueue into an undeclared queue, Options.Queues and AddSchedule.
func TestNewNamesRefuseInvisibleAndReorderingCharacters(t *testing.T) {
	ctx := context.Background()
	for _, tt := range invisibleNames {
		t.Run(tt.what, func(t *testing.T) {
			e := openEngine(t, "", Options{})
			assert.ErrorIs(t, e.DeclareQueue(tt.name, QueueOptions{}), ErrInvalid, "DeclareQueue")
			_, err := e.Enqueue(ctx, Message{Queue: tt.name})
			assert.ErrorIs(t, err, ErrInvalid, "Enqueue into a new queue")
			err = e.AddSchedule(Schedule{Name: tt.name, Spec: "@every 1h"})
			assert.ErrorIs(t, err, ErrInvalid, "AddSchedule")
			_, err = Open("", Options{Queues: map[string]QueueOptions{tt.name: {}}})
			assert.ErrorIs(t, err, ErrInvalid, "Options.Queues")
			for _, q := range e.Queues() {
				assert.NotEqual(t, tt.name, q.Name, "nothing was declared")
			}
		})
	}
	for _, name := range visibleNames {
		t.Run(name, func(t *testing.T) {
			e := openEngine(t, "", Options{Queues: map[string]QueueOptions{name + "-opt": {}}})
			assert.NoError(t, e.DeclareQueue(name, QueueOptions{}))
			_, err := e.Enqueue(ctx, Message{Queue: name + "-new"})
			assert.NoError(t, err)
			assert.NoError(t, e.AddSchedule(Schedule{Name: name, Spec: "@every 1h"}))
		})
	}
}

// A log an older version wrote, whose queue and schedule names hold such
// characters, still opens: only new names are refused. Its queue takes
// messages and a new declaration of its options, and its schedule may be
// added again (as a service does at every start); Options.Queues may list
// the queue.
func TestNamesAnOlderVersionLoggedStillOpen(t *testing.T) {
	const queue, sched = "orders\u202ebackwards", "nightly\u200b"
	dir := t.TempDir()
	l, err := wal.Open(dir, wal.Options{})
	require.NoError(t, err)
	_, err = l.Replay(func(*wal.Record) error { return nil })
	require.NoError(t, err)
	require.NoError(t, l.RequireFormat(2))
	for _, r := range []wal.Record{
		{Kind: wal.KindQueue, Queue: 1, Key: queue, Time: 1},
		{Kind: wal.KindEnqueue, ID: 1, Queue: 1, Time: 1, Payload: []byte("x")},
		{Kind: wal.KindSchedule, Key: sched, Time: 1, Text: `{"spec":"@every 1h"}`},
	} {
		require.NoError(t, l.Append(&r))
	}
	require.NoError(t, l.Close())

	e := openEngine(t, dir, Options{Queues: map[string]QueueOptions{queue: {}}})
	var names []string
	for _, q := range e.Queues() {
		names = append(names, q.Name)
	}
	assert.Contains(t, names, queue)
	_, err = e.Enqueue(context.Background(), Message{Queue: queue})
	assert.NoError(t, err, "its queue takes messages")
	assert.NoError(t, e.DeclareQueue(queue, QueueOptions{MaxMessages: 10}), "and new options")
	ss := e.Schedules()
	require.Len(t, ss, 1)
	assert.Equal(t, sched, ss[0].Name)
	assert.NoError(t, e.AddSchedule(Schedule{Name: sched, Spec: "@every 2h"}), "its schedule may be added again")
	assert.ErrorIs(t, e.DeclareQueue(queue+"2", QueueOptions{}), ErrInvalid, "a new name is refused")
}
