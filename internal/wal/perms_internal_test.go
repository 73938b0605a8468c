package wal

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The log's files hold every message's payload: only the owner (and with
// GroupReadable the group) may read them, whatever the umask, and nothing
// another user can plant in the directory is followed or trusted.

func emitNothing(func(*Record) error) error { return nil }

func appendN(t *testing.T, l *Log, from, n uint64) {
	t.Helper()
	for id := from; id < from+n; id++ {
		r := Record{Kind: KindEnqueue, ID: id, Payload: bytes.Repeat([]byte{'p'}, 64)}
		require.NoError(t, l.Append(&r))
	}
}

// modesUnder returns the mode of every file and directory under root,
// root included, by path relative to root.
func modesUnder(t *testing.T, root string) map[string]fs.FileMode {
	t.Helper()
	out := map[string]fs.FileMode{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[rel] = fi.Mode()
		return nil
	}))
	return out
}

func TestFilesAndDirectoriesGetExactModesWhateverTheUmask(t *testing.T) {
	cases := []struct {
		name      string
		umask     int
		group     bool
		file, dir fs.FileMode
	}{
		{"owner only, umask 022", 0o022, false, 0o600, 0o700},
		{"owner only, umask 000", 0o000, false, 0o600, 0o700},
		{"group-readable, umask 022", 0o022, true, 0o640, 0o750},
		{"group-readable, umask 077", 0o077, true, 0o640, 0o750},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := syscall.Umask(tc.umask)
			t.Cleanup(func() { syscall.Umask(old) })
			parent := filepath.Join(t.TempDir(), "new")
			dir := filepath.Join(parent, "data")
			o := Options{SegmentSize: 512, GroupReadable: tc.group}

			l, err := Open(dir, o)
			require.NoError(t, err)
			appendN(t, l, 1, 40) // several segment switches
			_, err = l.Checkpoint(emitNothing)
			require.NoError(t, err)
			appendN(t, l, 41, 20)
			require.NoError(t, l.CloseWithHint([]byte("hint")))

			// A torn tail, so that the next Open keeps a .broken copy.
			segs, _, err := logView(filepath.Join(dir, logDirName))
			require.NoError(t, err)
			f, err := os.OpenFile(segs[len(segs)-1].path, os.O_WRONLY|os.O_APPEND, 0)
			require.NoError(t, err)
			_, err = f.Write(bytes.Repeat([]byte{0xff}, 16))
			require.NoError(t, err)
			require.NoError(t, f.Close())
			l, err = Open(dir, o)
			require.NoError(t, err)
			require.NotEmpty(t, l.Repair().BrokenFiles, "precondition: a .broken copy")
			appendN(t, l, 100, 20)
			require.NoError(t, l.Close())

			modes := modesUnder(t, parent)
			kinds := map[string]bool{}
			for p, m := range modes {
				if m.IsDir() {
					assert.Equal(t, tc.dir, m.Perm(), "directory %s", p)
					continue
				}
				require.True(t, m.IsRegular(), "%s is not a regular file", p)
				assert.Equal(t, tc.file, m.Perm(), "file %s", p)
				base := filepath.Base(p)
				switch {
				case strings.HasPrefix(base, snapPrefix):
					kinds["snapshot"] = true
				case strings.HasSuffix(base, brokenSuffix):
					kinds["broken"] = true
				case filepath.Dir(p) == filepath.Join("data", logDirName):
					kinds["segment"] = true
				default:
					kinds[base] = true
				}
			}
			for _, k := range []string{"snapshot", "broken", "segment", formatFileName, lockFileName, hintFileName} {
				assert.True(t, kinds[k], "no %s was checked", k)
			}
		})
	}
}

