package admin

// The JSON views of the engine's types: the one vocabulary the admin API,
// its Client and cmd/ringwal's --json output share.

import (
	"encoding/base64"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/internal/adminfmt"
)

// Payload encodings of MessageView.PayloadEncoding.
const (
	PayloadText   = "text"   // the payload is valid UTF-8, given as is
	PayloadBase64 = "base64" // anything else, in standard base64
)

// MessageView is a ringwal.Message. Payload is the payload as text when
// it is valid UTF-8 (PayloadEncoding "text"), else base64 ("base64").
type MessageView struct {
	// Queue is the message's queue as the engine names it: absent (""),
	// the default queue.
	Queue           string            `json:"queue,omitempty"`
	DedupID         string            `json:"dedup_id"`
	Key             string            `json:"key"`
	Priority        string            `json:"priority"`
	Payload         string            `json:"payload"`
	PayloadEncoding string            `json:"payload_encoding"`
	Headers         map[string]string `json:"headers,omitempty"`
	DelaySeconds    float64           `json:"delay_seconds"`
	Deadline        time.Time         `json:"deadline,omitzero"`
	TTLSeconds      float64           `json:"ttl_seconds"`
	MaxAttempts     int               `json:"max_attempts"`
}

// NewMessageView returns m's view.
func NewMessageView(m ringwal.Message) MessageView {
	v := MessageView{
		Queue: m.Queue, DedupID: m.DedupID, Key: m.Key, Priority: m.Priority.String(),
		Headers: m.Headers, DelaySeconds: m.Delay.Seconds(), Deadline: m.Deadline,
		TTLSeconds: m.TTL.Seconds(), MaxAttempts: m.MaxAttempts,
	}
	v.Payload, v.PayloadEncoding = encodePayload(m.Payload)
	return v
}

// encodePayload returns p as text if it is valid UTF-8, else as base64,
// with the encoding's name (PayloadText or PayloadBase64).
func encodePayload(p []byte) (payload, encoding string) {
	if utf8.Valid(p) {
		return string(p), PayloadText
	}
	return base64.StdEncoding.EncodeToString(p), PayloadBase64
}

// PayloadBytes decodes the payload back to its bytes.
func (v MessageView) PayloadBytes() ([]byte, error) {
	switch v.PayloadEncoding {
	case PayloadText, "":
		return []byte(v.Payload), nil
	case PayloadBase64:
		return base64.StdEncoding.DecodeString(v.Payload)
	}
	return nil, fmt.Errorf("unknown payload_encoding %q (want %s or %s)", v.PayloadEncoding, PayloadText, PayloadBase64)
}

// InfoView is a ringwal.Info; a dead message's view also carries its dead
// letter.
type InfoView struct {
	ID           ringwal.ID         `json:"id"`
	State        string             `json:"state"`
	Message      MessageView        `json:"message"`
	Attempts     int                `json:"attempts"`
	EnqueuedAt   time.Time          `json:"enqueued_at,omitzero"`
	NextAt       time.Time          `json:"next_at,omitzero"`
	LastError    string             `json:"last_error,omitempty"`
	LastCategory *classify.Category `json:"last_category,omitempty"`
	// Waiting names why a pending message is kept aside by its key
	// (ringwal.WaitReason: ordered, in-flight, rate, paused); absent when
	// it is not.
	Waiting    string          `json:"waiting,omitempty"`
	DeadLetter *DeadLetterView `json:"dead_letter,omitempty"`
}

// NewInfoView returns i's view (without a dead letter).
func NewInfoView(i ringwal.Info) InfoView {
	v := InfoView{ID: i.ID, State: i.State.String(), Message: NewMessageView(i.Message), Attempts: i.Attempts,
		EnqueuedAt: i.EnqueuedAt, NextAt: i.NextAt, LastError: i.LastError}
	if i.Waiting != ringwal.NotWaiting {
		v.Waiting = i.Waiting.String()
	}
	if i.LastError != "" && i.LastCategory.Valid() {
		c := i.LastCategory
		v.LastCategory = &c
	}
	return v
}

