package wal

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// formatOnDisk returns dir's FORMAT file.
func formatOnDisk(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, formatFileName))
	require.NoError(t, err)
	return string(b)
}

// queueRecords are records that need format version 2, one of each kind
// that can, in an order a log could hold them.
func queueRecords() []Record {
	return []Record{
		{Kind: KindQueue, Queue: 7, Key: "emails", Time: t0, Text: `{"max":10}`},
		{Kind: KindEnqueue, ID: 1, Time: t0, Queue: 7, Payload: []byte("a")},
		{Kind: KindPublish, ID: 2, Time: t0, Payload: []byte("b"), Copies: []Copy{{0, 2}, {7, 3}}},
		{Kind: KindQueuePause, Queue: 7, Key: "emails", Time: t0, Until: t0 + 1e9},
		{Kind: KindQueueResume, Queue: 7, Key: "emails", Time: t0 + 1},
		{Kind: KindQueueDelete, Queue: 7, Key: "emails", Time: t0 + 2},
		{Kind: KindQueue, Time: t0, Text: `{"lease":1}`}, // the default queue's: a new kind all the same
	}
}

// replayAll replays l into copies of its records.
func replayAll(t *testing.T, l *Log) []Record {
	t.Helper()
	var got []Record
	_, err := l.Replay(func(r *Record) error {
		got = append(got, cloneRecord(r))
		return nil
	})
	require.NoError(t, err)
	return got
}

// A directory that never uses a named queue stays format version 1 through
// appends of every older kind, a checkpoint and reopening: the build before
// queues still opens it.
func TestDirectoryWithoutQueuesStaysFormatOne(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{})
	require.NoError(t, err)
	assert.Equal(t, "ringwal-wal 1\n", formatOnDisk(t, dir), "a new directory is created as version 1")
	recs := recordsBeforeQueues()
	require.NoError(t, l.AppendBatch(recs))
	_, err = l.Checkpoint(func(emit func(*Record) error) error {
		for i := range recs {
			if err := emit(&recs[i]); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.NoError(t, l.Close())
	l, err = Open(dir, Options{})
	require.NoError(t, err)
	assert.Equal(t, recs, replayAll(t, l))
	require.NoError(t, l.Close())
	assert.Equal(t, "ringwal-wal 1\n", formatOnDisk(t, dir))
}

// A directory whose FORMAT says 2 opens, verifies, dumps and takes queue
// records without RequireFormat; one that says 3 is refused with
// ErrVersion by all of them.
func TestFormatTwoOpensAndThreeIsRefused(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{})
	require.NoError(t, err)
	require.NoError(t, l.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, formatFileName), []byte("ringwal-wal 2\n"), 0o600))

	l, err = Open(dir, Options{})
	require.NoError(t, err)
	require.NoError(t, l.AppendBatch(queueRecords()))
	require.NoError(t, l.Close())
	l, err = Open(dir, Options{})
	require.NoError(t, err)
	assert.Equal(t, queueRecords(), replayAll(t, l))
	require.NoError(t, l.Close())
	_, err = Verify(dir, false)
	require.NoError(t, err)
	n := 0
	require.NoError(t, Dump(dir, func(uint64, *Record) error { n++; return nil }))
	assert.Equal(t, len(queueRecords()), n)

	require.NoError(t, os.WriteFile(filepath.Join(dir, formatFileName), []byte("ringwal-wal 3\n"), 0o600))
	_, err = Open(dir, Options{})
	require.ErrorIs(t, err, ErrVersion)
	assert.Contains(t, err.Error(), "format version 3")
	assert.Contains(t, err.Error(), "up to 2")
	_, err = Verify(dir, false)
	require.ErrorIs(t, err, ErrVersion)
	require.ErrorIs(t, Dump(dir, func(uint64, *Record) error { return nil }), ErrVersion)
}

// RequireFormat(2) on a version 1 directory rewrites FORMAT once: a
// temporary file, fsynced, renamed, and the directory fsynced, all before
// the next batch is written; a second call, and a call for 1, do nothing;
// the version stays raised after reopening.
func TestRequireFormatRaisesTheDirectoryOnce(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "data")
	l, err := Open(dir, Options{})
	require.NoError(t, err)
	defer l.Close()
	require.NoError(t, l.Append(&Record{Kind: KindAck, ID: 1}))
	rc := record(t, root)
	path := filepath.Join(dir, formatFileName)

	require.NoError(t, l.RequireFormat(2))
	assert.Equal(t, "ringwal-wal 2\n", formatOnDisk(t, dir))
	evs := rc.events()
	var steps []string
	for _, ev := range evs {
		steps = append(steps, ev.op.String()+" "+filepath.Base(ev.path))
	}
	assert.Equal(t, []string{"create FORMAT.tmp", "write FORMAT.tmp", "sync FORMAT.tmp", "rename FORMAT.tmp", "syncdir data"}, steps)
	assert.Equal(t, path, evs[3].to)
	assert.Empty(t, unsyncedDirChanges(evs))

	require.NoError(t, l.RequireFormat(2))
	require.NoError(t, l.RequireFormat(1))
	assert.Len(t, rc.events(), len(evs), "the directory says 2 already: no I/O")
	assert.Equal(t, "ringwal-wal 2\n", formatOnDisk(t, dir), "never lowered")

	// The next batch is written after the FORMAT file is durable.
	require.NoError(t, l.Append(&queueRecords()[0]))
	evs = rc.events()
	require.Greater(t, len(evs), 5)
	assert.Equal(t, opWrite, evs[5].op, "the batch after")
	assert.NotEqual(t, path+".tmp", evs[5].path)

	require.NoError(t, l.Close())
	l, err = Open(dir, Options{})
	require.NoError(t, err)
	assert.Len(t, replayAll(t, l), 2)
	require.NoError(t, l.Append(&queueRecords()[1]), "the directory says 2: no RequireFormat needed")
	require.NoError(t, l.Close())
	assert.Equal(t, "ringwal-wal 2\n", formatOnDisk(t, dir))
}

