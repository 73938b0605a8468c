package bench

// W2: durable enqueue -> consume -> ack. 1, 8 or 64 producers and always
// w2Consumers (4) consumers; 128-byte and 1 KiB payloads; a fresh store in
// b.TempDir() for every run. A producer's send returns once the peer has
// stored the message as its durability promises; a consumer takes a
// message, then acks it.
//
//	BenchmarkW2/ringwal-write/{128B,1KiB}/{1P4C,8P4C,64P4C}  Options.Durability = Write (write(2) before returning)
//	BenchmarkW2/ringwal-fsync/...                          Durability = Fsync (group-committed fsync)
//	BenchmarkW2/ringwal-{write,fsync}-batch/...            the same, consumers take DequeueBatch(64) and AckBatch
//	BenchmarkW2/jetstream/...                              embedded nats-server, file stream, work-queue retention, explicit ack (Ack)
//	BenchmarkW2/jetstream-sync/...                         the same with sync_always, consumers acking with DoubleAck (AckSync)
//	BenchmarkW2/goqite/...                                 maragu.dev/goqite on modernc.org/sqlite (WAL, synchronous=NORMAL)
//	BenchmarkW2/sqlite-seed/...                            the seed design's SQLite queue (internal/seedq)
//	BenchmarkW2/river-sqlite/...                           River on SQLite (riversqlite, WAL, synchronous=FULL), riverbench's settings
//	BenchmarkW2/river-postgres/...                         River on PostgreSQL (riverpgxv5, synchronous_commit on), riverbench's settings
//	BenchmarkW2/asynq-everysec/...                         asynq on Redis, appendonly with appendfsync everysec, 4 workers
//	BenchmarkW2/asynq-always/...                           the same with appendfsync always
//
// ringwal's producers call Enqueue; its consumers are one Run with
// w2Consumers workers whose handler returns nil, as a user would write
// them: a worker acks without waiting for the log (the ack is durable with
// the next group commit), as JetStream's Ack() does not wait for the
// server.
//
// Durability of each: ringwal-write, jetstream, goqite and sqlite-seed
// all survive a killed process and may lose the last moments to a power
// loss (write(2) without fsync: JetStream fsyncs every 2 minutes, SQLite
// in WAL mode with synchronous=NORMAL at checkpoints); ringwal-fsync and
// jetstream-sync also survive a power loss. So ringwal-write is the
// like-for-like reference of jetstream, and jetstream-sync that of
// ringwal-fsync. (A message whose ack a crash loses is delivered again by
// every peer: ringwal's Run, and JetStream's Ack(), ack asynchronously.)

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"maragu.dev/goqite"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/bench/internal/natsjs"
	"github.com/ringwal/ringwal/bench/internal/seedq"
)

// pollInterval is how long a consumer of the SQL peers (see poll) sleeps
// when it found nothing.
const pollInterval = 200 * time.Microsecond

var w2Sizes = []struct {
	name string
	size int
}{{"128B", Small}, {"1KiB", Large}}

func BenchmarkW2(b *testing.B) {
	peers := []struct {
		name string
		fn   func(b *testing.B, s shape, size int)
	}{
		{"ringwal-write", func(b *testing.B, s shape, size int) { w2Ringwal(b, s, size, ringwal.Write) }},
		{"ringwal-fsync", func(b *testing.B, s shape, size int) { w2Ringwal(b, s, size, ringwal.Fsync) }},
		{"ringwal-write-batch", func(b *testing.B, s shape, size int) { w2RingwalBatch(b, s, size, ringwal.Write) }},
		{"ringwal-fsync-batch", func(b *testing.B, s shape, size int) { w2RingwalBatch(b, s, size, ringwal.Fsync) }},
		{"jetstream", func(b *testing.B, s shape, size int) { w2JetStream(b, s, size, false) }},
		{"jetstream-sync", func(b *testing.B, s shape, size int) { w2JetStream(b, s, size, true) }},
		{"goqite", w2Goqite},
		{"sqlite-seed", w2Seed},
		{"river-sqlite", w2Peer(openRiverSQLite)},
		{"river-postgres", w2Peer(openRiverPostgres)},
		{"asynq-everysec", w2Peer(openAsynq("everysec"))},
		{"asynq-always", w2Peer(openAsynq("always"))},
	}
	for _, p := range peers {
		b.Run(p.name, func(b *testing.B) {
			if strings.HasPrefix(p.name, "asynq") && os.Getenv("RINGWAL_BENCH_W2_FIXED") == "skip" {
				b.Skip("asynq: measured by go run ./report's own invocation with -benchtime 2000x")
			}
			for _, sz := range w2Sizes {
				b.Run(sz.name, func(b *testing.B) {
					for _, s := range durableShapes {
						b.Run(s.String(), func(b *testing.B) { p.fn(b, s, sz.size) })
					}
				})
			}
		})
	}
}

