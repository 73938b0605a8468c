package ringwal

// The admin API's JSON views of the engine's types (see AdminHandler).

import (
	"time"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/ring"
)

// JSON views. Durations are float seconds.

type actionView struct {
	ID     ID      `json:"id"`
	Status string  `json:"status"`
	Note   *string `json:"note,omitempty"`
}

type messageJSON struct {
	DedupID      string            `json:"dedup_id"`
	Key          string            `json:"key"`
	Priority     string            `json:"priority"`
	Payload      []byte            `json:"payload"`
	Headers      map[string]string `json:"headers,omitempty"`
	DelaySeconds float64           `json:"delay_seconds"`
	Deadline     time.Time         `json:"deadline,omitzero"`
	TTLSeconds   float64           `json:"ttl_seconds"`
	MaxAttempts  int               `json:"max_attempts"`
}

func messageView(m Message) messageJSON {
	return messageJSON{
		DedupID: m.DedupID, Key: m.Key, Priority: m.Priority.String(), Payload: m.Payload,
		Headers: m.Headers, DelaySeconds: m.Delay.Seconds(), Deadline: m.Deadline,
		TTLSeconds: m.TTL.Seconds(), MaxAttempts: m.MaxAttempts,
	}
}

type infoJSON struct {
	ID           ID                 `json:"id"`
	State        string             `json:"state"`
	Message      messageJSON        `json:"message"`
	Attempts     int                `json:"attempts"`
	EnqueuedAt   time.Time          `json:"enqueued_at,omitzero"`
	NextAt       time.Time          `json:"next_at,omitzero"`
	LastError    string             `json:"last_error,omitempty"`
	LastCategory *classify.Category `json:"last_category,omitempty"`
	DeadLetter   *deadLetterJSON    `json:"dead_letter,omitempty"`
}

func infoView(i Info) infoJSON {
	v := infoJSON{ID: i.ID, State: i.State.String(), Message: messageView(i.Message), Attempts: i.Attempts,
		EnqueuedAt: i.EnqueuedAt, NextAt: i.NextAt, LastError: i.LastError}
	if i.LastError != "" && i.LastCategory.Valid() {
		c := i.LastCategory
		v.LastCategory = &c
	}
	return v
}

type failureJSON struct {
	At       time.Time         `json:"at"`
	Category classify.Category `json:"category"`
	Error    string            `json:"error"`
}

type deadLetterJSON struct {
	ID            uint64            `json:"id"`
	Category      classify.Category `json:"category"`
	Key           string            `json:"key"`
	Message       messageJSON       `json:"message"`
	Attempts      int               `json:"attempts"`
	Failures      []failureJSON     `json:"failures"`
	FirstFailedAt time.Time         `json:"first_failed_at,omitzero"`
	DeadAt        time.Time         `json:"dead_at"`
	Reviewed      bool              `json:"reviewed"`
	ReviewedAt    time.Time         `json:"reviewed_at,omitzero"`
	Note          string            `json:"note"`
}

func deadLetterView(d DeadLetter) deadLetterJSON {
	v := deadLetterJSON{ID: d.ID, Category: d.Category, Key: d.Key, Message: messageView(d.Message),
		Attempts: d.Attempts, Failures: make([]failureJSON, len(d.Failures)), FirstFailedAt: d.FirstFailedAt,
		DeadAt: d.DeadAt, Reviewed: d.Reviewed, ReviewedAt: d.ReviewedAt, Note: d.Note}
	for i, f := range d.Failures {
		v.Failures[i] = failureJSON{At: f.At, Category: f.Category, Error: f.Error}
	}
	return v
}

type deadLetterPage struct {
	Entries []deadLetterJSON `json:"entries"`
	// Next is the cursor of the next page (pass it as after); absent on
	// the last page.
	Next string `json:"next,omitempty"`
}

type latencyJSON struct {
	Count       uint64  `json:"count"`
	MeanSeconds float64 `json:"mean_seconds"`
	P50Seconds  float64 `json:"p50_seconds"`
	P95Seconds  float64 `json:"p95_seconds"`
	P99Seconds  float64 `json:"p99_seconds"`
}

func latencyView(l Latency) latencyJSON {
	return latencyJSON{Count: l.Count, MeanSeconds: l.Mean.Seconds(), P50Seconds: l.P50.Seconds(),
		P95Seconds: l.P95.Seconds(), P99Seconds: l.P99.Seconds()}
}

