// Package seedq is the SQLite message queue of the seed design ("SDTW
// Message Queue Specification", shared/seeds/000_*.txt) that ringwal
// replaces, ported to run: its schema (tables, indexes and triggers
// verbatim), its connection setup (modernc.org/sqlite, WAL journal,
// synchronous=NORMAL, 10 MB page cache, 1 GB mmap, a pool of
// ConnectionPool connections), one row per message keyed by a UUID v4,
// Enqueue as one INSERT, Dequeue as one transaction (serialised by a
// mutex, as in the seed) that selects the next row by priority and retry
// time and marks it inflight, and Ack as an UPDATE to 'acked'.
//
// Where the seed's Go does not run as written, this port changes the
// least it can, and says so:
//
//   - "FOR UPDATE SKIP LOCKED" is PostgreSQL, a syntax error in SQLite:
//     dropped (the seed's mutex already serialises dequeues in-process).
//   - The dequeue transaction is BEGIN IMMEDIATE (the driver's
//     _txlock=immediate). The seed's plain BEGIN is DEFERRED: its SELECT
//     takes a read snapshot and the UPDATE then fails at once with
//     SQLITE_BUSY (busy_timeout does not apply to a lock upgrade) whenever
//     an Enqueue committed in between, which under load is nearly always.
//   - The pragmas also go in the DSN (_pragma=...), so every pooled
//     connection gets them; the seed ran them once with db.Exec, which
//     sets synchronous, cache_size and mmap_size on one connection of the
//     pool only. Open still runs that db.Exec too, as the seed does (it is
//     part of W4's timed open).
//   - Dequeue scans into typed columns (the seed scans INTEGER
//     milliseconds into time.Time, a BLOB into a map and a NULL into a
//     string, each an error with database/sql).
//   - The depth COUNT(*) queries after each Enqueue and Dequeue (the
//     result's Position and Depth) run only with Config.Counts; the
//     benchmarks leave them off, which favours this queue.
package seedq

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// Config is the seed's QueueConfig, less what the benchmarks do not use.
type Config struct {
	DBPath         string
	Platform       string
	MaxRetries     int // default 3
	ConnectionPool int // default 10
	// Counts runs the seed's depth queries after Enqueue and Dequeue.
	Counts bool
}

// Message is the seed's Message (attachments and metadata kept as JSON).
type Message struct {
	ID            string
	Platform      string
	TargetRoom    string
	TargetChannel string
	Type          string
	Content       string
	Attachments   []Attachment
	ReplyTo       string
	Metadata      map[string]string
	Signature     string
	Priority      int
	Attempts      int
	MaxAttempts   int
	CreatedAt     time.Time
	NextRetry     time.Time
	LastAttempt   *time.Time
	ErrorMessage  string
	Status        string
	ExpiresAt     *time.Time
}

// Attachment is the seed's Attachment.
type Attachment struct {
	Type     string `json:"type"`
	URL      string `json:"url"`
	Name     string `json:"name,omitempty"`
	Size     int64  `json:"size,omitempty"`
	MimeType string `json:"mime_type,omitempty"`
}

// Queue is the seed's MessageQueue.
type Queue struct {
	cfg Config
	db  *sql.DB
	mu  sync.Mutex // serialises Dequeue, as the seed's mq.mu does

	// lastDepth is the depth the last Enqueue or Dequeue counted (only
	// with Config.Counts).
	lastDepth atomic.Int64
}

// LastDepth is the pending depth the last Enqueue or Dequeue counted, with
// Config.Counts (the seed's EnqueueResult.Depth / DequeueResult.Depth).
func (q *Queue) LastDepth() int { return int(q.lastDepth.Load()) }