// w2Ringwal: producers Enqueue; the consumers are one Run with s.C
// workers (started by consumer 0; the harness's other consumer slots have
// nothing to do), whose handler counts the message and returns nil.
func w2Ringwal(b *testing.B, s shape, size int, d ringwal.Durability) {
	e, err := ringwal.Open(b.TempDir(), ringwal.Options{Durability: d})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	runRingwalWith(b, s, e, size, func(ctx context.Context, cd *countdown) func(int) error {
		return func(i int) error {
			if i != 0 {
				return nil
			}
			// Run returns once ctx ends (the last message was taken) and
			// its workers have settled what they were handling.
			return e.Run(ctx, s.C, func(context.Context, ringwal.Delivery) error {
				cd.take()
				return nil
			})
		}
	})
}

// w2RingwalBatch: producers Enqueue; s.C consumers each take up to 64
// with DequeueBatch and settle them with AckBatch, which waits for the
// log once per batch (Run's acks do not wait at all).
func w2RingwalBatch(b *testing.B, s shape, size int, d ringwal.Durability) {
	e, err := ringwal.Open(b.TempDir(), ringwal.Options{Durability: d})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	runRingwalBatch(b, s, e, size)
}

// w2JetStream: syncAlways selects the server's sync_always (every store
// write synced) and consumers that ack with DoubleAck, the jetstream
// package's AckSync (it waits for the server's reply); otherwise the
// defaults and Ack(), which does not wait.
func w2JetStream(b *testing.B, s shape, size int, syncAlways bool) {
	start := natsjs.Start
	if syncAlways {
		start = natsjs.StartSyncAlways
	}
	ns, err := start(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer natsjs.Stop(ns)
	pnc, pjs, err := natsjs.Connect(ns) // producers' connection
	if err != nil {
		b.Fatal(err)
	}
	defer pnc.Close()
	cnc, cjs, err := natsjs.Connect(ns) // consumers' connection
	if err != nil {
		b.Fatal(err)
	}
	defer cnc.Close()
	ctx := context.Background()
	if _, err := natsjs.Setup(ctx, pjs); err != nil {
		b.Fatal(err)
	}
	cons, err := cjs.Consumer(ctx, natsjs.Stream, natsjs.Consumer)
	if err != nil {
		b.Fatal(err)
	}
	pl := payload(size)
	cd := newCountdown(b.N)
	var mu sync.Mutex
	var iters []jetstream.MessagesContext
	go func() {
		<-cd.done
		mu.Lock()
		defer mu.Unlock()
		for _, it := range iters {
			it.Stop()
		}
	}()
	run(b, s, cd,
		func(_, n int) error {
			for range n {
				if _, err := pjs.Publish(ctx, natsjs.Subject, pl); err != nil {
					return err
				}
			}
			return nil
		},
		func(int) error {
			mu.Lock()
			if cd.finished() {
				mu.Unlock()
				return nil
			}
			it, err := cons.Messages(jetstream.PullMaxMessages(256))
			if err != nil {
				mu.Unlock()
				return err
			}
			iters = append(iters, it)
			mu.Unlock()
			for {
				m, err := it.Next()
				if err != nil {
					if errors.Is(err, jetstream.ErrMsgIteratorClosed) && cd.finished() {
						return nil
					}
					return err
				}
				ack := m.Ack
				if syncAlways {
					ack = func() error { return m.DoubleAck(ctx) }
				}
				if err := ack(); err != nil {
					return err
				}
				cd.take()
			}
		})
	// Untimed: b.N messages were stored and every one was acked (Ack does
	// not wait for the server, so the last acks may still be on their way;
	// work-queue retention removes a message once its ack is processed).
	str, err := pjs.Stream(ctx, natsjs.Stream)
	if err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		info, err := str.Info(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if info.State.LastSeq != uint64(b.N) {
			b.Fatalf("after the run: %d messages stored, want %d", info.State.LastSeq, b.N)
		}
		if info.State.Msgs == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("after the run: %d of %d messages still unacked 10s later", info.State.Msgs, b.N)
		}
	}
}

// goqiteSchema is maragu.dev/goqite v0.4.0's schema_sqlite.sql, verbatim
// (the module ships it as a file, not as a Go value).
const goqiteSchema = `
create table goqite (
  id text primary key default ('m_' || lower(hex(randomblob(16)))),
  created text not null default (strftime('%Y-%m-%dT%H:%M:%fZ')),
  updated text not null default (strftime('%Y-%m-%dT%H:%M:%fZ')),
  queue text not null,
  body blob not null,
  timeout text not null default (strftime('%Y-%m-%dT%H:%M:%fZ')),
  received integer not null default 0,
  priority integer not null default 0
) strict;

create trigger goqite_updated_timestamp after update on goqite begin
  update goqite set updated = strftime('%Y-%m-%dT%H:%M:%fZ') where id = old.id;
end;

create index goqite_queue_priority_created_idx on goqite (queue, priority desc, created);
`

