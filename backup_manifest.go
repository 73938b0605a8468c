package ringwal

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ringwal/ringwal/internal/wal"
)

// ErrDamagedBackup: Restore refused a backup stream that is incomplete (it
// ends before its manifest, e.g. a backup killed midway) or whose files do
// not match what its manifest lists (names, sizes, SHA-256). The wrapping
// error says what was wrong; nothing of it is left in the target
// directory.
var ErrDamagedBackup = errors.New("ringwal: partial or damaged backup")

// BackupInfo describes a backup: what Backup wrote, or what Restore found
// in the stream's manifest.
type BackupInfo struct {
	// Created is when the backup's files were listed: its backup point.
	Created time.Time
	// Index is the last log batch the backup holds; Snapshot the index of
	// its snapshot (the batch it covers up to; 0 also when it has none).
	Index, Snapshot uint64
	// Files and Bytes count the data files (the manifest excluded).
	Files int
	Bytes int64
	// Messages (live, in every state), DeadLetters, Queues (named ones)
	// and Schedules are the engine's counts read right after the backup
	// point, for an operator to read. The restored engine's own counts are
	// the truth. Messages leased at the backup point, for instance, come
	// back pending, as after a crash.
	Messages, DeadLetters, Queues, Schedules int
}

// The manifest is the stream's last tar entry.
const (
	manifestName    = "MANIFEST.json"
	manifestKind    = "ringwal-backup"
	manifestVersion = 1
	// maxManifestBytes bounds what Restore reads as a manifest.
	maxManifestBytes = 1 << 20
	// maxManifestFiles bounds its file list (a log has far fewer segments).
	maxManifestFiles = 1 << 16
)

type manifestFile struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

type manifest struct {
	Kind        string         `json:"kind"`
	Version     int            `json:"version"`
	Created     time.Time      `json:"created"`
	Index       uint64         `json:"index"`
	Snapshot    uint64         `json:"snapshot"`
	Files       []manifestFile `json:"files"`
	Messages    int            `json:"messages"`
	DeadLetters int            `json:"dead_letters"`
	Queues      int            `json:"queues"`
	Schedules   int            `json:"schedules"`
}

func (m *manifest) info() BackupInfo {
	bi := BackupInfo{
		Created: m.Created, Index: m.Index, Snapshot: m.Snapshot, Files: len(m.Files),
		Messages: m.Messages, DeadLetters: m.DeadLetters, Queues: m.Queues, Schedules: m.Schedules,
	}
	for _, f := range m.Files {
		bi.Bytes += f.Size
	}
	return bi
}

// decodeManifest parses and checks a manifest: its kind and version, and
// that its file list names only files a data directory holds (FORMAT, a
// snapshot, log segments), each once, with a size and a SHA-256. Errors
// wrap ErrDamagedBackup, or ErrVersion for a newer backup format.
func decodeManifest(b []byte) (*manifest, error) {
	var m manifest
	if len(b) > maxManifestBytes {
		return nil, damagedf("manifest of %d bytes (at most %d)", len(b), maxManifestBytes)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, damagedf("manifest: %v", err)
	}
	if m.Kind != manifestKind {
		return nil, damagedf("manifest of kind %q, not %q", m.Kind, manifestKind)
	}
	if m.Version > manifestVersion {
		return nil, fmt.Errorf("backup format version %d, this build reads up to %d: %w", m.Version, manifestVersion, ErrVersion)
	}
	if m.Version < 1 {
		return nil, damagedf("manifest version %d", m.Version)
	}
	if len(m.Files) > maxManifestFiles {
		return nil, damagedf("manifest lists %d files (at most %d)", len(m.Files), maxManifestFiles)
	}
	if m.Messages < 0 || m.DeadLetters < 0 || m.Queues < 0 || m.Schedules < 0 {
		return nil, damagedf("manifest has a negative count")
	}
	seen := make(map[string]bool, len(m.Files))
	var format, segments, snapshots int
	for _, f := range m.Files {
		kind, index := wal.BackupFileKind(f.Name)
		switch kind {
		case "format":
			format++
		case "segment":
			segments++
		case "snapshot":
			snapshots++
			if index != m.Snapshot {
				return nil, damagedf("manifest's snapshot %s is not its snapshot index %d", f.Name, m.Snapshot)
			}
		default:
			return nil, damagedf("manifest lists %q, not a file of a data directory", f.Name)
		}
		if seen[f.Name] {
			return nil, damagedf("manifest lists %s twice", f.Name)
		}
		seen[f.Name] = true
		if f.Size < 0 {
			return nil, damagedf("manifest gives %s a size of %d", f.Name, f.Size)
		}
		if h, err := hex.DecodeString(f.SHA256); err != nil || len(h) != 32 {
			return nil, damagedf("manifest's SHA-256 of %s is %q", f.Name, f.SHA256)
		}
	}
	if format != 1 || segments == 0 || snapshots > 1 {
		return nil, damagedf("manifest lists %d FORMAT files, %d log segments and %d snapshots", format, segments, snapshots)
	}
	return &m, nil
}

func damagedf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrDamagedBackup, fmt.Sprintf(format, args...))
}