// Schema is the seed's initSchema, verbatim.
const Schema = `
    CREATE TABLE IF NOT EXISTS queue_items (
        id              TEXT PRIMARY KEY,
        platform         TEXT NOT NULL,
        target_room     TEXT NOT NULL,
        target_channel  TEXT NOT NULL,
        message_type    TEXT NOT NULL,
        content         TEXT NOT NULL,
        attachments     BLOB,
        reply_to        TEXT,
        signature       TEXT,
        metadata        BLOB,
        priority        INTEGER DEFAULT 0,
        attempts        INTEGER DEFAULT 0,
        max_attempts    INTEGER DEFAULT 3,
        created_at      INTEGER NOT NULL,
        next_retry     INTEGER NOT NULL,
        last_attempt    INTEGER,
        error_message   TEXT,
        status          TEXT DEFAULT 'pending',
        expires_at      INTEGER,
        CHECK (status IN ('pending', 'inflight', 'failed', 'acked')),
        CHECK (attempts >= 0 AND attempts <= max_attempts),
        CHECK (priority >= -1 AND priority <= 1)
    );

    CREATE TABLE IF NOT EXISTS dead_letter_queue (
        id              TEXT PRIMARY KEY,
        platform         TEXT NOT NULL,
        target_room     TEXT NOT NULL,
        target_channel  TEXT NOT NULL,
        message_type    TEXT NOT NULL,
        content         TEXT NOT NULL,
        attachments     BLOB,
        reply_to        TEXT,
        signature       TEXT,
        metadata        BLOB,
        priority        INTEGER,
        attempts        INTEGER NOT NULL,
        original_id      TEXT,
        failed_at       INTEGER NOT NULL,
        error_message   TEXT NOT NULL,
        error_category  TEXT NOT NULL,
        reviewed        INTEGER DEFAULT 0,
        FOREIGN KEY (id) REFERENCES queue_items(id) ON DELETE CASCADE
    );

    CREATE INDEX IF NOT EXISTS idx_queue_status_retry
        ON queue_items (status, next_retry)
        WHERE status IN ('pending', 'inflight');

    CREATE INDEX IF NOT EXISTS idx_queue_platform_status
        ON queue_items (platform, status)
        WHERE status = 'pending';

    CREATE INDEX IF NOT EXISTS idx_queue_priority
        ON queue_items (priority DESC, next_retry ASC)
        WHERE status = 'pending';

    CREATE INDEX IF NOT EXISTS idx_queue_expires
        ON queue_items (expires_at)
        WHERE expires_at IS NOT NULL;

    CREATE INDEX IF NOT EXISTS idx_dlq_platform
        ON dead_letter_queue (platform, failed_at DESC);

    CREATE INDEX IF NOT EXISTS idx_dlq_reviewed
        ON dead_letter_queue (reviewed, failed_at DESC);
`

// Triggers are the seed's two triggers, verbatim.
const Triggers = `
CREATE TRIGGER IF NOT EXISTS trigger_expire_messages
    AFTER UPDATE OF next_retry ON queue_items
    WHEN NEW.next_retry < (strftime('%s', 'now') * 1000)
       AND NEW.expires_at IS NOT NULL
       AND NEW.expires_at < (strftime('%s', 'now') * 1000)
BEGIN
    UPDATE queue_items
    SET status = 'failed',
        error_message = 'Message expired (TTL)',
        attempts = max_attempts
    WHERE id = NEW.id;
END;

CREATE TRIGGER IF NOT EXISTS trigger_move_to_dlq
    AFTER UPDATE OF attempts ON queue_items
    WHEN NEW.attempts >= NEW.max_attempts
       AND NEW.status != 'acked'
BEGIN
    INSERT INTO dead_letter_queue (
        id, platform, target_room, target_channel,
        message_type, content, attachments, reply_to,
        signature, metadata, priority, attempts,
        failed_at, error_message, error_category
    )
    SELECT
        id, platform, target_room, target_channel,
        message_type, content, attachments, reply_to,
        signature, metadata, priority, attempts,
        (strftime('%s', 'now') * 1000), error_message,
        CASE
            WHEN error_message LIKE '%timeout%' THEN 'timeout'
            WHEN error_message LIKE '%rate limit%' THEN 'rate_limit'
            WHEN error_message LIKE '%auth%' THEN 'auth_failed'
            WHEN error_message LIKE '%network%' THEN 'network_error'
            ELSE 'unknown'
        END
    FROM queue_items
    WHERE id = NEW.id;

    DELETE FROM queue_items WHERE id = NEW.id;
END;
`

// DSN is the connection string: the seed's busy_timeout and WAL, plus its
// other pragmas (so that every pooled connection has them) and
// BEGIN IMMEDIATE.
func DSN(path string) string {
	q := url.Values{}
	for _, p := range []string{
		"busy_timeout(5000)",
		"journal_mode(WAL)",
		"synchronous(NORMAL)",
		"cache_size(-10000)",
		"mmap_size(1073741824)",
	} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	return "file:" + path + "?" + q.Encode()
}