// goqiteQueue opens a goqite queue as its README sets one up (WAL, a busy
// timeout, one open connection), on modernc.org/sqlite with
// synchronous=NORMAL (as for the seed queue) and BEGIN IMMEDIATE.
func goqiteQueue(b *testing.B) (*goqite.Queue, *sql.DB) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+filepath.Join(b.TempDir(), "goqite.db")+"?"+q.Encode())
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	if _, err := db.Exec(goqiteSchema); err != nil {
		db.Close()
		b.Fatal(err)
	}
	return goqite.New(goqite.NewOpts{DB: db, Name: "w2"}), db
}

func w2Goqite(b *testing.B, s shape, size int) {
	q, db := goqiteQueue(b)
	defer db.Close()
	pl := payload(size)
	cd := newCountdown(b.N)
	ctx := context.Background()
	run(b, s, cd,
		func(_, n int) error {
			for range n {
				if err := q.Send(ctx, goqite.Message{Body: pl}); err != nil {
					return err
				}
			}
			return nil
		},
		func(int) error {
			return poll(cd,
				func() (*goqite.Message, bool, error) {
					m, err := q.Receive(ctx)
					return m, m != nil, err
				},
				func(m *goqite.Message) error { return q.Delete(ctx, m.ID) })
		})
	// Untimed: every message was deleted (acked) exactly once.
	var left int
	if err := db.QueryRow(`select count(*) from goqite`).Scan(&left); err != nil || left != 0 {
		b.Fatalf("after the run: %d messages left (%v)", left, err)
	}
}

// asynq's W2 cells need a fixed count (-benchtime 2000x): with an empty
// queue its server polls once a second (TaskCheckInterval, 1 s by
// default), so the b.N=1 probe of -benchtime 1s takes about that long and
// go test would stop there, or creep up one message at a time. go run
// ./report runs them in an invocation of their own (and sets
// RINGWAL_BENCH_W2_FIXED=skip for the others).

// w2Peer is W2 for a peer behind the queuePeer shape (peers_test.go): the
// peer's own consumers count each message; the harness's consumer slots
// only wait for the last.
func w2Peer(open peerOpener) func(b *testing.B, s shape, size int) {
	return func(b *testing.B, s shape, size int) {
		cd := newCountdown(b.N)
		p := open(b, func([]byte) { cd.take() })
		defer p.stop()
		pl := payload(size)
		ctx := context.Background()
		run(b, s, cd,
			func(_, n int) error {
				for range n {
					if err := p.send(ctx, pl); err != nil {
						return err
					}
				}
				return nil
			},
			func(int) error { <-cd.done; return nil })
		if p.settled != nil {
			if err := p.settled(b.N); err != nil {
				b.Fatalf("after the run: %v", err)
			}
		}
	}
}

// poll is a consumer of the SQL peers, which have no blocking receive: it
// receives (ok is false when it found nothing, and it then sleeps
// pollInterval) and acks until every message has been consumed.
func poll[M any](cd *countdown, receive func() (m M, ok bool, err error), ack func(M) error) error {
	for !cd.finished() {
		m, ok, err := receive()
		if err != nil {
			return err
		}
		if !ok {
			time.Sleep(pollInterval)
			continue
		}
		if err := ack(m); err != nil {
			return err
		}
		cd.take()
	}
	return nil
}

func w2Seed(b *testing.B, s shape, size int) {
	ctx := context.Background()
	q, err := seedq.Open(ctx, seedq.Config{DBPath: filepath.Join(b.TempDir(), "queue.db"), Platform: "slack"})
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	content := string(payload(size))
	cd := newCountdown(b.N)
	run(b, s, cd,
		func(_, n int) error {
			for range n {
				_, err := q.Enqueue(ctx, seedq.Message{
					TargetRoom: "!room:example.org", TargetChannel: "C0123456", Type: "text", Content: content,
				})
				if err != nil {
					return err
				}
			}
			return nil
		},
		func(int) error {
			return poll(cd,
				func() (*seedq.Message, bool, error) { return q.Dequeue(ctx) },
				func(m *seedq.Message) error { return q.Ack(ctx, m.ID) })
		})
	// Untimed: b.N rows were stored and every one was acked.
	var rows, acked int
	err = q.DB().QueryRow(`SELECT COUNT(*), COUNT(*) FILTER (WHERE status = 'acked') FROM queue_items`).Scan(&rows, &acked)
	if err != nil || rows != b.N || acked != b.N {
		b.Fatalf("after the run: %d rows, %d acked, want %d (%v)", rows, acked, b.N, err)
	}
}
