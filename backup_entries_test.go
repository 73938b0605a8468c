package ringwal_test

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

// hostileEntry rewrites a backup's first log segment as another kind of
// tar entry, the manifest honest about what a reader that expands or
// follows it would get.
type hostileEntry func(t *testing.T, tw *tar.Writer, out *bytes.Buffer, name string, body []byte) (restored []byte)

// TestRestoreRefusesEntriesOtherThanRegularFiles: a backup's files are
// regular tar entries. A GNU sparse entry (a few KiB that a tar reader
// expands into holes of any size up to 2^63), a link, a device, a FIFO or
// a directory is refused with ErrDamagedBackup before its data is read,
// by Restore and by VerifyBackup, even when the manifest's sizes and
// hashes match what expanding it gives.
func TestRestoreRefusesEntriesOtherThanRegularFiles(t *testing.T) {
	const hole = 1 << 20 // what the sparse entry expands to, past its data
	sparse := func(major, minor string) hostileEntry {
		return func(t *testing.T, tw *tar.Writer, out *bytes.Buffer, name string, body []byte) []byte {
			require.NoError(t, tw.Flush())
			recs := map[string]string{
				"GNU.sparse.numblocks": "1",
				"GNU.sparse.map":       "0," + strconv.Itoa(len(body)),
				"GNU.sparse.size":      strconv.Itoa(len(body) + hole),
			}
			if major != "" {
				recs["GNU.sparse.major"], recs["GNU.sparse.minor"] = major, minor
			}
			writeRawEntry(t, out, "PaxHeaders/"+name, 'x', paxRecords(recs))
			writeRawEntry(t, out, name, tar.TypeReg, body)
			return append(bytes.Clone(body), make([]byte, hole)...)
		}
	}
	// Format 1.0 keeps its map at the front of the data, the name and
	// the expanded size in PAX records.
	sparse10 := func(t *testing.T, tw *tar.Writer, out *bytes.Buffer, name string, body []byte) []byte {
		require.NoError(t, tw.Flush())
		writeRawEntry(t, out, "PaxHeaders/"+name, 'x', paxRecords(map[string]string{
			"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.name": name,
			"GNU.sparse.realsize": strconv.Itoa(len(body) + hole),
		}))
		m := []byte("1\n0\n" + strconv.Itoa(len(body)) + "\n")
		m = append(m, make([]byte, 512-len(m))...)
		writeRawEntry(t, out, "GNUSparseFile.0/"+name, tar.TypeReg, append(m, body...))
		return append(bytes.Clone(body), make([]byte, hole)...)
	}
	special := func(typ byte, link string) hostileEntry {
		return func(t *testing.T, tw *tar.Writer, _ *bytes.Buffer, name string, body []byte) []byte {
			require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: typ, Name: name, Linkname: link, Mode: 0o600}))
			return body
		}
	}
	for what, entry := range map[string]hostileEntry{
		"a PAX GNU sparse 0.1 entry": sparse("0", "1"),
		"a PAX GNU sparse 0.0 entry": sparse("", ""),
		"a PAX GNU sparse 1.0 entry": sparse10,
		"a symbolic link":            special(tar.TypeSymlink, "/etc/passwd"),
		"a hard link":                special(tar.TypeLink, "FORMAT"),
		"a character device":         special(tar.TypeChar, ""),
		"a FIFO":                     special(tar.TypeFifo, ""),
		"a directory":                special(tar.TypeDir, ""),
	} {
		t.Run(what, func(t *testing.T) {
			b := rewriteFirstSegment(t, smallBackup(t), entry)
			_, err := ringwal.VerifyBackup(bytes.NewReader(b))
			assert.ErrorIs(t, err, ringwal.ErrDamagedBackup, "VerifyBackup")
			dir := t.TempDir()
			_, err = ringwal.Restore(bytes.NewReader(b), dir)
			assert.ErrorIs(t, err, ringwal.ErrDamagedBackup, "Restore")
			ents, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Empty(t, ents, "Restore left files behind")
		})
	}
}

// rewriteFirstSegment copies backup b with its first log segment written
// by entry and the manifest's size and hash of it set to what entry says
// a reader restores.
func rewriteFirstSegment(t *testing.T, b []byte, entry hostileEntry) []byte {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(b))
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	var seg string
	var restored []byte
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		body, err := io.ReadAll(tr)
		require.NoError(t, err)
		switch {
		case seg == "" && strings.HasPrefix(h.Name, "log/"):
			seg = h.Name
			restored = entry(t, tw, &out, h.Name, body)
			continue
		case h.Name == "MANIFEST.json":
			var m map[string]any
			require.NoError(t, json.Unmarshal(body, &m))
			for _, f := range m["files"].([]any) {
				if f := f.(map[string]any); f["name"] == seg {
					sum := sha256.Sum256(restored)
					f["size"], f["sha256"] = len(restored), hex.EncodeToString(sum[:])
				}
			}
			body, err = json.Marshal(m)
			require.NoError(t, err)
			h.Size = int64(len(body))
		}
		require.NoError(t, tw.WriteHeader(h))
		_, err = tw.Write(body)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NotEmpty(t, seg, "the backup holds a log segment")
	return out.Bytes()
}

// paxRecords encodes PAX extended header records (archive/tar's writer
// drops GNU.sparse.* keys, so the test writes them itself).
func paxRecords(recs map[string]string) []byte {
	var b bytes.Buffer
	for k, v := range recs {
		rec := " " + k + "=" + v + "\n"
		n := len(rec) + 1
		for len(strconv.Itoa(n))+len(rec) != n {
			n++
		}
		fmt.Fprintf(&b, "%d%s", n, rec)
	}
	return b.Bytes()
}

// writeRawEntry appends a ustar entry of type typ holding data to out,
// which ends on a block boundary.
func writeRawEntry(t *testing.T, out *bytes.Buffer, name string, typ byte, data []byte) {
	t.Helper()
	var hdr bytes.Buffer
	tw := tar.NewWriter(&hdr)
	require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(data)), Mode: 0o600, Format: tar.FormatUSTAR}))
	blk := hdr.Bytes()[:512]
	blk[156] = typ
	copy(blk[148:156], "        ")
	sum := 0
	for _, c := range blk {
		sum += int(c)
	}
	copy(blk[148:156], fmt.Sprintf("%06o\x00 ", sum))
	out.Write(blk)
	out.Write(data)
	out.Write(make([]byte, (512-len(data)%512)%512))
}