func TestOpenTightensWhatAnOlderVersionLeftWide(t *testing.T) {
	old := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(old) })
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	l, err := Open(dir, Options{})
	require.NoError(t, err)
	appendN(t, l, 1, 5)
	_, err = l.Checkpoint(emitNothing)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	for p, m := range modesUnder(t, dir) {
		if m.IsDir() {
			require.NoError(t, os.Chmod(filepath.Join(dir, p), 0o755))
		} else {
			require.NoError(t, os.Chmod(filepath.Join(dir, p), 0o644))
		}
	}

	l, err = Open(dir, Options{})
	require.NoError(t, err)
	require.NoError(t, l.Close())
	for p, m := range modesUnder(t, dir) {
		if m.IsDir() {
			assert.Equal(t, fs.FileMode(0o700), m.Perm(), "directory %s", p)
		} else {
			assert.Equal(t, fs.FileMode(0o600), m.Perm(), "file %s", p)
		}
	}
}

func TestTemporaryFilesNeverFollowALink(t *testing.T) {
	victim := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(victim, []byte("precious"), 0o644))
	require.NoError(t, os.Chmod(victim, 0o644))
	untouched := func() {
		t.Helper()
		b, err := os.ReadFile(victim)
		require.NoError(t, err)
		assert.Equal(t, "precious", string(b), "the link's target was written")
		fi, err := os.Stat(victim)
		require.NoError(t, err)
		assert.Equal(t, fs.FileMode(0o644), fi.Mode().Perm(), "the link's target's mode changed")
	}
	regular := func(path string) {
		t.Helper()
		fi, err := os.Lstat(path)
		require.NoError(t, err)
		assert.True(t, fi.Mode().IsRegular(), "%s is %v, not a regular file", path, fi.Mode())
	}
	dir := t.TempDir()
	require.NoError(t, os.Symlink(victim, filepath.Join(dir, formatFileName+".tmp")))
	l, err := Open(dir, Options{})
	require.NoError(t, err)
	regular(filepath.Join(dir, formatFileName))
	untouched()

	appendN(t, l, 1, 3)
	index := l.Stats().LastIndex
	require.NoError(t, os.Symlink(victim, filepath.Join(dir, snapName(index)+snapTmpSuffix)))
	info, err := l.Checkpoint(emitNothing)
	require.NoError(t, err)
	regular(info.Path)
	untouched()

	require.NoError(t, os.Symlink(victim, filepath.Join(dir, hintFileName+".tmp")))
	require.NoError(t, l.CloseWithHint([]byte("hint")))
	regular(filepath.Join(dir, hintFileName))
	untouched()

	// The lock file is opened in place: a link there is refused.
	lock := filepath.Join(dir, lockFileName)
	require.NoError(t, os.Remove(lock))
	require.NoError(t, os.Symlink(victim, lock))
	_, err = Open(dir, Options{})
	assert.Error(t, err)
	untouched()
}

func TestOpenRefusesADirectoryOthersMayWrite(t *testing.T) {
	for _, mode := range []fs.FileMode{0o777, 0o770, 0o703, 0o720} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.Chmod(dir, mode))
			_, err := Open(dir, Options{})
			require.ErrorIs(t, err, ErrUnsafeDir)
			assert.Contains(t, err.Error(), "chmod 700 "+dir)
			ents, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Empty(t, ents, "Open wrote into the directory it refused")
			// With GroupReadable the fix it names is 750.
			_, err = Open(dir, Options{GroupReadable: true})
			require.ErrorIs(t, err, ErrUnsafeDir)
			assert.Contains(t, err.Error(), "chmod 750 "+dir)
		})
	}
	t.Run("log subdirectory", func(t *testing.T) {
		dir := t.TempDir()
		l, err := Open(dir, Options{})
		require.NoError(t, err)
		require.NoError(t, l.Close())
		require.NoError(t, os.Chmod(filepath.Join(dir, logDirName), 0o777))
		_, err = Open(dir, Options{})
		assert.ErrorIs(t, err, ErrUnsafeDir)
	})
}

func TestOpenRefusesADirectoryAnotherUserOwns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a directory to another user")
	}
	dir := t.TempDir()
	require.NoError(t, os.Chown(dir, 65534, 65534))
	_, err := Open(dir, Options{})
	require.ErrorIs(t, err, ErrUnsafeDir)
	assert.Contains(t, err.Error(), "uid 65534")
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, ents, "Open wrote into the directory it refused")
}
