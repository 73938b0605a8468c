package wal

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// In Write and Buffered modes the writer hands the tail to the writeback
// goroutine as it grows, across segment switches, and Close stops that
// goroutine; Fsync mode has none (every batch is fsynced anyway). What
// was written reads back whole either way.
func TestWritebackFollowsTheTail(t *testing.T) {
	for _, tc := range []struct {
		mode      Mode
		writeback bool
	}{{Write, true}, {Buffered, true}, {Fsync, false}} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			l, err := Open(dir, Options{Mode: tc.mode, SegmentSize: 256 << 10, CompressAbove: -1})
			require.NoError(t, err)
			require.Equal(t, tc.writeback, l.wbJobs != nil)
			payload := bytes.Repeat([]byte{'x'}, 4<<10)
			const n = 512 // 2 MiB: eight segments, 32 quarters
			for i := range n {
				r := Record{Kind: KindEnqueue, ID: uint64(i + 1), Time: 1, Payload: payload}
				require.NoError(t, l.Append(&r))
				require.NoError(t, l.Flush())
			}
			require.NoError(t, l.Close())
			runs := l.wbRuns.Load()
			if tc.writeback {
				// Jobs are skipped while the goroutine is busy, never all.
				assert.Positive(t, runs)
			} else {
				assert.Zero(t, runs)
			}
			l, err = Open(dir, Options{Mode: tc.mode})
			require.NoError(t, err)
			defer l.Close()
			got := 0
			_, err = l.Replay(func(r *Record) error {
				got++
				assert.Equal(t, uint64(got), r.ID)
				assert.Len(t, r.Payload, len(payload))
				return nil
			})
			require.NoError(t, err)
			assert.Equal(t, n, got)
		})
	}
}