// FailureView is one failed delivery of a dead letter.
type FailureView struct {
	At       time.Time         `json:"at"`
	Category classify.Category `json:"category"`
	Error    string            `json:"error"`
}

// DeadLetterView is a ringwal.DeadLetter. LastError is the text of its
// last failure ("" when it has none).
type DeadLetterView struct {
	ID            ringwal.ID        `json:"id"`
	Category      classify.Category `json:"category"`
	Key           string            `json:"key"`
	Queue         string            `json:"queue,omitempty"` // the engine's name: absent for the default queue
	Message       MessageView       `json:"message"`
	Attempts      int               `json:"attempts"`
	LastError     string            `json:"last_error"`
	Failures      []FailureView     `json:"failures"`
	FirstFailedAt time.Time         `json:"first_failed_at,omitzero"`
	DeadAt        time.Time         `json:"dead_at"`
	Reviewed      bool              `json:"reviewed"`
	ReviewedAt    time.Time         `json:"reviewed_at,omitzero"`
	Note          string            `json:"note"`
}

// NewDeadLetterView returns d's view.
func NewDeadLetterView(d ringwal.DeadLetter) DeadLetterView {
	v := DeadLetterView{ID: d.ID, Category: d.Category, Key: d.Key, Queue: d.Queue, Message: NewMessageView(d.Message),
		Attempts: d.Attempts, Failures: make([]FailureView, len(d.Failures)), FirstFailedAt: d.FirstFailedAt,
		DeadAt: d.DeadAt, Reviewed: d.Reviewed, ReviewedAt: d.ReviewedAt, Note: d.Note}
	for i, f := range d.Failures {
		v.Failures[i] = FailureView{At: f.At, Category: f.Category, Error: f.Error}
	}
	if n := len(d.Failures); n > 0 {
		v.LastError = d.Failures[n-1].Error
	}
	return v
}

// NewDeadLetterViews returns the views of ds (never nil).
func NewDeadLetterViews(ds []ringwal.DeadLetter) []DeadLetterView {
	out := make([]DeadLetterView, len(ds))
	for i, d := range ds {
		out[i] = NewDeadLetterView(d)
	}
	return out
}

// DeadLetterPage is one page of GET /api/dead-letters.
type DeadLetterPage struct {
	Entries []DeadLetterView `json:"entries"`
	// Next is the cursor of the next page (pass it as after); absent on
	// the last page.
	Next string `json:"next,omitempty"`
}

// ActionView answers a requeue, redrive, review or cancel.
type ActionView struct {
	ID     ringwal.ID `json:"id"`
	Status string     `json:"status"` // requeued, redriven, reviewed or cancelled
	Note   *string    `json:"note,omitempty"`
}

// PurgeResult answers a purge.
type PurgeResult struct {
	Purged int `json:"purged"`
}

// LatencyView is a ringwal.Latency's summary.
type LatencyView struct {
	Count       uint64  `json:"count"`
	MeanSeconds float64 `json:"mean_seconds"`
	P50Seconds  float64 `json:"p50_seconds"`
	P95Seconds  float64 `json:"p95_seconds"`
	P99Seconds  float64 `json:"p99_seconds"`
}

// NewLatencyView returns l's summary.
func NewLatencyView(l ringwal.Latency) LatencyView {
	return LatencyView{Count: l.Count, MeanSeconds: l.Mean.Seconds(), P50Seconds: l.P50.Seconds(),
		P95Seconds: l.P95.Seconds(), P99Seconds: l.P99.Seconds()}
}

// BreakerView is one key's circuit breaker.
type BreakerView struct {
	Key                 string    `json:"key"`
	State               string    `json:"state"`
	Trips               uint64    `json:"trips"`
	ConsecutiveFailures int       `json:"consecutive_failures"`
	Calls               int       `json:"calls"`
	Failures            int       `json:"failures"`
	Probes              int       `json:"probes"`
	ReadyAt             time.Time `json:"ready_at,omitzero"`
}

