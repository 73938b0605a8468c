package wal_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/internal/wal"
)

// openHint opens dir, returns the hint Open found, and closes the log
// with next as its hint (nil: plain Close).
func openHint(t *testing.T, dir string, appends int, next []byte) []byte {
	t.Helper()
	l, err := wal.Open(dir, wal.Options{})
	require.NoError(t, err)
	var got []byte
	if l.Hint() != nil {
		got = append([]byte{}, l.Hint()...)
	}
	for i := range appends {
		r := rec(uint64(i + 1))
		require.NoError(t, l.Append(&r))
	}
	if next == nil {
		require.NoError(t, l.Close())
	} else {
		require.NoError(t, l.CloseWithHint(next))
	}
	return got
}

func TestHintIsReturnedOnlyWhileTheLogIsAsItsCloseLeftIt(t *testing.T) {
	dir := t.TempDir()
	assert.Nil(t, openHint(t, dir, 3, []byte("first")), "a new log has no hint")
	assert.Equal(t, []byte("first"), openHint(t, dir, 0, nil), "the hint of the Close before")
	assert.Equal(t, []byte("first"), openHint(t, dir, 0, []byte("second")),
		"a Close without a hint, and nothing appended, leaves the log as the hint says")
	assert.Equal(t, []byte("second"), openHint(t, dir, 2, nil))
	assert.Nil(t, openHint(t, dir, 0, []byte{}), "records appended since the hint")
	assert.Equal(t, []byte{}, openHint(t, dir, 0, nil), "an empty hint is a hint")
}

func TestHintIsIgnoredWhenDamagedOrTooLarge(t *testing.T) {
	dir := t.TempDir()
	openHint(t, dir, 1, []byte("hint"))
	path := filepath.Join(dir, "HINT")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	tests := []struct {
		name string
		file []byte
	}{
		{"flipped bit", append(append([]byte(nil), b[:len(b)-1]...), b[len(b)-1]^1)},
		{"truncated", b[:len(b)-1]},
		{"header only, cut", b[:8]},
		{"empty", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(path, tt.file, 0o644))
			assert.Nil(t, openHint(t, dir, 0, nil))
		})
	}
	openHint(t, dir, 0, make([]byte, wal.MaxHint+1))
	assert.Nil(t, openHint(t, dir, 0, nil), "a hint over MaxHint is not kept")
}
