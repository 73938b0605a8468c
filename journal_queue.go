package ringwal

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/internal/wal"
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

// --- KindPublish: the copies of one Publish, in one record.

// publishRecord fills dst with the one record of a Publish whose copies
// are the claimed records in slots, in order of ID. It holds the
// message's fields once, as the first copy's enqueue record has them;
// every copy has the same Time. It holds the DedupID given to Publish;
// each copy's is it + "/" + its queue's name. And it holds each copy's
// queue and ID. The caller owns the records.
func (e *Engine) publishRecord(dst *wal.Record, slots []uint32, dedupID string) {
	first := e.slab.at(slots[0])
	enqueueRecord(dst, first, first.id.Load())
	dst.Kind, dst.Queue, dst.DedupID = wal.KindPublish, 0, dedupID
	dst.Copies = make([]wal.Copy, len(slots))
	for i, slot := range slots {
		r := e.slab.at(slot)
		dst.Copies[i] = wal.Copy{Queue: uint32(r.queue), ID: r.id.Load()}
	}
}

// applyPublish replays a Publish as the enqueue record of each copy.
func (e *Engine) applyPublish(rs *replayState, r *wal.Record) {
	one := *r
	one.Kind, one.Copies = wal.KindEnqueue, nil
	for _, c := range r.Copies {
		one.ID, one.Queue = c.ID, c.Queue
		if r.DedupID != "" {
			q := &e.defaultQueue
			if c.Queue != 0 {
				if q = e.queues.at(uint16(c.Queue)); q == nil {
					e.apply(rs, &one) // refused there: a queue the log never declared
					return
				}
			}
			one.DedupID = r.DedupID + "/" + q.name
		}
		e.apply(rs, &one)
		if rs.err != nil {
			return
		}
	}
}
