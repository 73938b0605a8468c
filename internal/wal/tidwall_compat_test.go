package wal

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	twal "github.com/tidwall/wal"
)

// These tests pin down what segment.go says this package relies on in
// tidwall/wal's private behaviour. Each drives tidwall/wal itself (writes
// through its API, then reads the files as this package does, or writes
// files as this package does, then opens them with tidwall/wal) and fails
// with a message naming the assumption, so that a tidwall/wal upgrade that
// changes one is caught here rather than by a corrupted log.

// Naming: tidwall/wal names each segment by its first index (segmentName),
// the names parse back (parseSegmentName), and a segment holds exactly the
// entries up to the next one's first index.
func TestTidwallNaming(t *testing.T) {
	dir := t.TempDir()
	tw := openTW(t, dir, 300)
	want := writeTW(t, tw, 1, 40, 20)
	require.NoError(t, tw.Close())

	files := dirFiles(t, dir)
	require.Greater(t, len(files), 2, "the test needs several segments")
	next := uint64(1)
	var got [][]byte
	for _, name := range sortedNames(files) {
		index, kind := parseSegmentName(name)
		require.Equal(t, segPlain, kind, broken("naming", "file %q is not a plain segment name", name))
		require.Equal(t, segmentName(index), name, broken("naming", "segment file name format"))
		require.Equal(t, next, index, broken("naming", "segment %q is not named by its first index %d", name, next))
		es := entriesOf(t, []byte(files[name]))
		got = append(got, es...)
		next += uint64(len(es))
	}
	require.Equal(t, want, got, broken("framing", "the files do not hold the entries written, in order"))

	segs, finish, err := logView(dir)
	require.NoError(t, err)
	require.False(t, finish)
	require.Len(t, segs, len(files))
	sc, err := scanLog(segs, nil)
	require.NoError(t, err)
	require.Nil(t, sc.cut)
	require.Equal(t, uint64(40), sc.last)
}

// Naming: load ignores every file whose name is not a segment's, whatever
// it holds; so LOCK, FORMAT, .broken copies and leftover .TEMP files may
// sit among the segments. Each such file here is full of bytes that would
// fail to load and sorts after the tail, so tidwall/wal taking it for a
// segment would change the log or fail.
func TestTidwallIgnoresOtherNames(t *testing.T) {
	far := segmentName(1 << 40)
	names := []struct {
		name string
		kind segKind
	}{
		{far, segPlain},
		{far + startSuffix, segStart},
		{far + endSuffix, segEnd},
		{"LOCK", segNone},
		{"FORMAT", segNone},
		{segmentName(0), segNone}, // index 0
		{far[1:], segNone},        // 19 digits
		{far + "x", segNone},      // 21 characters
		{far + ".start", segNone},
		{far + "x" + endSuffix, segNone},          // the suffix right, the length not
		{far + ".old" + startSuffix, segNone},     // suffixes are case-sensitive
		{far + startSuffix + tempSuffix, segNone}, // atomicWrite's temporary START
		{far + endSuffix + tempSuffix, segNone},
		{far + tempSuffix, segNone},
		{brokenName(far, fixedTime, 0), segNone},
		{brokenName(far, fixedTime, 3), segNone},
		{brokenName(far+endSuffix, fixedTime, 0), segNone},
		{"99999999999999999999999", segNone}, // overflows uint64
	}
	for _, tc := range names {
		t.Run(tc.name, func(t *testing.T) {
			_, kind := parseSegmentName(tc.name)
			require.Equal(t, tc.kind, kind, broken("naming", "parseSegmentName(%q)", tc.name))
			if tc.kind != segNone {
				return
			}
			dir := t.TempDir()
			tw := openTW(t, dir, 1<<20)
			want := writeTW(t, tw, 1, 5, 10)
			require.NoError(t, tw.Close())
			junk := bytes.Repeat([]byte{0xff}, 64)
			require.NoError(t, os.WriteFile(filepath.Join(dir, tc.name), junk, 0o640))

			tw = openTW(t, dir, 1<<20)
			first, last := indexes(t, tw)
			require.Equal(t, [2]uint64{1, 5}, [2]uint64{first, last}, broken("naming", "tidwall/wal loaded %q as a segment", tc.name))
			for i, e := range want {
				got, err := tw.Read(uint64(i + 1))
				require.NoError(t, err)
				require.Equal(t, e, got)
			}
			require.NoError(t, tw.Write(6, compatBatch(6, 1)), broken("naming", "tidwall/wal appends after %q", tc.name))
			require.NoError(t, tw.Close())
			b, err := os.ReadFile(filepath.Join(dir, tc.name))
			require.NoError(t, err, broken("clean-up", "tidwall/wal removed %q", tc.name))
			require.Equal(t, junk, b, broken("clean-up", "tidwall/wal changed %q", tc.name))

			segs, _, err := logView(dir)
			require.NoError(t, err)
			require.Len(t, segs, 1)
			require.NoError(t, normalizeLogDir(dir))
			if _, err := os.Stat(filepath.Join(dir, tc.name)); len(tc.name) > len(tempSuffix) && tc.name[len(tc.name)-len(tempSuffix):] == tempSuffix {
				require.ErrorIs(t, err, os.ErrNotExist, "normalizeLogDir removes .TEMP files")
			} else {
				require.NoError(t, err, "normalizeLogDir keeps files that are not segments")
			}
		})
	}
}

