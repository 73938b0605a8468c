package wal

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	twal "github.com/tidwall/wal"
)

// Helpers of tidwall_compat_test.go.

// fixedTime stamps the .broken names of these tests.
var fixedTime = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// broken names the assumption (see segment.go) a failure breaks.
func broken(assumption, format string, args ...any) string {
	return fmt.Sprintf("tidwall/wal assumption %q no longer holds (segment.go): ", assumption) +
		fmt.Sprintf(format, args...)
}

// compatBatch returns a real batch (one record, a payload of pad bytes), so
// that scanLog accepts what tidwall/wal wrote.
func compatBatch(id uint64, pad int) []byte {
	buf := make([]byte, batchHeaderSize, batchHeaderSize+pad+32)
	buf = AppendRecord(buf, &Record{Kind: KindEnqueue, ID: id, Payload: bytes.Repeat([]byte{byte(id)}, pad)})
	e, _, _ := finishBatch(buf, 1, -1, nil, 0)
	return e
}

func openTW(t *testing.T, dir string, segSize int) *twal.Log {
	t.Helper()
	tw, err := twal.Open(dir, tidwallOptions(segSize))
	require.NoError(t, err)
	return tw
}

// writeTW writes count batches (ids from first) through tidwall/wal and
// returns them.
func writeTW(t *testing.T, tw *twal.Log, first uint64, count, pad int) [][]byte {
	t.Helper()
	var out [][]byte
	for i := 0; i < count; i++ {
		id := first + uint64(i)
		e := compatBatch(id, pad+int(id%7))
		require.NoError(t, tw.Write(id, e))
		out = append(out, e)
	}
	return out
}

// buildTW writes at least count batches through a new tidwall/wal log in
// dir, and more until its tail segment holds two or more entries (tests cut
// into the tail); it returns the batches.
func buildTW(t *testing.T, dir string, segSize, count int) [][]byte {
	t.Helper()
	tw := openTW(t, dir, segSize)
	want := writeTW(t, tw, 1, count, 20)
	for {
		segs, _, err := logView(dir)
		require.NoError(t, err)
		data, err := os.ReadFile(segs[len(segs)-1].path)
		require.NoError(t, err)
		if len(entriesOf(t, data)) >= 2 {
			break
		}
		want = append(want, writeTW(t, tw, uint64(len(want)+1), 1, 20)...)
	}
	require.NoError(t, tw.Close())
	return want
}

func indexes(t *testing.T, tw *twal.Log) (first, last uint64) {
	t.Helper()
	first, err := tw.FirstIndex()
	require.NoError(t, err)
	last, err = tw.LastIndex()
	require.NoError(t, err)
	return first, last
}

// dirFiles returns every file of dir with its content.
func dirFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	m := map[string]string{}
	for _, de := range ents {
		b, err := os.ReadFile(filepath.Join(dir, de.Name()))
		require.NoError(t, err)
		m[de.Name()] = string(b)
	}
	return m
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for name, data := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o640))
	}
}

func sortedNames(m map[string]string) []string {
	var names []string
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// entriesOf splits a segment file with nextEntry.
func entriesOf(t *testing.T, data []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for len(data) > 0 {
		e, n, ok := nextEntry(data)
		require.True(t, ok, broken("framing", "nextEntry refuses bytes tidwall/wal wrote"))
		out = append(out, e)
		data = data[n:]
	}
	return out
}

// entryOffset returns the byte offset of entry k (0-based) of a segment.
func entryOffset(t *testing.T, data []byte, k int) int {
	t.Helper()
	off := 0
	for ; k > 0; k-- {
		_, n, ok := nextEntry(data[off:])
		require.True(t, ok)
		off += n
	}
	return off
}
