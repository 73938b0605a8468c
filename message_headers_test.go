package ringwal_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

// Every reader of a message gets Headers of its own: a handler that writes
// to its delivery's Headers changes no other delivery, no Get, Peek or
// Messages result and no other queue's copy of a published message (a
// map shared by them would make the runtime abort on a concurrent read).
func TestEachReaderGetsItsOwnHeaders(t *testing.T) {
	e := open(t, "", ringwal.Options{})
	for _, q := range []string{"a", "b"} {
		require.NoError(t, e.DeclareQueue(q, ringwal.QueueOptions{Topics: []string{"t"}}))
	}
	ids, err := e.Publish(context.Background(), "t", ringwal.Message{Headers: map[string]string{"h": "v"}})
	require.NoError(t, err)
	require.Len(t, ids, 2)

	d, err := e.Queue("a").Dequeue(context.Background())
	require.NoError(t, err)
	d.Message.Headers["h"] = "changed by the handler"
	d.Message.Headers["new"] = "x"

	reads := map[string]func() map[string]string{
		"Get": func() map[string]string {
			info, err := e.Get(d.ID)
			require.NoError(t, err)
			return info.Message.Headers
		},
		"Get of the other copy": func() map[string]string {
			info, err := e.Get(ids[1])
			require.NoError(t, err)
			return info.Message.Headers
		},
		"Messages": func() map[string]string {
			for info := range e.Messages(ringwal.Filter{}) {
				if info.ID == d.ID {
					return info.Message.Headers
				}
			}
			return nil
		},
		"the other copy's delivery": func() map[string]string {
			d, err := e.Queue("b").Dequeue(context.Background())
			require.NoError(t, err)
			return d.Message.Headers
		},
	}
	for name, read := range reads {
		assert.Equal(t, map[string]string{"h": "v"}, read(), name)
	}
	// Two reads of one message do not share either.
	info, err := e.Get(d.ID)
	require.NoError(t, err)
	info.Message.Headers["h"] = "changed by a reader"
	again, err := e.Get(d.ID)
	require.NoError(t, err)
	assert.Equal(t, "v", again.Message.Headers["h"])
}
