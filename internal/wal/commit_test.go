package wal_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/internal/wal"
)

// AppendCommit places its record at once (a record appended after the call
// returns comes after it) and Wait waits as Append would have.
func TestAppendCommitOrdersThenWaits(t *testing.T) {
	for _, mode := range []wal.Mode{wal.Write, wal.Fsync, wal.Buffered} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			l := open(t, dir, wal.Options{Mode: mode})
			first, second := rec(1), rec(2)
			c, err := l.AppendCommit(&first)
			require.NoError(t, err)
			require.NoError(t, l.AppendNoWait(&second))
			require.NoError(t, c.Wait())
			if mode != wal.Buffered {
				// Write and Fsync: Wait returned once the batch was written.
				assert.GreaterOrEqual(t, l.Stats().Records, uint64(1))
			}
			require.NoError(t, c.Wait(), "Wait may be called again")
			require.NoError(t, l.Close())

			l = open(t, dir, wal.Options{Mode: mode})
			assert.Equal(t, []uint64{1, 2}, replayIDs(t, l))
		})
	}
	t.Run("zero Commit", func(t *testing.T) {
		assert.NoError(t, wal.Commit{}.Wait())
	})
	t.Run("closed", func(t *testing.T) {
		l := open(t, t.TempDir(), wal.Options{})
		require.NoError(t, l.Close())
		r := rec(1)
		_, err := l.AppendCommit(&r)
		assert.ErrorIs(t, err, wal.ErrClosed)
	})
	t.Run("bad kind", func(t *testing.T) {
		l := open(t, t.TempDir(), wal.Options{})
		_, err := l.AppendCommit(&wal.Record{Kind: 200})
		assert.Error(t, err)
	})
}