// Clean-up: what tidwall/wal's load does with the files an interrupted
// TruncateFront (<index>.START) or TruncateBack (<index>.END) leaves, which
// logView predicts and normalizeLogDir performs. Each layout is what the
// truncation writes before its clean-up (the START or END file holding the
// kept entries of the segment it cuts, the old segments still there); it
// is opened by tidwall/wal in one copy and normalized in another, and both
// must end up with the same files, the ones logView predicted.
func TestTidwallCleanup(t *testing.T) {
	base := t.TempDir()
	buildTW(t, base, 200, 40)
	orig := dirFiles(t, base)
	names := sortedNames(orig)
	require.GreaterOrEqual(t, len(names), 4, "the test needs four segments")
	segIndex := func(k int) uint64 { i, _ := parseSegmentName(names[k]); return i }
	seg := func(k int) []byte { return []byte(orig[names[k]]) }
	last := len(names) - 1

	// start: a START file for index = segment k's first index + skip.
	start := func(k, skip int) func(*testing.T, map[string]string) {
		return func(t *testing.T, m map[string]string) {
			m[segmentName(segIndex(k)+uint64(skip))+startSuffix] = string(seg(k)[entryOffset(t, seg(k), skip):])
		}
	}
	// end: an END file for segment k keeping its first keep entries.
	end := func(k, keep int) func(*testing.T, map[string]string) {
		return func(t *testing.T, m map[string]string) {
			m[segmentName(segIndex(k))+endSuffix] = string(seg(k)[:entryOffset(t, seg(k), keep)])
		}
	}
	cases := []struct {
		name    string
		layout  []func(*testing.T, map[string]string)
		corrupt bool
	}{
		{name: "nothing pending"},
		{name: "START inside the first segment", layout: []func(*testing.T, map[string]string){start(0, 2)}},
		{name: "START inside a middle segment", layout: []func(*testing.T, map[string]string){start(2, 1)}},
		{name: "START at a segment's first index", layout: []func(*testing.T, map[string]string){start(1, 0)}},
		{name: "START inside the tail", layout: []func(*testing.T, map[string]string){start(last, 1)}},
		{name: "END inside the tail", layout: []func(*testing.T, map[string]string){end(last, 1)}},
		{name: "END inside a middle segment", layout: []func(*testing.T, map[string]string){end(1, 2)}},
		{name: "END emptying the first segment", layout: []func(*testing.T, map[string]string){end(0, 0)}},
		{name: "START and END", layout: []func(*testing.T, map[string]string){start(0, 1), end(2, 1)}, corrupt: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{}
			for n, d := range orig {
				files[n] = d
			}
			for _, f := range tc.layout {
				f(t, files)
			}
			a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
			writeFiles(t, a, files)
			writeFiles(t, b, files)

			predicted, finish, viewErr := logView(a)
			twA, twErr := twal.Open(a, tidwallOptions(200))
			if twErr == nil {
				require.NoError(t, twA.Close())
			}
			normErr := normalizeLogDir(b)
			if tc.corrupt {
				require.ErrorIs(t, twErr, twal.ErrCorrupt, broken("clean-up", "tidwall/wal opened a log with both START and END"))
				require.ErrorIs(t, viewErr, ErrCorrupt)
				require.ErrorIs(t, normErr, ErrCorrupt)
				return
			}
			require.NoError(t, viewErr)
			require.NoError(t, normErr)
			require.NoError(t, twErr, broken("clean-up", "tidwall/wal failed to finish the truncation"))
			require.Equal(t, len(tc.layout) > 0, finish)

			want := map[string]string{}
			for _, s := range predicted {
				want[segmentName(s.index)] = files[filepath.Base(s.path)]
			}
			require.Equal(t, want, dirFiles(t, a), broken("clean-up", "tidwall/wal left other files than logView predicted"))
			require.Equal(t, dirFiles(t, a), dirFiles(t, b), "normalizeLogDir must do what tidwall/wal's load does")

			// And tidwall/wal reads the result as scanLog does.
			segs, _, err := logView(b)
			require.NoError(t, err)
			sc, err := scanLog(segs, nil)
			require.NoError(t, err)
			tw := openTW(t, b, 200)
			first, lastIdx := indexes(t, tw)
			require.NoError(t, tw.Close())
			require.Equal(t, sc.first, first, broken("LastIndex", "FirstIndex after clean-up"))
			require.Equal(t, sc.last, lastIdx, broken("LastIndex", "LastIndex after clean-up"))
		})
	}
}

