package ringwal_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

// The data directory holds every message and dead letter, payloads
// included: its files are the owner's alone unless Options.GroupReadable,
// whatever the umask, and Open refuses a directory others may write.

func TestDataDirectoryIsOwnerOnlyAfterACheckpoint(t *testing.T) {
	for _, group := range []bool{false, true} {
		t.Run(map[bool]string{false: "owner only", true: "GroupReadable"}[group], func(t *testing.T) {
			old := syscall.Umask(0o022)
			t.Cleanup(func() { syscall.Umask(old) })
			wantFile, wantDir := fs.FileMode(0o600), fs.FileMode(0o700)
			if group {
				wantFile, wantDir = 0o640, 0o750
			}
			dir := filepath.Join(t.TempDir(), "data")
			e, err := ringwal.Open(dir, ringwal.Options{GroupReadable: group})
			require.NoError(t, err)
			for i := 0; i < 10; i++ {
				_, err := e.Enqueue(ctxBG, ringwal.Message{Payload: []byte("secret")})
				require.NoError(t, err)
			}
			require.NoError(t, e.Checkpoint())
			require.NoError(t, e.Close())

			files := 0
			require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				require.NoError(t, err)
				fi, err := os.Lstat(p)
				require.NoError(t, err)
				if fi.IsDir() {
					assert.Equal(t, wantDir, fi.Mode().Perm(), "directory %s", p)
				} else {
					files++
					assert.True(t, fi.Mode().IsRegular(), "%s", p)
					assert.Equal(t, wantFile, fi.Mode().Perm(), "file %s", p)
				}
				return nil
			}))
			assert.GreaterOrEqual(t, files, 4, "FORMAT, LOCK, a snapshot and a segment at least")
		})
	}
}

func TestOpenRefusesAnUnsafeDataDirectory(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o777))
	_, err := ringwal.Open(dir, ringwal.Options{})
	require.ErrorIs(t, err, ringwal.ErrUnsafeDir)
	assert.Contains(t, err.Error(), "chmod 700 "+dir)

	if os.Geteuid() != 0 {
		t.Skip("needs root to give a directory to another user")
	}
	dir = t.TempDir()
	require.NoError(t, os.Chown(dir, 65534, 65534))
	_, err = ringwal.Open(dir, ringwal.Options{})
	require.ErrorIs(t, err, ringwal.ErrUnsafeDir)
	assert.Contains(t, err.Error(), "uid 65534")
}