// Open is the seed's NewMessageQueue, less its cleanup goroutine (which
// wakes every 5 minutes, never within a benchmark).
func Open(ctx context.Context, cfg Config) (*Queue, error) {
	if cfg.DBPath == "" {
		return nil, errors.New("database path required")
	}
	if cfg.MaxRetries <= 0 {
		cfg.MaxRetries = 3
	}
	if cfg.ConnectionPool <= 0 {
		cfg.ConnectionPool = 10
	}
	db, err := sql.Open("sqlite", DSN(cfg.DBPath))
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	db.SetMaxOpenConns(cfg.ConnectionPool)
	db.SetMaxIdleConns(cfg.ConnectionPool / 2)
	for _, p := range []string{
		"PRAGMA journal_mode=WAL;",
		"PRAGMA synchronous=NORMAL;",
		"PRAGMA cache_size=-10000;",
		"PRAGMA mmap_size=1073741824;",
	} {
		if _, err := db.ExecContext(ctx, p); err != nil {
			db.Close()
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	if _, err := db.ExecContext(ctx, Schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("init schema: %w", err)
	}
	if _, err := db.ExecContext(ctx, Triggers); err != nil {
		db.Close()
		return nil, fmt.Errorf("init triggers: %w", err)
	}
	return &Queue{cfg: cfg, db: db}, nil
}

// DB returns the queue's database handle.
func (q *Queue) DB() *sql.DB { return q.db }

// Close closes the database (the seed's Shutdown, without its wait for
// inflight messages to drain).
func (q *Queue) Close() error { return q.db.Close() }

const insertSQL = `
        INSERT INTO queue_items (
            id, platform, target_room, target_channel,
            message_type, content, attachments, reply_to,
            signature, metadata, priority, attempts,
            max_attempts, created_at, next_retry, status
        ) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    `

// prepare fills the seed's Enqueue defaults and returns the INSERT's
// arguments.
func (q *Queue) prepare(msg *Message) ([]any, error) {
	if msg.ID == "" {
		msg.ID = uuid.New().String()
	}
	now := time.Now()
	if msg.CreatedAt.IsZero() {
		msg.CreatedAt = now
	}
	if msg.NextRetry.IsZero() {
		msg.NextRetry = now
	}
	if msg.Status == "" {
		msg.Status = "pending"
	}
	if msg.MaxAttempts <= 0 {
		msg.MaxAttempts = q.cfg.MaxRetries
	}
	var attachments, metadata []byte
	var err error
	if len(msg.Attachments) > 0 {
		if attachments, err = json.Marshal(msg.Attachments); err != nil {
			return nil, fmt.Errorf("marshal attachments: %w", err)
		}
	}
	if len(msg.Metadata) > 0 {
		if metadata, err = json.Marshal(msg.Metadata); err != nil {
			return nil, fmt.Errorf("marshal metadata: %w", err)
		}
	}
	return []any{
		msg.ID, q.cfg.Platform, msg.TargetRoom, msg.TargetChannel,
		msg.Type, msg.Content, attachments, msg.ReplyTo,
		msg.Signature, metadata, msg.Priority, msg.Attempts,
		msg.MaxAttempts, msg.CreatedAt.UnixMilli(), msg.NextRetry.UnixMilli(), msg.Status,
	}, nil
}

// Enqueue inserts one message (one autocommit INSERT) and returns its ID.
func (q *Queue) Enqueue(ctx context.Context, msg Message) (string, error) {
	args, err := q.prepare(&msg)
	if err != nil {
		return "", err
	}
	if _, err := q.db.ExecContext(ctx, insertSQL, args...); err != nil {
		return "", fmt.Errorf("insert message: %w", err)
	}
	if q.cfg.Counts {
		var position, depth int
		err := q.db.QueryRowContext(ctx, `
        SELECT
            (SELECT COUNT(*) FROM queue_items WHERE status = 'pending' AND next_retry <= ?),
            (SELECT COUNT(*) FROM queue_items WHERE status = 'pending')
        `, time.Now().UnixMilli()).Scan(&position, &depth)
		if err != nil {
			return "", fmt.Errorf("get queue depth: %w", err)
		}
		q.lastDepth.Store(int64(depth))
	}
	return msg.ID, nil
}

// EnqueueBatch inserts msgs in one transaction with the same INSERT. The
// seed has no batch enqueue; the benchmarks use this only to build W4's
// backlog quickly.
func (q *Queue) EnqueueBatch(ctx context.Context, msgs []Message) error {
	tx, err := q.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, insertSQL)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for i := range msgs {
		m := msgs[i]
		args, err := q.prepare(&m)
		if err != nil {
			return err
		}
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("insert message: %w", err)
		}
	}
	return tx.Commit()
}