// Framing: an entry is a uvarint length and the bytes, in both directions:
// what tidwall/wal writes splits with nextEntry into the data written and
// takes framedLen bytes; bytes framed that way read back through
// tidwall/wal.
func TestTidwallFraming(t *testing.T) {
	sizes := []int{0, 1, 127, 128, 300, 16383, 16384, 1 << 21}
	t.Run("tidwall writes, wal reads", func(t *testing.T) {
		dir := t.TempDir()
		tw := openTW(t, dir, 64<<20)
		var want [][]byte
		total := 0
		for i, n := range sizes {
			e := bytes.Repeat([]byte{byte(i + 1)}, n)
			require.NoError(t, tw.Write(uint64(i+1), e))
			want = append(want, e)
			total += framedLen(n)
		}
		require.NoError(t, tw.Close())
		data, err := os.ReadFile(filepath.Join(dir, segmentName(1)))
		require.NoError(t, err)
		require.Len(t, data, total, broken("framing", "file size is not the sum of framedLen"))
		got := entriesOf(t, data)
		require.Len(t, got, len(want), broken("framing", "entry count"))
		for i := range want {
			require.True(t, bytes.Equal(want[i], got[i]), broken("framing", "entry %d of %d bytes reads back differently", i+1, sizes[i]))
		}
	})
	t.Run("wal frames, tidwall reads", func(t *testing.T) {
		dir := t.TempDir()
		var file []byte
		for i, n := range sizes {
			file = appendUvarint(file, uint64(n))
			file = append(file, bytes.Repeat([]byte{byte(i + 1)}, n)...)
		}
		writeFiles(t, dir, map[string]string{segmentName(7): string(file)})
		tw := openTW(t, dir, 64<<20)
		defer tw.Close()
		first, last := indexes(t, tw)
		require.Equal(t, [2]uint64{7, 7 + uint64(len(sizes)) - 1}, [2]uint64{first, last}, broken("framing", "indexes of hand-framed entries"))
		for i, n := range sizes {
			got, err := tw.Read(7 + uint64(i))
			require.NoError(t, err)
			require.True(t, bytes.Equal(bytes.Repeat([]byte{byte(i + 1)}, n), got), broken("framing", "entry %d", i))
		}
	})
}

// Framing: tidwall/wal's load fails on exactly the tails nextEntry refuses
// (a short or malformed last entry), which is why a torn tail must be cut
// before it opens the log; zero bytes after the last entry load as empty
// entries (so a crash that grew the file shows as extra entries, which the
// batch header rejects).
func TestTidwallLoadFailsWhereNextEntryDoes(t *testing.T) {
	good := appendUvarint(nil, 5)
	good = append(good, "hello"...)
	tails := []struct {
		name string
		tail []byte
	}{
		{"nothing", nil},
		{"length only", []byte{3}},
		{"one byte short", append([]byte{4}, "abc"...)},
		{"exact", append([]byte{3}, "abc"...)},
		{"two-byte length cut", []byte{0x80}},
		{"two-byte length runs past", []byte{0x80, 0x01, 'x'}},
		{"ten-byte length overflows", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}},
		{"eleven-byte length", bytes.Repeat([]byte{0x80}, 11)},
		{"huge length", []byte{0xff, 0xff, 0xff, 0xff, 0x0f}},
		{"one zero byte", []byte{0}},
		{"three zero bytes", []byte{0, 0, 0}},
	}
	for _, tc := range tails {
		t.Run(tc.name, func(t *testing.T) {
			data := append(append([]byte(nil), good...), tc.tail...)
			ok, count := true, 0
			for rest := data; len(rest) > 0; count++ {
				_, n, okE := nextEntry(rest)
				if !okE {
					ok = false
					break
				}
				rest = rest[n:]
			}
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{segmentName(1): string(data)})
			tw, err := twal.Open(dir, tidwallOptions(1<<20))
			if !ok {
				require.Error(t, err, broken("framing", "tidwall/wal loads a tail nextEntry refuses"))
				return
			}
			require.NoError(t, err, broken("framing", "tidwall/wal refuses a tail nextEntry accepts"))
			defer tw.Close()
			_, last := indexes(t, tw)
			require.Equal(t, uint64(count), last, broken("framing", "entry count (zero bytes are empty entries)"))
		})
	}
}

