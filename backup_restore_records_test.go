package ringwal

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRestoreRefusesBackupsOfRecordValuesNoEngineWrites: Restore and
// VerifyBackup check a backup's records as Open replays them, so that
// `restore --check` refuses what Open would refuse for a value no engine
// writes (a hostile backup's hashes are honest): ErrDamagedBackup, and
// ErrCorrupt naming the record.
func TestRestoreRefusesBackupsOfRecordValuesNoEngineWrites(t *testing.T) {
	for name, tc := range hostileRecords() {
		t.Run(name, func(t *testing.T) {
			src := t.TempDir()
			writeFuzzLog(t, src, tc.seed.snap, tc.seed.tail)
			b := tarDataDir(t, src)
			_, err := VerifyBackup(bytes.NewReader(b))
			if assert.ErrorIs(t, err, ErrDamagedBackup, "VerifyBackup") {
				assert.ErrorIs(t, err, ErrCorrupt)
				assert.Contains(t, err.Error(), tc.want)
			}
			dir := t.TempDir()
			_, err = Restore(bytes.NewReader(b), dir)
			if assert.ErrorIs(t, err, ErrDamagedBackup, "Restore") {
				assert.ErrorIs(t, err, ErrCorrupt)
				assert.Contains(t, err.Error(), tc.want)
			}
			ents, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Empty(t, ents, "Restore left files behind")
		})
	}
	// An engine's own backup, every record kind in it, restores.
	src := t.TempDir()
	writeFuzzLog(t, src, fuzzSeeds()["snapshot"].snap, fuzzSeeds()["failures-and-dead-letters"].tail)
	_, err := VerifyBackup(bytes.NewReader(tarDataDir(t, src)))
	require.NoError(t, err)
}

// tarDataDir writes a backup stream of data directory dir as Backup
// would, with an honest manifest: its FORMAT file, snapshot and log
// segments.
func tarDataDir(t *testing.T, dir string) []byte {
	t.Helper()
	var names []string
	var snapshot uint64
	for _, pattern := range []string{"FORMAT", "snap-*.zst", "log/*"} {
		ms, err := filepath.Glob(filepath.Join(dir, pattern))
		require.NoError(t, err)
		for _, m := range ms {
			rel, err := filepath.Rel(dir, m)
			require.NoError(t, err)
			name := filepath.ToSlash(rel)
			if digits, ok := strings.CutPrefix(name, "snap-"); ok {
				index, err := strconv.ParseUint(strings.TrimSuffix(digits, ".zst"), 10, 64)
				require.NoError(t, err, "snapshot name %s", name)
				snapshot = index
			} else if seg, ok := strings.CutPrefix(name, "log/"); ok && strings.Trim(seg, "0123456789") != "" {
				continue // not a segment: a .broken copy, a temporary file
			}
			names = append(names, name)
		}
	}
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	type file struct {
		Name   string `json:"name"`
		Size   int    `json:"size"`
		SHA256 string `json:"sha256"`
	}
	var files []file
	write := func(name string, b []byte) {
		require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(b)), Mode: 0o600, Format: tar.FormatPAX}))
		_, err := tw.Write(b)
		require.NoError(t, err)
	}
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		require.NoError(t, err)
		write(name, b)
		sum := sha256.Sum256(b)
		files = append(files, file{name, len(b), hex.EncodeToString(sum[:])})
	}
	m, err := json.Marshal(map[string]any{"kind": "ringwal-backup", "version": 1, "snapshot": snapshot, "files": files})
	require.NoError(t, err)
	write("MANIFEST.json", m)
	require.NoError(t, tw.Close())
	return out.Bytes()
}
