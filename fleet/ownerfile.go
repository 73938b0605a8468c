package fleet

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/ringwal/ringwal"
)

// A shard's owner file, Dir/shard-NNN.owner, beside the shard's engine
// directory. Whoever opens the shard holds it (flock) from before the
// engine opens until after it closed, and appends to it, fsynced, the
// epoch it owns the shard under before it opens the engine. An owner
// whose epoch is older than the newest in the file refuses to open.
//
// Why a file of the fleet's own and not a record in the shard's log: the
// check must come before the engine opens (opening replays the log and
// may write to it: a torn tail cut, schedules that fire), and it must be
// made under a lock that keeps the older owner out while the newer one
// writes. The file is on the same volume as the log and written under the
// same kind of lock, so it is exactly as durable as the log it guards;
// what a log record would add is surviving a restore from object storage,
// which is the shipping issue's (and the log format is changing).
//
// The file sits beside the engine directory, not in it, so that the
// directory stays the engine's alone (Restore wants it empty).

// errOwnerBusy: another process (or member) holds the owner file. A
// paused owner keeps it until it resumes, finds itself fenced and closes:
// the new owner retries until then.
var errOwnerBusy = errors.New("fleet: the shard's owner file is held by another owner")

type ownerFile struct {
	f    *os.File
	path string
}

// lockOwnerFile opens and flocks path, creating it (and making its
// directory entry durable) if needed.
func lockOwnerFile(path string) (*ownerFile, error) {
	_, statErr := os.Lstat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	if errors.Is(statErr, os.ErrNotExist) {
		if err := syncDir(filepath.Dir(path)); err != nil {
			f.Close()
			return nil, err
		}
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", path, errOwnerBusy)
		}
		return nil, fmt.Errorf("fleet: flock %s: %w", path, err)
	}
	return &ownerFile{f: f, path: path}, nil
}

// ownerEntry is one line of the file: an epoch, the node that owned the
// shard under it, and when it opened the shard.
type ownerEntry struct {
	Epoch int64
	Node  string
	At    time.Time
}

// entries reads every complete line. A last line without its newline is
// an append cut short by a crash before its fsync returned (so before its
// owner opened the engine) and is ignored; any other malformed line makes
// the file unusable (ErrCorrupt): refusing is safer than guessing epochs.
func (o *ownerFile) entries() ([]ownerEntry, error) {
	if _, err := o.f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(o.f)
	if err != nil {
		return nil, err
	}
	var out []ownerEntry
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break // torn last append
		}
		line := b[:i]
		b = b[i+1:]
		f := bytes.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("%w: %s: line %q", ringwal.ErrCorrupt, o.path, line)
		}
		ep, err1 := strconv.ParseInt(string(f[0]), 10, 64)
		at, err2 := time.Parse(time.RFC3339Nano, string(f[2]))
		if err1 != nil || err2 != nil || ep <= 0 {
			return nil, fmt.Errorf("%w: %s: line %q", ringwal.ErrCorrupt, o.path, line)
		}
		out = append(out, ownerEntry{Epoch: ep, Node: string(f[1]), At: at})
	}
	return out, nil
}

// claim checks that epoch is not older than any recorded and records it,
// fsynced: from then on an owner with an older epoch refuses the shard.
func (o *ownerFile) claim(epoch int64, node string) error {
	es, err := o.entries()
	if err != nil {
		return err
	}
	for _, e := range es {
		if e.Epoch > epoch {
			return fmt.Errorf("%w: %s was opened under epoch %d by %s, newer than this owner's %d",
				ringwal.ErrNotOwner, o.path, e.Epoch, e.Node, epoch)
		}
	}
	line := fmt.Sprintf("%d %s %s\n", epoch, node, time.Now().UTC().Format(time.RFC3339Nano))
	if _, err := o.f.WriteString(line); err != nil {
		return fmt.Errorf("fleet: recording epoch %d in %s: %w", epoch, o.path, err)
	}
	if err := o.f.Sync(); err != nil {
		return fmt.Errorf("fleet: fsync %s: %w", o.path, err)
	}
	return nil
}

// release drops the lock (closing the file does).
func (o *ownerFile) release() error { return o.f.Close() }

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