// Switching: afterEntry predicts, entry by entry, when tidwall/wal creates
// a segment file and how large the tail is, including a tail already over
// the segment size when the log is opened (SegmentSize lowered).
func TestTidwallSwitching(t *testing.T) {
	cases := []struct {
		name             string
		firstSize, size  int // segment size for the first 10 entries, then for the rest
		firstPad, padMax int
	}{
		{"small entries", 256, 256, 10, 40},
		{"entries the size of a segment", 100, 100, 60, 150},
		{"entries larger than a segment", 64, 64, 100, 300},
		{"segment size lowered under the tail", 4096, 128, 50, 90},
		{"segment size raised", 128, 4096, 20, 200},
		{"lowered under the tail, entries over it", 4096, 64, 100, 300}, // both rules fire on one entry
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tw := openTW(t, dir, tc.firstSize)
			segSize, tail, files := tc.firstSize, 0, 1
			for id := uint64(1); id <= 60; id++ {
				if id == 11 {
					require.NoError(t, tw.Close())
					tw = openTW(t, dir, tc.size)
					segSize = tc.size
				}
				pad := tc.firstPad + int(id*37)%(tc.padMax-tc.firstPad+1)
				e := compatBatch(id, pad)
				require.NoError(t, tw.Write(id, e))
				var created int
				tail, created = afterEntry(tail, framedLen(len(e)), segSize)
				files += created
				names := sortedNames(dirFiles(t, dir))
				require.Len(t, names, files, broken("switching", "segment count after entry %d", id))
				fi, err := os.Stat(filepath.Join(dir, names[len(names)-1]))
				require.NoError(t, err)
				require.EqualValues(t, tail, fi.Size(), broken("switching", "tail size after entry %d", id))
				switch {
				case created > 0 && tail == 0:
					require.Equal(t, segmentName(id+1), names[len(names)-1], broken("switching", "a segment created after entry %d is named by the next index", id))
				case created > 0:
					require.Equal(t, segmentName(id), names[len(names)-1], broken("switching", "a segment created before entry %d is named by its index", id))
				}
			}
			require.NoError(t, tw.Close())
		})
	}
}

// Empty log: a lone empty segment file named n (what resetLog writes, and
// what tidwall/wal's own TruncateFront leaves when it removes every entry)
// opens as an empty log whose next index is n.
func TestTidwallEmptySegment(t *testing.T) {
	t.Run("resetLog", func(t *testing.T) {
		dir := t.TempDir()
		tw := openTW(t, dir, 1<<20)
		writeTW(t, tw, 1, 3, 10)
		require.NoError(t, tw.Close())
		segs, _, err := logView(dir)
		require.NoError(t, err)
		require.NoError(t, resetLog(dir, segs, 42, 0o600))

		tw = openTW(t, dir, 1<<20)
		first, last := indexes(t, tw)
		require.Equal(t, [2]uint64{42, 41}, [2]uint64{first, last}, broken("empty log", "indexes of a lone empty segment named 42"))
		require.NoError(t, tw.Write(42, compatBatch(42, 1)), broken("empty log", "the next index is the segment's name"))
		require.NoError(t, tw.Close())
	})
	t.Run("TruncateFront of every entry", func(t *testing.T) {
		dir := t.TempDir()
		tw := openTW(t, dir, 200)
		writeTW(t, tw, 1, 20, 20)
		require.NoError(t, tw.TruncateFront(21))
		require.NoError(t, tw.Close())
		require.Equal(t, map[string]string{segmentName(21): ""}, dirFiles(t, dir),
			broken("empty log", "TruncateFront(last+1) leaves one empty segment named last+1"))
	})
	t.Run("TruncateFront keeps from index", func(t *testing.T) {
		dir := t.TempDir()
		tw := openTW(t, dir, 200)
		writeTW(t, tw, 1, 20, 20)
		require.NoError(t, tw.TruncateFront(13))
		require.NoError(t, tw.Close())
		segs, finish, err := logView(dir)
		require.NoError(t, err)
		require.False(t, finish, broken("clean-up", "TruncateFront left a START or END file"))
		require.Equal(t, segmentName(13), filepath.Base(segs[0].path), broken("naming", "TruncateFront renames the segment holding index to it"))
		sc, err := scanLog(segs, nil)
		require.NoError(t, err)
		require.Nil(t, sc.cut)
		require.Equal(t, [2]uint64{13, 20}, [2]uint64{sc.first, sc.last})
	})
}

