package wal

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// payloadFor is record id's payload: sizes from none to above the tests'
// compression thresholds, bytes that barely compress, the same each call.
func payloadFor(id uint64) []byte {
	n := int(id * 37 % 700)
	if n == 0 {
		return nil
	}
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(id, 1))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func enqueueRecord(id uint64) Record {
	return Record{Kind: KindEnqueue, ID: id, Time: int64(id), Key: fmt.Sprint("k", id%5), Payload: payloadFor(id)}
}

// readBack reads the record at loc and checks it is record id's.
func readBack(t *testing.T, l *Log, loc Location, id uint64) {
	t.Helper()
	var r Record
	require.NoError(t, l.ReadAt(loc, &r), "record %d at %s", id, loc)
	assert.Equal(t, id, r.ID, "at %s", loc)
	assert.Equal(t, payloadFor(id), r.Payload, "record %d's payload", id)
	assert.Equal(t, fmt.Sprint("k", id%5), r.Key)
}

func TestReadAtReturnsEachRecordWhereItsAppendSaidItWent(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  Options
		// batch: append in batches of this many records (0: one at a time)
		batch int
		spans bool // the records fill several segments
	}{
		{name: "write mode, one at a time, small segments", opt: Options{Mode: Write, SegmentSize: 4 << 10, CompressAbove: 256}, spans: true},
		{name: "fsync mode, uncompressed", opt: Options{Mode: Fsync, SegmentSize: 4 << 10, CompressAbove: -1}, spans: true},
		{name: "batches of 7, compressed", opt: Options{Mode: Write, SegmentSize: 8 << 10, CompressAbove: 64}, batch: 7, spans: true},
		{name: "buffered mode, after a flush", opt: Options{Mode: Buffered, SegmentSize: 4 << 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l, err := Open(dir, tc.opt)
			require.NoError(t, err)
			const n = 300
			locs := make(map[uint64]Location, n)
			var commits []func()
			for id := uint64(1); id <= n; {
				if tc.batch == 0 {
					rec := enqueueRecord(id)
					c, err := l.AppendCommit(&rec)
					require.NoError(t, err)
					require.NoError(t, c.Wait())
					this := id
					commits = append(commits, func() {
						loc, ok := c.Location()
						require.True(t, ok, "record %d has a location once written", this)
						locs[this] = loc
					})
					id++
					continue
				}
				rs := make([]Record, 0, tc.batch)
				for ; len(rs) < tc.batch && id <= n; id++ {
					rs = append(rs, enqueueRecord(id))
				}
				offs := make([]uint32, len(rs))
				c, err := l.AppendBatchCommitLocated(rs, offs)
				require.NoError(t, err)
				require.NoError(t, c.Wait())
				for i := range rs {
					commits = append(commits, func() {
						loc, ok := c.LocationAt(offs[i])
						require.True(t, ok)
						locs[rs[i].ID] = loc
					})
				}
			}
			require.NoError(t, l.Flush())
			for _, f := range commits {
				f()
			}
			segments := map[uint64]bool{}
			for id := uint64(1); id <= n; id++ {
				readBack(t, l, locs[id], id)
				segments[locs[id].Segment] = true
			}
			if tc.spans {
				assert.Greater(t, len(segments), 3, "the records span several segments")
			}

			// Locations outlive the process: the same files after a reopen.
			require.NoError(t, l.Close())
			l, err = Open(dir, tc.opt)
			require.NoError(t, err)
			defer l.Close()
			for id := uint64(n); id >= 1; id-- { // backwards: no batch read twice in a row
				readBack(t, l, locs[id], id)
			}
		})
	}
}

func TestCommitHasNoLocationBeforeItsBatchIsWritten(t *testing.T) {
	l, err := Open(t.TempDir(), Options{Mode: Buffered, FlushInterval: 1 << 40})
	require.NoError(t, err)
	defer l.Close()
	rec := enqueueRecord(1)
	c, err := l.AppendCommit(&rec)
	require.NoError(t, err)
	_, ok := c.Location()
	assert.False(t, ok, "a buffered record not yet written has no location")
	require.NoError(t, l.Flush())
	loc, ok := c.Location()
	require.True(t, ok)
	readBack(t, l, loc, 1)

	_, ok = Commit{}.Location()
	assert.False(t, ok, "the zero Commit names nothing")
}

