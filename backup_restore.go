package ringwal

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ringwal/ringwal/internal/dirsync"
	"github.com/ringwal/ringwal/internal/wal"
)

// Restore writes the data directory a Backup stream holds into dir. The
// dir must be empty or not exist; otherwise Restore returns ErrInvalid.
// It is created owner-only, as Open would. Open then opens dir to the
// backed-up engine's state at its backup point.
//
// Every file is checked against the stream's manifest, which comes last.
// A damaged stream is refused with an error wrapping ErrDamagedBackup, and
// what was written is removed, dir too if Restore created it. A stream is
// damaged if it ends before the manifest, as a backup killed or cut short
// does. It is damaged if it names a file a data directory does not hold,
// or holds a file whose size or SHA-256 differs from the manifest's. It is
// damaged if it holds an entry that is not a regular file: a link, a
// directory, or a GNU sparse file, whose holes would expand on disk to
// whatever size it claims. It is damaged if a log or snapshot file holds a
// record Open would refuse: torn framing, or a value out of range. Such a
// value is a priority, a count, an ID, or a schedule's spec or instants.
// That error also wraps ErrCorrupt and names the file and the record.
//
// Files are written owner-only and fsynced, then their directories,
// before Restore returns. It reads r to its end. Nothing else may use dir
// meanwhile: Restore takes no lock, and Open's comes after.
func Restore(r io.Reader, dir string) (BackupInfo, error) {
	if dir == "" {
		return BackupInfo{}, invalidf("restore: no directory")
	}
	created, err := prepareRestoreDir(dir)
	if err != nil {
		return BackupInfo{}, err
	}
	rs := &restoring{dir: dir, got: map[string]manifestFile{}}
	m, err := rs.read(r)
	if err == nil {
		err = rs.check(m)
	}
	if err == nil {
		err = rs.sync()
	}
	if err != nil {
		rs.undo(created)
		return BackupInfo{}, fmt.Errorf("ringwal: restore into %s: %w", dir, err)
	}
	return m.info(), nil
}

// VerifyBackup reads a Backup stream to its end and checks it as Restore
// would, writing nothing. It checks every file a data directory holds,
// its size and SHA-256 as the manifest says, and the manifest last. It
// accepts only regular, non-sparse entries. It decodes every record of
// the log and snapshot and checks its values as Open checks them. It
// returns the manifest's description, or an error wrapping
// ErrDamagedBackup, or ErrVersion for a newer backup format.
func VerifyBackup(r io.Reader) (BackupInfo, error) {
	rs := &restoring{got: map[string]manifestFile{}}
	m, err := rs.read(r)
	if err == nil {
		err = rs.check(m)
	}
	if err != nil {
		return BackupInfo{}, fmt.Errorf("ringwal: verify backup: %w", err)
	}
	return m.info(), nil
}

// prepareRestoreDir makes sure dir is an empty directory, creating it
// (and its parents) if it does not exist; created says it did.
func prepareRestoreDir(dir string) (created bool, err error) {
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return false, err
		}
		if err := os.Mkdir(dir, 0o700); err != nil {
			return false, err
		}
		return true, nil
	case err != nil:
		return false, err
	case !fi.IsDir():
		return false, invalidf("restore: %s is not a directory", dir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	if len(ents) > 0 {
		return false, invalidf("restore: %s is not empty (%d entries): restore only into an empty or new directory", dir, len(ents))
	}
	return false, nil
}

// restoring is one Restore's progress: what it wrote, for the check and
// for undoing it.
type restoring struct {
	dir    string
	got    map[string]manifestFile // written files, with their size and hash
	order  []string
	logDir bool // dir/log was created
}

// read writes the stream's files into dir and returns its manifest.
func (rs *restoring) read(r io.Reader) (*manifest, error) {
	tr := tar.NewReader(r)
	h := sha256.New()
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, damagedf("the stream ends after %d files without its manifest (a backup cut short?)", len(rs.order))
		}
		if err != nil {
			return nil, damagedf("after %d files: %v", len(rs.order), err)
		}
		if err := checkEntry(hdr); err != nil {
			return nil, err
		}
		if hdr.Name == manifestName {
			b, err := io.ReadAll(io.LimitReader(tr, maxManifestBytes+1))
			if err != nil {
				return nil, damagedf("reading the manifest: %v", err)
			}
			m, err := decodeManifest(b)
			if err != nil {
				return nil, err
			}
			if _, err := tr.Next(); !errors.Is(err, io.EOF) {
				return nil, damagedf("entries follow the manifest")
			}
			return m, nil
		}
		if kind, _ := wal.BackupFileKind(hdr.Name); kind == "" {
			return nil, damagedf("entry %q is not a file of a data directory", hdr.Name)
		}
		if _, dup := rs.got[hdr.Name]; dup {
			return nil, damagedf("entry %s appears twice", hdr.Name)
		}
		n, err := rs.write(hdr.Name, tr, h)
		if err != nil {
			return nil, err
		}
		rs.got[hdr.Name] = manifestFile{Name: hdr.Name, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}
		rs.order = append(rs.order, hdr.Name)
	}
}

