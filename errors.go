package ringwal

import (
	"errors"
	"fmt"
)

// Sentinel errors. Methods wrap them with context; match with errors.Is.
var (
	// ErrClosed: the engine was closed.
	ErrClosed = errors.New("ringwal: engine closed")
	// ErrFull: a tier (or the engine's MaxMessages) is at capacity and the
	// caller asked not to wait.
	ErrFull = errors.New("ringwal: queue full")
	// ErrDuplicate: a message with the same DedupID was enqueued within
	// Options.DedupWindow; the first message's ID is returned alongside.
	ErrDuplicate = errors.New("ringwal: duplicate message")
	// ErrStaleLease: the lease was acked, nacked, expired or requeued.
	ErrStaleLease = errors.New("ringwal: stale lease")
	// ErrNotFound: no message with that ID (never enqueued, acked or purged).
	ErrNotFound = errors.New("ringwal: message not found")
	// ErrInvalid: bad input; the wrapping error says what was wrong.
	ErrInvalid = errors.New("ringwal: invalid argument")
	// ErrLocked: another opener holds the data directory.
	ErrLocked = errors.New("ringwal: data directory is locked")
	// ErrVersion: the data directory was written by a newer format version.
	ErrVersion = errors.New("ringwal: data directory written by a newer version")
)

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}
