package ringwal

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/wal"
)

// The log records of queues: a declaration (or update) names a queue's
// number, its name and its options (as JSON: option hints rather than
// data, so an unknown field is ignored rather than a format change).

// queueOptionsJSON is QueueOptions as a declaration record carries them.
type queueOptionsJSON struct {
	MaxMessages  int                                        `json:"max,omitempty"`
	Strict       bool                                       `json:"strict,omitempty"`
	LeaseTimeout time.Duration                              `json:"lease,omitempty"`
	Policies     map[classify.Category]classify.RetryPolicy `json:"policies,omitempty"`
	Topics       []string                                   `json:"topics,omitempty"`
}

// queueRecord is the declaration record of q (the default queue's too,
// once declared with options).
func queueRecord(num uint16, name string, o QueueOptions, now int64) (wal.Record, error) {
	b, err := json.Marshal(queueOptionsJSON(o))
	if err != nil {
		return wal.Record{}, fmt.Errorf("ringwal: queue %q options: %w", name, err)
	}
	return wal.Record{Kind: wal.KindQueue, Queue: uint32(num), Key: name, Time: now, Text: string(b)}, nil
}

// decodeQueueRecord reads a declaration record back, checking it as
// DeclareQueue would.
func decodeQueueRecord(r *wal.Record) (num uint16, name string, o QueueOptions, err error) {
	var j queueOptionsJSON
	if r.Text != "" {
		if err := json.Unmarshal([]byte(r.Text), &j); err != nil {
			return 0, "", o, fmt.Errorf("%w: queue %q options %q: %v", wal.ErrCorrupt, r.Key, r.Text, err)
		}
	}
	o = QueueOptions(j)
	if (r.Queue == 0) != (r.Key == "") {
		return 0, "", o, fmt.Errorf("%w: queue %q declared as number %d", wal.ErrCorrupt, r.Key, r.Queue)
	}
	if r.Key != "" {
		if err := validQueueName(r.Key); err != nil {
			return 0, "", o, fmt.Errorf("%w: %v", wal.ErrCorrupt, err)
		}
	}
	if err := validateQueueOptions(r.Key, o); err != nil {
		return 0, "", o, fmt.Errorf("%w: %v", wal.ErrCorrupt, err)
	}
	return uint16(r.Queue), r.Key, o, nil
}

// applyQueue replays a declaration: the queue gets the number the log
// gave it, and its options.
func (e *Engine) applyQueue(rs *replayState, r *wal.Record) {
	num, name, o, err := decodeQueueRecord(r)
	if err != nil {
		if rs.err == nil {
			rs.err = err
		}
		return
	}
	e.declareReplayed(num, name, o)
}
