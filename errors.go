package ringwal

import (
	"errors"
	"fmt"

	"github.com/ringwal/ringwal/internal/wal"
)

// Sentinel errors. Methods wrap them with context; match with errors.Is.
var (
	// ErrClosed: the engine was closed. Enqueue, Dequeue, Run and their
	// variants refuse as soon as Close starts; Ack, Nack, Extend and the
	// operator methods keep working through Close's grace (so that
	// handlers can settle) and refuse once Close has finished it.
	ErrClosed = errors.New("ringwal: engine closed")
	// ErrFull: a tier (or the engine's MaxMessages) is at capacity and the
	// caller asked not to wait (TryEnqueue), or Redrive found no free slot
	// for the message.
	ErrFull = errors.New("ringwal: queue full")
	// ErrDuplicate: a message with the same DedupID was enqueued within
	// Options.DedupWindow; the first message's ID is returned alongside.
	ErrDuplicate = errors.New("ringwal: duplicate message")
	// ErrStaleLease: the lease was acked, nacked, expired or requeued, or
	// another engine handed it out.
	ErrStaleLease = errors.New("ringwal: stale lease")
	// ErrNotFound: no message with that ID (never enqueued, acked or
	// purged). For Redrive and MarkReviewed, no dead letter with that ID.
	// For the queue and schedule verbs, no queue or schedule of that name.
	// The wrapping error names what was looked for.
	ErrNotFound = errors.New("ringwal: not found")
	// ErrInvalid: bad input; the wrapping error says what was wrong.
	ErrInvalid = errors.New("ringwal: invalid argument")
	// ErrLocked: another opener holds the data directory.
	ErrLocked = errors.New("ringwal: data directory is locked")
	// ErrVersion: the data directory was written by a newer format version.
	ErrVersion = errors.New("ringwal: data directory written by a newer version")
	// ErrUnsafeDir: Open refused the data directory because group or
	// others may write it, or another user owns it (whoever can write
	// there can plant files and links the engine would follow). The
	// wrapping error names the directory and the fix (chmod 700 DIR).
	ErrUnsafeDir = errors.New("ringwal: unsafe data directory permissions")
	// ErrCorrupt: a data directory, a backup or a record in them is
	// damaged in a way the recovery mode does not repair. The wrapping
	// error names the file and the record.
	ErrCorrupt = wal.ErrCorrupt
	// ErrNotOwner: Options.Fence refused the batch that held the call's
	// record, so the call was not acknowledged. The engine no longer owns
	// its directory (in a fleet, another member may own the shard now);
	// the wrapping error carries the fence's own error, which may name
	// the new owner. A refused record may still be in the log (the fence
	// refused it after its write): whoever opens the directory next
	// replays it, so a refused Enqueue may yet be delivered and a refused
	// Ack may yet hold. That is at-least-once, as after any error.
	ErrNotOwner = errors.New("ringwal: not the owner")
)

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}
