package ringwal_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/wal"
)

// A log record the engine cannot apply is refused, not replayed around: a
// message of a queue the log never declared must not land in the default
// queue, and a kind this build does not know must not be skipped.
func TestLogRecordsTheEngineCannotApplyAreRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		rec  wal.Record
		want error
	}{
		"message of an undeclared queue": {wal.Record{Kind: wal.KindEnqueue, ID: 1, Queue: 1, Time: 1, Payload: []byte("x")}, wal.ErrCorrupt},
		"publish copy in an undeclared queue": {wal.Record{Kind: wal.KindPublish, ID: 1, Time: 1, DedupID: "d",
			Copies: []wal.Copy{{Queue: 0, ID: 1}, {Queue: 1, ID: 2}}}, wal.ErrCorrupt},
		"a kind not handled": {wal.Record{Kind: wal.KindQueueDelete, Queue: 1, Key: "emails", Time: 1}, ringwal.ErrVersion},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			l, err := wal.Open(dir, wal.Options{})
			require.NoError(t, err)
			_, err = l.Replay(func(*wal.Record) error { return nil })
			require.NoError(t, err)
			require.NoError(t, l.RequireFormat(2))
			require.NoError(t, l.Append(&tc.rec))
			require.NoError(t, l.Close())

			_, err = ringwal.Open(dir, ringwal.Options{})
			assert.ErrorIs(t, err, tc.want)
		})
	}
}
