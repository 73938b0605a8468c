package wal

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// An idle log costs no CPU: once everything appended is written, the
// writer sleeps until the next append, in every mode, however long the
// log stays idle. synctest's fake clock lets a day pass at once: a
// periodic timer or ticker in the writer would fire in it and count as
// wakeups.
func TestIdleWriterSleeps(t *testing.T) {
	for _, mode := range []Mode{Write, Fsync, Buffered} {
		t.Run(mode.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l, err := Open(t.TempDir(), Options{Mode: mode, FlushInterval: 5 * time.Millisecond})
				require.NoError(t, err)
				wakeups := func() uint64 {
					synctest.Wait() // the writer is blocked: its count is final
					l.mu.Lock()
					defer l.mu.Unlock()
					return l.wakeups
				}
				r := Record{Kind: KindEnqueue, ID: 1, Time: 1}
				require.NoError(t, l.Append(&r))
				require.NoError(t, l.Flush())
				before := wakeups()

				time.Sleep(24 * time.Hour) // fake time: returns once the bubble is idle that long
				require.Equal(t, before, wakeups(), "the writer woke while the log was idle")

				// And it still wakes for the next append.
				r.ID = 2
				require.NoError(t, l.Append(&r))
				require.NoError(t, l.Flush())
				require.Greater(t, wakeups(), before)
				require.NoError(t, l.Close())
			})
		})
	}
}
