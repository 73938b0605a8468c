package ringwal_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/wal"
)

// A log that holds named queues' records (written by a build that has
// them) is refused, not replayed around: a message of a named queue must
// not land in the default queue, and a queue's declaration must not be
// skipped.
func TestLogWithQueueRecordsIsRefusedByAnEngineWithoutQueues(t *testing.T) {
	for name, rec := range map[string]wal.Record{
		"declaration": {Kind: wal.KindQueue, Queue: 1, Key: "emails", Time: 1},
		"message":     {Kind: wal.KindEnqueue, ID: 1, Queue: 1, Time: 1, Payload: []byte("x")},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			l, err := wal.Open(dir, wal.Options{})
			require.NoError(t, err)
			_, err = l.Replay(func(*wal.Record) error { return nil })
			require.NoError(t, err)
			require.NoError(t, l.RequireFormat(2))
			require.NoError(t, l.Append(&rec))
			require.NoError(t, l.Close())

			_, err = ringwal.Open(dir, ringwal.Options{})
			assert.ErrorIs(t, err, ringwal.ErrVersion)
		})
	}
}