func TestReadAtNamesTheFileAndOffsetOfWhatItCannotRead(t *testing.T) {
	setup := func(t *testing.T) (*Log, Location, string) {
		dir := t.TempDir()
		l, err := Open(dir, Options{Mode: Write, CompressAbove: -1})
		require.NoError(t, err)
		t.Cleanup(func() { l.Close() })
		for id := uint64(1); id <= 3; id++ {
			rec := enqueueRecord(id + 10)
			c, err := l.AppendCommit(&rec)
			require.NoError(t, err)
			require.NoError(t, c.Wait())
			if id == 2 {
				loc, ok := c.Location()
				require.True(t, ok)
				t.Cleanup(func() {})
				return l, loc, filepath.Join(dir, "log", segmentName(loc.Segment))
			}
		}
		panic("unreachable")
	}

	t.Run("a damaged byte in the batch", func(t *testing.T) {
		l, loc, path := setup(t)
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		require.NoError(t, err)
		_, err = f.WriteAt([]byte{0xff}, int64(loc.Entry)+60)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		var r Record
		err = l.ReadAt(loc, &r)
		require.ErrorIs(t, err, ErrCorrupt)
		assert.Contains(t, err.Error(), "log/"+segmentName(loc.Segment))
		assert.Contains(t, err.Error(), fmt.Sprintf("offset %d", loc.Entry))
		assert.Nil(t, r.Payload, "nothing half-read is handed out")
	})
	t.Run("an offset past the record's batch body", func(t *testing.T) {
		l, loc, _ := setup(t)
		loc.Record += 1 << 20
		err := l.ReadAt(loc, &Record{})
		require.ErrorIs(t, err, ErrCorrupt)
		assert.Contains(t, err.Error(), "offset")
	})
	t.Run("an offset that is no entry", func(t *testing.T) {
		l, loc, _ := setup(t)
		loc.Entry += 3
		require.ErrorIs(t, l.ReadAt(loc, &Record{}), ErrCorrupt)
	})
	t.Run("a missing file", func(t *testing.T) {
		l, loc, path := setup(t)
		l.reader.forget()
		require.NoError(t, os.Rename(path, path+".gone"))
		err := l.ReadAt(loc, &Record{})
		require.ErrorIs(t, err, fs.ErrNotExist)
		assert.Contains(t, err.Error(), "log/"+segmentName(loc.Segment))
	})
	t.Run("the zero location", func(t *testing.T) {
		l, _, _ := setup(t)
		assert.Error(t, l.ReadAt(Location{}, &Record{}))
	})
}

func TestReadAtWhileAppendsAndReadsRunConcurrently(t *testing.T) {
	l, err := Open(t.TempDir(), Options{Mode: Write, SegmentSize: 16 << 10, CompressAbove: 128})
	require.NoError(t, err)
	defer l.Close()
	const writers, each = 4, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id := uint64(w*each + i + 1)
				rec := enqueueRecord(id)
				c, err := l.AppendCommit(&rec)
				if !assert.NoError(t, err) || !assert.NoError(t, c.Wait()) {
					return
				}
				loc, ok := c.Location()
				if !assert.True(t, ok) {
					return
				}
				var r Record
				if assert.NoError(t, l.ReadAt(loc, &r)) {
					assert.Equal(t, id, r.ID)
					assert.Equal(t, payloadFor(id), r.Payload)
				}
			}
		}()
	}
	wg.Wait()
}

func TestReadAtDoesNotReadASegmentACheckpointRemoved(t *testing.T) {
	l, err := Open(t.TempDir(), Options{Mode: Write, SegmentSize: 2 << 10, CompressAbove: -1})
	require.NoError(t, err)
	defer l.Close()
	var first Location
	for id := uint64(1); id <= 50; id++ {
		rec := enqueueRecord(id)
		c, err := l.AppendCommit(&rec)
		require.NoError(t, err)
		require.NoError(t, c.Wait())
		if id == 1 {
			var ok bool
			first, ok = c.Location()
			require.True(t, ok)
			readBack(t, l, first, 1) // the reader now holds its file open
		}
	}
	_, err = l.Checkpoint(func(func(*Record) error) error { return nil })
	require.NoError(t, err)
	err = l.ReadAt(first, &Record{})
	require.ErrorIs(t, err, fs.ErrNotExist, "the checkpoint dropped the segment; an open descriptor must not still read it")
}

// FuzzReadAt reads a record at any location of any segment bytes: an
// error or a record, never a panic or an allocation the bytes did not
// earn (the entry length is checked against the batch bound first).
func FuzzReadAt(f *testing.F) {
	good := enqueueRecord(12)
	entry, _, _ := finishBatch(AppendRecord(make([]byte, batchHeaderSize), &good), 1, -1, nil, 0)
	framed := append(appendUvarint(nil, uint64(len(entry))), entry...)
	f.Add(framed, uint32(0), uint32(0))
	f.Add(framed, uint32(1), uint32(0))
	f.Add(framed, uint32(0), uint32(3))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f}, uint32(0), uint32(0))
	f.Fuzz(func(t *testing.T, data []byte, entry, record uint32) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, segmentName(1)), data, 0o600))
		l := &Log{logDir: dir}
		defer l.reader.forget()
		var r Record
		if err := l.ReadAt(Location{Segment: 1, Entry: entry, Record: record}, &r); err != nil {
			assert.Nil(t, r.Payload)
		}
	})
}