// WALView is a ringwal.WALStats. SinceCheckpointBytes is the log after
// the newest snapshot, DiskBytes what the log and its snapshots take on
// disk in Segments segments; LastCheckpoint is absent when there is none;
// Failed is the error that made the log unusable, "" while it works.
type WALView struct {
	Batches              uint64      `json:"batches"`
	Records              uint64      `json:"records"`
	Bytes                uint64      `json:"bytes"`
	FailedBatches        uint64      `json:"failed_batches"`
	Write                LatencyView `json:"write"`
	Fsync                LatencyView `json:"fsync"`
	SinceCheckpointBytes int64       `json:"since_checkpoint_bytes"`
	DiskBytes            int64       `json:"disk_bytes"`
	Segments             int         `json:"segments"`
	LastCheckpoint       time.Time   `json:"last_checkpoint,omitzero"`
	Failed               string      `json:"failed,omitempty"`
}

// RecoveryView is a ringwal.RecoveryStats.
type RecoveryView struct {
	Records         uint64  `json:"records"`
	Bytes           int64   `json:"bytes"`
	TornBytes       int64   `json:"torn_bytes"`
	Crashed         int     `json:"crashed"`
	Poisoned        int     `json:"poisoned"`
	DurationSeconds float64 `json:"duration_seconds"`
	// Mode is the recovery mode Open ran with; Damage, CutBatches,
	// CutRecords and BrokenFiles describe what it cut (empty if nothing).
	Mode        string   `json:"mode"`
	Damage      string   `json:"damage,omitempty"`
	CutBatches  int      `json:"cut_batches,omitempty"`
	CutRecords  int      `json:"cut_records,omitempty"`
	BrokenFiles []string `json:"broken_files,omitempty"`
}

// StatsView is a ringwal.Stats. WAL and Recovery are present for a
// durable engine only.
type StatsView struct {
	Pending int `json:"pending"`
	Delayed int `json:"delayed"`
	Leased  int `json:"leased"`
	Held    int `json:"held"`
	Dead    int `json:"dead"`
	// Waiting counts the pending messages kept aside by their key;
	// WaitingByReason splits it by WaitReason name (every reason present).
	Waiting         int            `json:"waiting"`
	WaitingByReason map[string]int `json:"waiting_by_reason"`
	// DeliveryPaused is true while a pause of all delivery is in force.
	DeliveryPaused bool `json:"delivery_paused"`
	// Keys are ringwal.Stats.Keys (keys with a policy and live messages,
	// paused, or with messages waiting or held), with their breakers.
	Keys []KeyView `json:"keys"`
	// ByPriority: state -> priority -> count, for the live states (every
	// state and priority present).
	ByPriority     map[string]map[string]int `json:"by_priority"`
	DeadByCategory map[classify.Category]int `json:"dead_by_category"`

	Enqueued               uint64                       `json:"enqueued"`
	Dequeued               uint64                       `json:"dequeued"`
	Acked                  uint64                       `json:"acked"`
	Nacked                 uint64                       `json:"nacked"`
	Retried                uint64                       `json:"retried"`
	DeadLettered           uint64                       `json:"dead_lettered"`
	DeadLetteredByCategory map[classify.Category]uint64 `json:"dead_lettered_by_category"`
	Expired                uint64                       `json:"expired"`
	LeaseExpiries          uint64                       `json:"lease_expiries"`
	Duplicates             uint64                       `json:"duplicates"`
	BackpressureWaits      uint64                       `json:"backpressure_waits"`
	Redriven               uint64                       `json:"redriven"`
	Requeued               uint64                       `json:"requeued"`
	BreakerTrips           uint64                       `json:"breaker_trips"`
	Cancelled              uint64                       `json:"cancelled"`

	Wait                 LatencyView        `json:"wait"`
	Handling             LatencyView        `json:"handling"`
	OldestPendingSeconds float64            `json:"oldest_pending_seconds"`
	TierUtilization      map[string]float64 `json:"tier_utilization"`
	Breakers             []BreakerView      `json:"breakers"`
	Durable              bool               `json:"durable"`
	WAL                  *WALView           `json:"wal,omitempty"`
	Recovery             *RecoveryView      `json:"recovery,omitempty"`
}