const dequeueSQL = `
        SELECT id, platform, target_room, target_channel,
               message_type, content, attachments, reply_to,
               signature, metadata, priority, attempts,
               max_attempts, created_at, next_retry,
               last_attempt, error_message, status,
               CASE WHEN expires_at IS NOT NULL THEN expires_at ELSE NULL END as expires_at
        FROM queue_items
        WHERE status = 'pending'
          AND next_retry <= ?
        ORDER BY priority DESC, next_retry ASC
        LIMIT 1
    `

// Dequeue leases the next ready message: in one transaction, under the
// queue's mutex, it selects the highest-priority, earliest-due pending row
// and marks it inflight. ok is false when nothing is ready.
func (q *Queue) Dequeue(ctx context.Context) (msg *Message, ok bool, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()

	tx, err := q.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, false, fmt.Errorf("begin transaction: %w", err)
	}
	defer tx.Rollback()

	var (
		m                          Message
		attachments, metadata      []byte
		replyTo, signature, errMsg sql.NullString
		created, next              int64
		lastAttempt, expiresAt     sql.NullInt64
	)
	err = tx.QueryRowContext(ctx, dequeueSQL, time.Now().UnixMilli()).Scan(
		&m.ID, &m.Platform, &m.TargetRoom, &m.TargetChannel,
		&m.Type, &m.Content, &attachments, &replyTo,
		&signature, &metadata, &m.Priority, &m.Attempts,
		&m.MaxAttempts, &created, &next,
		&lastAttempt, &errMsg, &m.Status,
		&expiresAt,
	)
	if errors.Is(err, sql.ErrNoRows) {
		if q.cfg.Counts {
			q.lastDepth.Store(int64(q.pendingDepth(ctx)))
		}
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("query message: %w", err)
	}
	if len(attachments) > 0 {
		if err := json.Unmarshal(attachments, &m.Attachments); err != nil {
			return nil, false, fmt.Errorf("unmarshal attachments: %w", err)
		}
	}
	if len(metadata) > 0 {
		if err := json.Unmarshal(metadata, &m.Metadata); err != nil {
			return nil, false, fmt.Errorf("unmarshal metadata: %w", err)
		}
	}
	m.ReplyTo, m.Signature, m.ErrorMessage = replyTo.String, signature.String, errMsg.String
	m.CreatedAt = time.UnixMilli(created)
	m.NextRetry = time.UnixMilli(next)
	if lastAttempt.Valid {
		t := time.UnixMilli(lastAttempt.Int64)
		m.LastAttempt = &t
	}
	if expiresAt.Valid {
		t := time.UnixMilli(expiresAt.Int64)
		m.ExpiresAt = &t
	}

	if _, err := tx.ExecContext(ctx, `UPDATE queue_items SET status = 'inflight' WHERE id = ?`, m.ID); err != nil {
		return nil, false, fmt.Errorf("mark inflight: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, false, fmt.Errorf("commit transaction: %w", err)
	}
	m.Status = "inflight"
	if q.cfg.Counts {
		q.lastDepth.Store(int64(q.pendingDepth(ctx)))
	}
	return &m, true, nil
}

func (q *Queue) pendingDepth(ctx context.Context) int {
	var depth int
	err := q.db.QueryRowContext(ctx,
		`SELECT COUNT(*) FROM queue_items WHERE status = 'pending' AND next_retry <= ?`,
		time.Now().UnixMilli()).Scan(&depth)
	if err != nil {
		return 0
	}
	return depth
}

// Ack marks a message acked (the seed keeps the row, with status 'acked').
func (q *Queue) Ack(ctx context.Context, id string) error {
	res, err := q.db.ExecContext(ctx, `
        UPDATE queue_items
        SET status = 'acked'
        WHERE id = ?
    `, id)
	if err != nil {
		return fmt.Errorf("ack message: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("message not found: %s", id)
	}
	return nil
}