// checkEntry refuses, before its data is read, a tar entry Backup does
// not write: anything but a regular file, and a GNU sparse file. The
// archive/tar package expands a sparse file into holes. A few KiB in the
// stream could restore as a segment of up to 2^63 bytes, and a manifest
// can be honest about what it expands to. The old GNU sparse type is not TypeReg; the PAX
// formats (0.0, 0.1 and 1.0) are TypeReg entries whose PAX records say
// they are sparse.
func checkEntry(hdr *tar.Header) error {
	if hdr.Typeflag != tar.TypeReg {
		return damagedf("entry %q is not a regular file (tar type %q)", hdr.Name, hdr.Typeflag)
	}
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, paxGNUSparse) {
			return damagedf("entry %q is a sparse file (PAX record %s): a backup holds every byte of its files", hdr.Name, k)
		}
	}
	return nil
}

// paxGNUSparse prefixes the PAX records of GNU's sparse file formats.
const paxGNUSparse = "GNU.sparse."

// write copies one file's bytes into dir/name, hashing them into h
// (reset first), and fsyncs it; with no dir (VerifyBackup) it only hashes
// them.
func (rs *restoring) write(name string, r io.Reader, h hash.Hash) (int64, error) {
	h.Reset()
	var w io.Writer = h
	var f *os.File
	if rs.dir != "" {
		if filepath.Dir(filepath.FromSlash(name)) == wal.LogDirName && !rs.logDir {
			if err := os.Mkdir(filepath.Join(rs.dir, wal.LogDirName), 0o700); err != nil {
				return 0, err
			}
			rs.logDir = true
		}
		var err error
		f, err = os.OpenFile(filepath.Join(rs.dir, filepath.FromSlash(name)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return 0, err
		}
		rs.got[name] = manifestFile{} // created: undo removes it
		w = io.MultiWriter(f, h)
	}
	n, err, recErr := copyRecords(name, w, r)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		err = damagedf("the stream ends inside %s, after %d bytes (a backup cut short?)", name, n)
	case err != nil:
		err = fmt.Errorf("copying %s: %w", name, err)
	case errors.Is(recErr, wal.ErrVersion):
		err = mapWALError(recErr)
	case recErr != nil:
		err = fmt.Errorf("%w: %w", ErrDamagedBackup, recErr)
	}
	if f == nil {
		return n, err
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// copyRecords copies r to w as io.Copy does. On the way it checks a
// snapshot's or a log segment's records as replay checks them
// (checkRecord). A hostile backup's hashes are honest whatever its records
// say, and Restore and VerifyBackup must refuse what Open would. The
// returned err is r's or w's error. The returned recErr is what is wrong
// with the file's records (its framing, or a record's values); it names
// the file and the record.
func copyRecords(name string, w io.Writer, r io.Reader) (n int64, err, recErr error) {
	if kind, _ := wal.BackupFileKind(name); kind != "snapshot" && kind != "segment" {
		n, err = io.Copy(w, r)
		return n, err, nil
	}
	src := &readCounter{r: r}
	dst := &errWriter{w: w}
	tee := io.TeeReader(src, dst)
	recErr = wal.FileRecords(name, tee, checkRecord)
	if recErr == nil {
		_, recErr = io.Copy(io.Discard, tee) // what follows the records, if anything
	}
	switch {
	case src.err != nil && !errors.Is(src.err, io.EOF):
		return src.n, src.err, nil
	case dst.err != nil:
		return src.n, dst.err, nil
	}
	return src.n, nil, recErr
}

// readCounter counts what it reads and keeps r's first error.
type readCounter struct {
	r   io.Reader
	n   int64
	err error
}

func (c *readCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}

// errWriter keeps w's first error.
type errWriter struct {
	w   io.Writer
	err error
}

func (w *errWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err != nil && w.err == nil {
		w.err = err
	}
	return n, err
}

// check compares what was written with the manifest.
func (rs *restoring) check(m *manifest) error {
	if len(m.Files) != len(rs.order) {
		return damagedf("the manifest lists %d files, the stream holds %d", len(m.Files), len(rs.order))
	}
	for _, want := range m.Files {
		got, ok := rs.got[want.Name]
		switch {
		case !ok:
			return damagedf("%s is in the manifest, not in the stream", want.Name)
		case got.Size != want.Size:
			return damagedf("%s holds %d bytes, the manifest says %d", want.Name, got.Size, want.Size)
		case !strings.EqualFold(got.SHA256, want.SHA256):
			return damagedf("%s's SHA-256 differs from the manifest's", want.Name)
		}
	}
	return nil
}

// sync fsyncs the directories whose entries Restore created.
func (rs *restoring) sync() error {
	if rs.logDir {
		if err := dirsync.Sync(filepath.Join(rs.dir, wal.LogDirName)); err != nil {
			return err
		}
	}
	if err := dirsync.Sync(rs.dir); err != nil {
		return err
	}
	return dirsync.Sync(filepath.Dir(rs.dir))
}

// undo removes what Restore wrote, and dir if it created it.
func (rs *restoring) undo(created bool) {
	for name := range rs.got {
		_ = os.Remove(filepath.Join(rs.dir, filepath.FromSlash(name)))
	}
	if rs.logDir {
		_ = os.Remove(filepath.Join(rs.dir, wal.LogDirName))
	}
	if created {
		_ = os.Remove(rs.dir)
	}
}
