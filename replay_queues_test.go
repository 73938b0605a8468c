package ringwal

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/internal/wal"
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
		"deletion of the default queue": {wal.Record{Kind: wal.KindQueueDelete, Time: 1}, wal.ErrCorrupt},
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

			_, err = Open(dir, Options{})
			assert.ErrorIs(t, err, tc.want)
		})
	}
}

// A deletion record can follow a snapshot that no longer holds its queue
// (a checkpoint began between DeleteQueue's record and its batch): replay
// ignores it, and the number may name another queue by then.
func TestDeletionTheSnapshotAlreadyHoldsIsIgnored(t *testing.T) {
	for name, recs := range map[string][]wal.Record{
		"no such queue": {{Kind: wal.KindQueueDelete, Queue: 1, Key: "emails", Time: 1}},
		"the number names another queue": {
			{Kind: wal.KindQueue, Queue: 1, Key: "webhooks", Time: 1},
			{Kind: wal.KindQueueDelete, Queue: 1, Key: "emails", Time: 2},
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			l, err := wal.Open(dir, wal.Options{})
			require.NoError(t, err)
			_, err = l.Replay(func(*wal.Record) error { return nil })
			require.NoError(t, err)
			require.NoError(t, l.RequireFormat(2))
			for i := range recs {
				require.NoError(t, l.Append(&recs[i]))
			}
			require.NoError(t, l.Close())

			e := openEngine(t, dir, Options{})
			var names []string
			for _, q := range e.Queues() {
				names = append(names, q.Name)
			}
			if len(recs) == 2 {
				assert.Equal(t, []string{"", "webhooks"}, names, "the other queue keeps the number")
			} else {
				assert.Equal(t, []string{""}, names)
			}
		})
	}
}
