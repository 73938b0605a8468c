package seedq

import (
	"context"
	"path/filepath"
	"testing"
)

func TestQueue(t *testing.T) {
	ctx := context.Background()
	q, err := Open(ctx, Config{DBPath: filepath.Join(t.TempDir(), "q.db"), Platform: "test", Counts: true})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	for _, m := range []Message{
		{TargetRoom: "!r", TargetChannel: "c", Type: "text", Content: "low", Priority: -1},
		{TargetRoom: "!r", TargetChannel: "c", Type: "text", Content: "normal", Priority: 0, Metadata: map[string]string{"k": "v"}},
		{TargetRoom: "!r", TargetChannel: "c", Type: "text", Content: "high", Priority: 1},
	} {
		if _, err := q.Enqueue(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if got := q.LastDepth(); got != 3 {
		t.Errorf("depth after 3 enqueues = %d, want 3", got)
	}
	for _, want := range []string{"high", "normal", "low"} {
		m, ok, err := q.Dequeue(ctx)
		if err != nil || !ok {
			t.Fatalf("Dequeue: %v %v", ok, err)
		}
		if m.Content != want || m.Status != "inflight" {
			t.Errorf("got %q (%s), want %q inflight", m.Content, m.Status, want)
		}
		if want == "normal" && m.Metadata["k"] != "v" {
			t.Errorf("metadata %v", m.Metadata)
		}
		if err := q.Ack(ctx, m.ID); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := q.Dequeue(ctx); ok || err != nil {
		t.Fatalf("Dequeue of an empty queue: %v %v", ok, err)
	}
	if err := q.Ack(ctx, "nope"); err == nil {
		t.Error("Ack of an unknown ID succeeded")
	}
	var acked int
	if err := q.DB().QueryRow(`SELECT COUNT(*) FROM queue_items WHERE status = 'acked'`).Scan(&acked); err != nil || acked != 3 {
		t.Errorf("acked rows = %d (%v), want 3", acked, err)
	}
}

// Every pooled connection runs in WAL mode with synchronous=NORMAL.
func TestPragmasOnEveryConnection(t *testing.T) {
	ctx := context.Background()
	q, err := Open(ctx, Config{DBPath: filepath.Join(t.TempDir(), "q.db"), Platform: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	conns := make([]interface{ Close() error }, 0, 3)
	for i := 0; i < 3; i++ {
		c, err := q.DB().Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		var mode string
		var sync int
		if err := c.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
			t.Errorf("conn %d: journal_mode %q %v", i, mode, err)
		}
		if err := c.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil || sync != 1 {
			t.Errorf("conn %d: synchronous %d %v, want 1 (NORMAL)", i, sync, err)
		}
	}
	for _, c := range conns {
		c.Close()
	}
}