// RequireFormat refuses a version this build does not write, and, when
// the directory must be raised, a closed log.
func TestRequireFormatRefusesVersionsItDoesNotWrite(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{})
	require.NoError(t, err)
	for _, v := range []int{0, -1, 3} {
		err := l.RequireFormat(v)
		require.Error(t, err, "%d", v)
		assert.Contains(t, err.Error(), "format versions 1 to 2")
	}
	require.NoError(t, l.Close())
	require.ErrorIs(t, l.RequireFormat(2), ErrClosed)
	assert.Equal(t, "ringwal-wal 1\n", formatOnDisk(t, dir))
}

// Concurrent RequireFormat calls, among appends, rewrite FORMAT once, and
// none returns before the new file is durable.
func TestRequireFormatConcurrentCallsRewriteOnce(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "data")
	l, err := Open(dir, Options{})
	require.NoError(t, err)
	defer l.Close()
	rc := record(t, root)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			assert.NoError(t, l.RequireFormat(2))
			assert.Equal(t, int32(2), l.format.Load())
			r := Record{Kind: KindEnqueue, ID: uint64(g + 1), Queue: 1}
			assert.NoError(t, l.Append(&r))
		}()
		go func() {
			defer wg.Done()
			r := Record{Kind: KindAck, ID: uint64(g + 1)}
			assert.NoError(t, l.Append(&r))
		}()
	}
	wg.Wait()
	renames := 0
	for _, ev := range rc.events() {
		if ev.op == opRename && filepath.Base(ev.to) == formatFileName {
			renames++
		}
	}
	assert.Equal(t, 1, renames)
	assert.Equal(t, "ringwal-wal 2\n", formatOnDisk(t, dir))
}

// Before the directory says version 2, Append, AppendBatch and Checkpoint
// refuse a record that needs it (and write nothing of its batch), so that
// no build that reads only version 1 can meet one; a record the decoder
// would refuse is refused whatever the version.
func TestQueueRecordsNeedFormatTwo(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{})
	require.NoError(t, err)
	defer l.Close()
	for _, r := range queueRecords() {
		err := l.Append(&r)
		require.Error(t, err, "%s", r.Kind)
		assert.Contains(t, err.Error(), "need format version 2")
		assert.Contains(t, err.Error(), "RequireFormat")
		err = l.AppendNoWait(&r)
		require.Error(t, err, "%s", r.Kind)
	}
	err = l.AppendBatch([]Record{{Kind: KindAck, ID: 1}, queueRecords()[1]})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "record 1: enqueue record")
	_, err = l.Checkpoint(func(emit func(*Record) error) error { return emit(&queueRecords()[2]) })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "checkpoint: publish record")

	require.NoError(t, l.RequireFormat(2))
	require.NoError(t, l.AppendBatch(queueRecords()))
	for _, bad := range []Record{
		{Kind: KindEnqueue, Queue: MaxQueue + 1},
		{Kind: KindPublish, ID: 5, Copies: []Copy{{1, 5}, {2, 4}}},
	} {
		require.Error(t, l.Append(&bad))
		require.Error(t, l.AppendBatch([]Record{bad}))
		_, err = l.Checkpoint(func(emit func(*Record) error) error { return emit(&bad) })
		require.Error(t, err)
	}
	require.NoError(t, l.Close())

	l, err = Open(dir, Options{})
	require.NoError(t, err)
	assert.Equal(t, queueRecords(), replayAll(t, l), "only the batch appended after RequireFormat")
	require.NoError(t, l.Close())
}

// Queue records survive a checkpoint: written to the snapshot, replayed
// from it.
func TestQueueRecordsInASnapshot(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{})
	require.NoError(t, err)
	require.NoError(t, l.RequireFormat(2))
	recs := append(queueRecords(), sampleRecords()...)
	_, err = l.Checkpoint(func(emit func(*Record) error) error {
		for i := range recs {
			if err := emit(&recs[i]); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.NoError(t, l.Close())
	l, err = Open(dir, Options{})
	require.NoError(t, err)
	defer l.Close()
	assert.Equal(t, recs, replayAll(t, l))
}