// LastIndex: tidwall/wal computes it from the last segment alone and does
// not read earlier ones at load, so an earlier segment that lost entries
// still opens with the old LastIndex. That is why scanLog checks segment
// boundaries itself.
func TestTidwallLastIndexFromTail(t *testing.T) {
	dir := t.TempDir()
	n := uint64(len(buildTW(t, dir, 200, 30)))
	segs, _, err := logView(dir)
	require.NoError(t, err)
	require.Greater(t, len(segs), 2)
	data, err := os.ReadFile(segs[1].path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(segs[1].path, data[:entryOffset(t, data, 1)], 0o640)) // keep one entry

	tw, err := twal.Open(dir, tidwallOptions(200))
	require.NoError(t, err, broken("LastIndex", "tidwall/wal now checks earlier segments at load"))
	_, last := indexes(t, tw)
	require.NoError(t, tw.Close())
	require.Equal(t, n, last, broken("LastIndex", "LastIndex is the tail's first index plus its entries"))
	sc, err := scanLog(segs, nil)
	require.NoError(t, err)
	require.NotNil(t, sc.cut, "scanLog must see the gap tidwall/wal does not")
	require.Equal(t, 1, sc.cut.seg)
}

// Cutting underneath tidwall/wal: after cutAfter (the writer's repair) or a
// torn-tail cut, tidwall/wal opens the log at the index this package
// expects, reads the entries kept and appends the next one.
func TestTidwallOpensAfterCut(t *testing.T) {
	const segSize = 200
	base := t.TempDir()
	want := buildTW(t, base, segSize, 30)
	n := uint64(len(want))
	segs, _, err := logView(base)
	require.NoError(t, err)
	require.Greater(t, len(segs), 2)

	check := func(t *testing.T, dir string, last uint64) {
		t.Helper()
		tw := openTW(t, dir, segSize)
		defer tw.Close()
		first, gotLast := indexes(t, tw)
		require.Equal(t, [2]uint64{1, last}, [2]uint64{first, gotLast}, broken("LastIndex", "indexes after a cut"))
		for i := uint64(1); i <= last; i++ {
			e, err := tw.Read(i)
			require.NoError(t, err)
			require.Equal(t, want[i-1], e)
		}
		require.NoError(t, tw.Write(last+1, compatBatch(last+1, 5)), broken("LastIndex", "append after a cut"))
	}
	for _, last := range []uint64{0, 1, segs[1].index - 1, segs[1].index, n - 1, n} {
		t.Run(fmt.Sprintf("cutAfter %d", last), func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, dirFiles(t, base))
			_, keepErr, err := cutAfter(dir, last)
			require.NoError(t, err)
			require.NoError(t, keepErr)
			check(t, dir, last)
		})
	}
	t.Run("torn tail", func(t *testing.T) {
		dir := t.TempDir()
		writeFiles(t, dir, dirFiles(t, base))
		tail := segs[len(segs)-1]
		tailPath := filepath.Join(dir, filepath.Base(tail.path))
		data, err := os.ReadFile(tailPath)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(tailPath, data[:len(data)-3], 0o640))
		_, err = twal.Open(dir, tidwallOptions(segSize))
		require.Error(t, err, broken("framing", "tidwall/wal opens a torn tail"))

		view, _, err := logView(dir)
		require.NoError(t, err)
		sc, err := scanLog(view, nil)
		require.NoError(t, err)
		require.NotNil(t, sc.cut)
		require.True(t, sc.cut.torn())
		_, err = applyCut(view, sc.cut)
		require.NoError(t, err)
		check(t, dir, n-1)
	})
}