type breakerJSON struct {
	Key                 string    `json:"key"`
	State               string    `json:"state"`
	Trips               uint64    `json:"trips"`
	ConsecutiveFailures int       `json:"consecutive_failures"`
	Calls               int       `json:"calls"`
	Failures            int       `json:"failures"`
	Probes              int       `json:"probes"`
	ReadyAt             time.Time `json:"ready_at,omitzero"`
}

type walJSON struct {
	Batches       uint64      `json:"batches"`
	Records       uint64      `json:"records"`
	Bytes         uint64      `json:"bytes"`
	FailedBatches uint64      `json:"failed_batches"`
	Write         latencyJSON `json:"write"`
	Fsync         latencyJSON `json:"fsync"`
}

type recoveryJSON struct {
	Records         uint64  `json:"records"`
	Bytes           int64   `json:"bytes"`
	TornBytes       int64   `json:"torn_bytes"`
	Crashed         int     `json:"crashed"`
	Poisoned        int     `json:"poisoned"`
	DurationSeconds float64 `json:"duration_seconds"`
}

type statsJSON struct {
	Pending int `json:"pending"`
	Delayed int `json:"delayed"`
	Leased  int `json:"leased"`
	Held    int `json:"held"`
	Dead    int `json:"dead"`
	// ByPriority: state -> priority -> count, for the live states.
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

	Wait                 latencyJSON        `json:"wait"`
	Handling             latencyJSON        `json:"handling"`
	OldestPendingSeconds float64            `json:"oldest_pending_seconds"`
	TierUtilization      map[string]float64 `json:"tier_utilization"`
	Breakers             []breakerJSON      `json:"breakers"`
	WAL                  *walJSON           `json:"wal,omitempty"`
	Recovery             *recoveryJSON      `json:"recovery,omitempty"`
}

func statsView(s Stats, durable bool) statsJSON {
	v := statsJSON{
		Pending: s.Pending, Delayed: s.Delayed, Leased: s.Leased, Held: s.Held, Dead: s.Dead,
		ByPriority:     map[string]map[string]int{},
		DeadByCategory: s.DeadByCategory,
		Enqueued:       s.Enqueued, Dequeued: s.Dequeued, Acked: s.Acked, Nacked: s.Nacked, Retried: s.Retried,
		DeadLettered: s.DeadLettered, DeadLetteredByCategory: s.DeadLetteredByCategory, Expired: s.Expired,
		LeaseExpiries: s.LeaseExpiries, Duplicates: s.Duplicates, BackpressureWaits: s.BackpressureWaits,
		Redriven: s.Redriven, Requeued: s.Requeued, BreakerTrips: s.BreakerTrips,
		Wait: latencyView(s.Wait), Handling: latencyView(s.Handling),
		OldestPendingSeconds: s.OldestPending.Seconds(),
		TierUtilization:      make(map[string]float64, ring.NumTiers),
		Breakers:             make([]breakerJSON, 0, len(s.Breakers)),
	}
	for state, m := range map[State]map[Priority]int{Pending: s.PendingByPriority, Delayed: s.DelayedByPriority,
		Leased: s.LeasedByPriority, Held: s.HeldByPriority} {
		byP := make(map[string]int, len(m))
		for p, n := range m {
			byP[p.String()] = n
		}
		v.ByPriority[state.String()] = byP
	}
	for t, u := range s.TierUtilization {
		v.TierUtilization[priorityOfTier(t).String()] = u
	}
	for _, k := range s.Breakers {
		v.Breakers = append(v.Breakers, breakerJSON{Key: k.Key, State: k.State.String(), Trips: k.Trips,
			ConsecutiveFailures: k.ConsecutiveFailures, Calls: k.Calls, Failures: k.Failures,
			Probes: k.Probes, ReadyAt: k.ReadyAt})
	}
	if durable {
		v.WAL = &walJSON{Batches: s.WAL.Batches, Records: s.WAL.Records, Bytes: s.WAL.Bytes,
			FailedBatches: s.WAL.FailedBatches, Write: latencyView(s.WAL.Write), Fsync: latencyView(s.WAL.Fsync)}
		r := s.Recovery
		v.Recovery = &recoveryJSON{Records: r.Records, Bytes: r.Bytes, TornBytes: r.TornBytes,
			Crashed: r.Crashed, Poisoned: r.Poisoned, DurationSeconds: r.Duration.Seconds()}
	}
	return v
}
