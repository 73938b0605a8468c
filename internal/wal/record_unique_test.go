package wal

import (
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Unique field's exact encoding: one byte behind presence bit 18,
// after every other field. Part of the on-disk format.
func TestUniqueFieldEncoding(t *testing.T) {
	r := Record{Kind: KindEnqueue, ID: 5, DedupID: "d", Unique: 2}
	// length 8, kind 1, mask fID|fDedupID|fUnique = 0x40011 (three bytes),
	// ID 5, DedupID "d", unique 2
	want := "08" + "01" + "918010" + "05" + "0164" + "02"
	enc := AppendRecord(nil, &r)
	assert.Equal(t, want, hex.EncodeToString(enc))
	var got Record
	n, err := DecodeRecord(enc, &got)
	require.NoError(t, err)
	assert.Equal(t, len(enc), n)
	assert.Equal(t, r, got)
}

// Unique 0 is not encoded: a record without a uniqueness mode encodes
// exactly as before the field existed.
func TestUniqueZeroIsNotEncoded(t *testing.T) {
	for _, r := range recordsBeforeQueues() {
		with := r
		with.Unique = 0
		assert.Equal(t, AppendRecord(nil, &r), AppendRecord(nil, &with), "%s", r.Kind)
	}
}

// A record with a uniqueness mode needs format version 2, as a named
// queue's does: refused before RequireFormat(2), appended and replayed
// after it.
func TestUniqueRecordsNeedFormatTwo(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{})
	require.NoError(t, err)
	defer l.Close()
	r := Record{Kind: KindEnqueue, ID: 1, Time: t0, DedupID: "job", Unique: 1}
	err = l.Append(&r)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "need format version 2")
	_, err = l.Checkpoint(func(emit func(*Record) error) error { return emit(&r) })
	require.Error(t, err)

	require.NoError(t, l.RequireFormat(2))
	require.NoError(t, l.Append(&r))
	require.NoError(t, l.Close())
	l, err = Open(dir, Options{})
	require.NoError(t, err)
	assert.Equal(t, []Record{r}, replayAll(t, l))
	require.NoError(t, l.Close())
}
