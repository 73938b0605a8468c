package ringwal

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"time"
)

// Backup writes a consistent copy of the engine's data directory to w, as
// a tar stream, without stopping the engine: producers, consumers and
// checkpoints carry on while it copies.
//
// The copy is the newest snapshot and the log from it on: what a restart
// would replay, the log's tail cut at a batch boundary. While automatic
// checkpoints are on, they keep that log at most about
// Options.CheckpointBytes. Backup takes no checkpoint of its own: its
// fsyncs would compete with the producers' on the same disk. A Checkpoint
// just before is the caller's choice when a smaller copy is worth it. Its
// backup point is the moment the files were listed. Every mutation
// acknowledged before Backup was called is in the copy, and nothing begun
// after that listing. Restore rebuilds a directory from the stream, which
// Open opens to the engine's state at the backup point, as after a crash
// there: messages leased then come back pending with that attempt
// counted. The stream ends with a manifest (each file's name, size and
// SHA-256) by which Restore refuses a partial or damaged one.
//
// Producers wait for the listing only: a few file opens on the log's
// writer between two batches, like one group commit. The copy itself
// reads files the log only appends to, through descriptors that stay
// valid while later checkpoints delete them. A memory-only engine has
// nothing durable to copy: Backup returns ErrInvalid. A write error of w
// is returned as is; the stream is then unusable. Safe for concurrent
// use; backups may run side by side.
func (e *Engine) Backup(w io.Writer) (BackupInfo, error) {
	if err := e.errIfClosed(); err != nil {
		return BackupInfo{}, err
	}
	if e.log == nil {
		return BackupInfo{}, invalidf("backup of a memory-only engine: it has no data directory")
	}
	set, err := e.log.Backup()
	if err != nil {
		return BackupInfo{}, fmt.Errorf("ringwal: backup: %w", err)
	}
	defer set.Close()
	m := manifest{
		Kind: manifestKind, Version: manifestVersion, Created: time.Now().UTC(),
		Index: set.Index, Snapshot: set.Snapshot,
	}
	st := e.Stats()
	m.Messages = st.Pending + st.Delayed + st.Leased + st.Held
	m.DeadLetters = st.Dead
	for _, q := range e.Queues() {
		if q.Name != "" {
			m.Queues++
		}
	}
	m.Schedules = len(e.Schedules())

	tw := tar.NewWriter(w)
	h := sha256.New()
	for _, f := range set.Files {
		if err := writeTarFile(tw, h, f.Name, f.Size, m.Created, io.NewSectionReader(f.File, 0, f.Size)); err != nil {
			return BackupInfo{}, fmt.Errorf("ringwal: backup: %s: %w", f.Name, err)
		}
		m.Files = append(m.Files, manifestFile{Name: f.Name, Size: f.Size, SHA256: hex.EncodeToString(h.Sum(nil))})
	}
	b, err := json.MarshalIndent(&m, "", " ")
	if err != nil {
		return BackupInfo{}, fmt.Errorf("ringwal: backup: manifest: %w", err)
	}
	if err := writeTarFile(tw, h, manifestName, int64(len(b)), m.Created, bytes.NewReader(b)); err != nil {
		return BackupInfo{}, fmt.Errorf("ringwal: backup: manifest: %w", err)
	}
	if err := tw.Close(); err != nil {
		return BackupInfo{}, fmt.Errorf("ringwal: backup: %w", err)
	}
	return m.info(), nil
}

// writeTarFile writes one regular file of size bytes from r, hashing it
// into h (reset first).
func writeTarFile(tw *tar.Writer, h hash.Hash, name string, size int64, at time.Time, r io.Reader) error {
	h.Reset()
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: 0o600, ModTime: at, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	n, err := io.Copy(io.MultiWriter(tw, h), r)
	if err != nil {
		return err
	}
	if n != size {
		return fmt.Errorf("read %d bytes of %d", n, size)
	}
	return nil
}
