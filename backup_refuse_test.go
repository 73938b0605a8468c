package ringwal_test

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

// smallBackup is a backup of an engine holding a few messages.
func smallBackup(t *testing.T) []byte {
	t.Helper()
	e, err := ringwal.Open(t.TempDir(), ringwal.Options{})
	require.NoError(t, err)
	defer e.Close()
	for range 10 {
		_, err := e.Enqueue(ctxBG, ringwal.Message{Payload: []byte("hello")})
		require.NoError(t, err)
	}
	var buf bytes.Buffer
	_, err = e.Backup(&buf)
	require.NoError(t, err)
	return buf.Bytes()
}

// retar rewrites a backup stream entry by entry through edit, which may
// change an entry's header and body or drop it (nil header).
func retar(t *testing.T, b []byte, edit func(h *tar.Header, body []byte) (*tar.Header, []byte)) []byte {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(b))
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		body, err := io.ReadAll(tr)
		require.NoError(t, err)
		h, body = edit(h, body)
		if h == nil {
			continue
		}
		h.Size = int64(len(body))
		require.NoError(t, tw.WriteHeader(h))
		_, err = tw.Write(body)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return out.Bytes()
}

// Restore refuses a stream cut short anywhere, or whose files differ from
// its manifest, with ErrDamagedBackup, and leaves nothing in the directory.
func TestRestoreRefusesPartialOrDamagedBackup(t *testing.T) {
	good := smallBackup(t)
	cases := map[string][]byte{
		"empty stream":          nil,
		"cut in the first file": good[:700],
		"cut before the manifest": retar(t, good, func(h *tar.Header, body []byte) (*tar.Header, []byte) {
			if h.Name == "MANIFEST.json" {
				return nil, nil
			}
			return h, body
		}),
		"a flipped byte": retar(t, good, func(h *tar.Header, body []byte) (*tar.Header, []byte) {
			if h.Name != "MANIFEST.json" && len(body) > 0 && h.Name != "FORMAT" {
				body = bytes.Clone(body)
				body[len(body)/2] ^= 1
			}
			return h, body
		}),
		"a file missing": retar(t, good, func(h *tar.Header, body []byte) (*tar.Header, []byte) {
			if h.Name == "FORMAT" {
				return nil, nil
			}
			return h, body
		}),
		"a foreign file": retar(t, good, func(h *tar.Header, body []byte) (*tar.Header, []byte) {
			if h.Name == "FORMAT" {
				h.Name = "../FORMAT"
			}
			return h, body
		}),
		"a damaged manifest": retar(t, good, func(h *tar.Header, body []byte) (*tar.Header, []byte) {
			if h.Name == "MANIFEST.json" {
				body = body[:len(body)-2]
			}
			return h, body
		}),
	}
	// Up to the end-of-archive blocks: a stream cut there is whole (every
	// file and the manifest checked), and restores.
	for cut := 512; cut < len(good)-1024; cut += 512 {
		cases[fmt.Sprintf("cut at %d", cut)] = good[:cut]
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := ringwal.Restore(bytes.NewReader(b), dir)
			require.ErrorIs(t, err, ringwal.ErrDamagedBackup)
			ents, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Empty(t, ents, "Restore left files behind")
		})
	}
	// The untouched stream restores.
	_, err := ringwal.Restore(bytes.NewReader(good), t.TempDir())
	require.NoError(t, err)
}

// Restore writes only into an empty or new directory, and Backup needs a
// data directory and an open engine.
func TestBackupAndRestoreRefuseBadInput(t *testing.T) {
	good := smallBackup(t)
	full := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(full, "x"), nil, 0o600))
	_, err := ringwal.Restore(bytes.NewReader(good), full)
	assert.ErrorIs(t, err, ringwal.ErrInvalid)
	file := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	_, err = ringwal.Restore(bytes.NewReader(good), file)
	assert.ErrorIs(t, err, ringwal.ErrInvalid)
	_, err = ringwal.Restore(bytes.NewReader(good), "")
	assert.ErrorIs(t, err, ringwal.ErrInvalid)

	mem, err := ringwal.Open("", ringwal.Options{})
	require.NoError(t, err)
	_, err = mem.Backup(io.Discard)
	assert.ErrorIs(t, err, ringwal.ErrInvalid)
	require.NoError(t, mem.Close())

	e, err := ringwal.Open(t.TempDir(), ringwal.Options{})
	require.NoError(t, err)
	require.NoError(t, e.Close())
	_, err = e.Backup(io.Discard)
	assert.ErrorIs(t, err, ringwal.ErrClosed)
}

// Restore takes any stream: it restores it or refuses it with an error
// (ErrDamagedBackup, ErrVersion), never panics, and leaves nothing behind
// when it refuses.
func FuzzRestore(f *testing.F) {
	e, err := ringwal.Open(f.TempDir(), ringwal.Options{})
	require.NoError(f, err)
	_, err = e.Enqueue(ctxBG, ringwal.Message{Payload: []byte("seed")})
	require.NoError(f, err)
	var buf bytes.Buffer
	_, err = e.Backup(&buf)
	require.NoError(f, err)
	require.NoError(f, e.Close())
	f.Add(buf.Bytes())
	f.Add(buf.Bytes()[:buf.Len()/2])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := filepath.Join(t.TempDir(), "r")
		if _, err := ringwal.Restore(bytes.NewReader(b), dir); err != nil {
			_, statErr := os.Stat(dir)
			assert.True(t, os.IsNotExist(statErr), "a refused Restore left %s", dir)
		}
	})
}

// VerifyBackup accepts what Restore accepts and refuses what it refuses,
// writing nothing.
func TestVerifyBackupAgreesWithRestore(t *testing.T) {
	good := smallBackup(t)
	info, err := ringwal.VerifyBackup(bytes.NewReader(good))
	require.NoError(t, err)
	assert.Equal(t, 10, info.Messages)
	for _, cut := range []int{0, 100, 1000, len(good) / 2} {
		_, err := ringwal.VerifyBackup(bytes.NewReader(good[:cut]))
		assert.ErrorIs(t, err, ringwal.ErrDamagedBackup, "cut at %d", cut)
	}
}