// priorities lists the priorities from most to least urgent, the order of
// ringwal.Stats.TierUtilization.
var priorities = []ringwal.Priority{ringwal.Critical, ringwal.High, ringwal.Normal, ringwal.Low, ringwal.Background}

// NewStatsView returns s's view.
func NewStatsView(s ringwal.Stats) StatsView {
	v := StatsView{
		Pending: s.Pending, Delayed: s.Delayed, Leased: s.Leased, Held: s.Held, Dead: s.Dead,
		ByPriority:     map[string]map[string]int{},
		DeadByCategory: s.DeadByCategory,
		Enqueued:       s.Enqueued, Dequeued: s.Dequeued, Acked: s.Acked, Nacked: s.Nacked, Retried: s.Retried,
		DeadLettered: s.DeadLettered, DeadLetteredByCategory: s.DeadLetteredByCategory, Expired: s.Expired,
		LeaseExpiries: s.LeaseExpiries, Duplicates: s.Duplicates, BackpressureWaits: s.BackpressureWaits,
		Redriven: s.Redriven, Requeued: s.Requeued, BreakerTrips: s.BreakerTrips, Cancelled: s.Cancelled,
		Waiting: s.Waiting, WaitingByReason: make(map[string]int, len(adminfmt.WaitReasons)),
		DeliveryPaused: s.DeliveryPaused, Keys: statsKeyViews(s),
		Wait: NewLatencyView(s.Wait), Handling: NewLatencyView(s.Handling),
		OldestPendingSeconds: s.OldestPending.Seconds(),
		TierUtilization:      make(map[string]float64, len(priorities)),
		Breakers:             make([]BreakerView, 0, len(s.Breakers)),
		Durable:              s.Durable,
	}
	for state, m := range map[ringwal.State]map[ringwal.Priority]int{ringwal.Pending: s.PendingByPriority,
		ringwal.Delayed: s.DelayedByPriority, ringwal.Leased: s.LeasedByPriority, ringwal.Held: s.HeldByPriority} {
		byP := make(map[string]int, len(priorities))
		for _, p := range priorities {
			byP[p.String()] = m[p]
		}
		v.ByPriority[state.String()] = byP
	}
	for _, w := range adminfmt.WaitReasons {
		v.WaitingByReason[w.String()] = s.WaitingByReason[w]
	}
	for t, u := range s.TierUtilization {
		if t < len(priorities) {
			v.TierUtilization[priorities[t].String()] = u
		}
	}
	for _, k := range s.Breakers {
		v.Breakers = append(v.Breakers, BreakerView{Key: k.Key, State: k.State.String(), Trips: k.Trips,
			ConsecutiveFailures: k.ConsecutiveFailures, Calls: k.Calls, Failures: k.Failures,
			Probes: k.Probes, ReadyAt: k.ReadyAt})
	}
	if s.Durable {
		v.WAL = &WALView{Batches: s.WAL.Batches, Records: s.WAL.Records, Bytes: s.WAL.Bytes,
			FailedBatches: s.WAL.FailedBatches, Write: NewLatencyView(s.WAL.Write), Fsync: NewLatencyView(s.WAL.Fsync),
			SinceCheckpointBytes: s.WAL.SinceCheckpoint, DiskBytes: s.WAL.DiskBytes, Segments: s.WAL.Segments,
			LastCheckpoint: s.WAL.LastCheckpoint, Failed: s.WAL.Failed}
		r := s.Recovery
		v.Recovery = &RecoveryView{Records: r.Records, Bytes: r.Bytes, TornBytes: r.TornBytes,
			Crashed: r.Crashed, Poisoned: r.Poisoned, DurationSeconds: r.Duration.Seconds(),
			Mode: r.Mode.String(), Damage: r.Damage, CutBatches: r.CutBatches, CutRecords: r.CutRecords,
			BrokenFiles: r.BrokenFiles}
	}
	return v
}
