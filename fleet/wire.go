package fleet

import (
	"context"
	"errors"
	"fmt"

	"github.com/ringwal/ringwal"
)

// What members send each other (JSON over Handler's routes).

// wireEnqueue is an enqueue request. A group with Shard -1 asks the
// receiver to route its messages (a client's request); any other group
// is a forward for that shard, which the receiver serves or refuses.
type wireEnqueue struct {
	Groups []wireGroup `json:"groups"`
}

type wireGroup struct {
	Shard    int               `json:"shard"`
	Messages []ringwal.Message `json:"messages"`
}

// wireEnqueued answers a wireEnqueue: results by group, in order.
type wireEnqueued struct {
	Groups [][]wireResult `json:"groups"`
}

type wireResult struct {
	ID    ID     `json:"id"`
	Epoch int64  `json:"epoch,omitempty"`
	Code  string `json:"code,omitempty"`
	Error string `json:"error,omitempty"`
}

// wireError is the body of a failed call other than enqueue.
type wireError struct {
	Code  string `json:"code"`
	Error string `json:"error"`
}

// The error codes, and the sentinels they stand for.
var codes = []struct {
	code string
	err  error
}{
	{"duplicate", ringwal.ErrDuplicate},
	{"not_owner", ringwal.ErrNotOwner},
	{"invalid", ringwal.ErrInvalid},
	{"full", ringwal.ErrFull},
	{"not_found", ringwal.ErrNotFound},
	{"closed", ringwal.ErrClosed},
	{"closed", ErrClosed},
	{"timeout", context.DeadlineExceeded},
	{"canceled", context.Canceled},
}

func errCode(err error) string {
	if err == nil {
		return ""
	}
	for _, c := range codes {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	return "error"
}

// codeErr turns a code and message from member node back into an error
// that wraps the code's sentinel.
func codeErr(code, msg, node string) error {
	if code == "" {
		return nil
	}
	for _, c := range codes {
		if c.code == code {
			return fmt.Errorf("%w: %s (at %s)", c.err, msg, node)
		}
	}
	return fmt.Errorf("fleet: %s (at %s)", msg, node)
}

func toWire(r result) wireResult {
	w := wireResult{ID: r.ID, Epoch: r.Epoch, Code: errCode(r.Err)}
	if r.Err != nil {
		w.Error = r.Err.Error()
	}
	return w
}
