package wal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// segment is one tidwall/wal segment file: its first entry's index and path.
type segment struct {
	index uint64
	path  string
}

func segmentName(index uint64) string { return fmt.Sprintf("%020d", index) }

// logView lists the segments of logDir the way tidwall/wal's loader will
// see them once it has finished an interrupted TruncateFront (a .START file)
// or TruncateBack (.END), without changing anything on disk. The returned
// paths are the files as they are now; finish says whether a START/END
// clean-up is pending (normalizeLogDir performs it).
func logView(logDir string) (segs []segment, finish bool, err error) {
	ents, err := os.ReadDir(logDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	// os.ReadDir sorts by name, as tidwall/wal relies on.
	startIdx, endIdx := -1, -1
	for _, de := range ents {
		name := de.Name()
		if de.IsDir() || len(name) < 20 {
			continue
		}
		index, err := strconv.ParseUint(name[:20], 10, 64)
		if err != nil || index == 0 {
			continue
		}
		isStart := len(name) == 26 && strings.HasSuffix(name, ".START")
		isEnd := len(name) == 24 && strings.HasSuffix(name, ".END")
		if len(name) != 20 && !isStart && !isEnd {
			continue
		}
		if isStart {
			startIdx = len(segs)
		} else if isEnd && endIdx == -1 {
			endIdx = len(segs)
		}
		segs = append(segs, segment{index: index, path: filepath.Join(logDir, name)})
	}
	if startIdx != -1 && endIdx != -1 {
		return nil, false, corruptf("%s has both a .START and an .END segment", logDir)
	}
	if startIdx != -1 {
		segs = segs[startIdx:]
	}
	if endIdx != -1 {
		segs = segs[:endIdx+1]
		if n := len(segs); n > 1 && segs[n-2].index == segs[n-1].index {
			segs = append(segs[:n-2], segs[n-1])
		}
	}
	return segs, startIdx != -1 || endIdx != -1, nil
}

// normalizeLogDir finishes what tidwall/wal would on open: an interrupted
// truncation (START/END files) and leftover temporary files. It must run
// before the torn-tail scan, which needs the final layout. It is
// tidwall/wal's own clean-up (wal.go, load), done earlier.
func normalizeLogDir(logDir string) error {
	ents, err := os.ReadDir(logDir)
	if err != nil {
		return err
	}
	for _, de := range ents {
		if strings.HasSuffix(de.Name(), ".TEMP") {
			if err := os.Remove(filepath.Join(logDir, de.Name())); err != nil {
				return err
			}
		}
	}
	all, finish, err := logView(logDir)
	if err != nil || !finish {
		return err
	}
	keep := make(map[string]bool, len(all))
	for _, s := range all {
		keep[s.path] = true
	}
	for _, de := range ents {
		name := de.Name()
		p := filepath.Join(logDir, name)
		if keep[p] || len(name) < 20 || de.IsDir() {
			continue
		}
		if _, err := strconv.ParseUint(name[:20], 10, 64); err != nil {
			continue
		}
		if len(name) == 20 || strings.HasSuffix(name, ".START") || strings.HasSuffix(name, ".END") {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	for _, s := range all {
		if base := filepath.Base(s.path); len(base) != 20 {
			if err := os.Rename(s.path, filepath.Join(logDir, base[:20])); err != nil {
				return err
			}
		}
	}
	return syncDir(logDir)
}

// readFileInto reads a whole file into buf's storage, growing it if needed.
func readFileInto(path string, buf []byte) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return buf, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return buf, err
	}
	size := int(fi.Size())
	if cap(buf) < size {
		buf = make([]byte, size, size+size/8)
	}
	buf = buf[:size]
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return buf[:0], err
	}
	return buf[:n], nil
}

func truncateFile(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// syncDir fsyncs a directory so that file creations, renames and removals
// in it survive power loss.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
