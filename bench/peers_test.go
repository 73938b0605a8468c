package bench

// Peer adapters behind one shape, for the workloads that drive every peer
// the same way (W2's River and asynq peers, and W5): a peer is opened with
// a handler, runs w2Consumers consumers of its own (River: one queue of
// 2,000 workers, riverConfig) that call the handler with each message's
// payload, and offers one enqueue call. The adapters
// of the peers W2 already had (ringwal, JetStream, goqite) configure them
// exactly as W2 does; W2 keeps its own code for those.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"maragu.dev/goqite"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/bench/internal/natsjs"
	"github.com/ringwal/ringwal/bench/internal/servers"
)

// queuePeer is an open peer whose consumers are running.
type queuePeer struct {
	// send is one enqueue call; it returns once the peer has stored the
	// message as its durability promises. Safe for concurrent use.
	send func(ctx context.Context, pl []byte) error
	// settled (optional, untimed) checks after a run that n messages were
	// stored and every one acked, waiting for asynchronous acks to land.
	settled func(n int) error
	// stop stops the consumers and closes the peer.
	stop func()
}

// peerOpener opens a peer whose consumers call handle with each message's
// payload (handle is safe for concurrent use). It skips b, with a message,
// when the peer's server is not installed.
type peerOpener func(b *testing.B, handle func(pl []byte)) *queuePeer

// openChan is the floor W5 measures the machine against: a buffered Go
// channel with w2Consumers goroutines receiving from it, no queue at all.
// What its tail shows (a wake-up on a 2-core VM, a GC, a descheduled
// vCPU) every in-process peer pays too.
func openChan(_ *testing.B, handle func([]byte)) *queuePeer {
	c := make(chan []byte, 1<<16)
	var wg sync.WaitGroup
	for range w2Consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pl := range c {
				handle(pl)
			}
		}()
	}
	return &queuePeer{
		send: func(ctx context.Context, pl []byte) error {
			select {
			case c <- pl:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
		stop: func() {
			close(c)
			wg.Wait()
		},
	}
}

// openRingwal: dir "" is the memory-only engine; consumers are one Run
// with w2Consumers workers (as in W2).
func openRingwal(d ringwal.Durability, memory bool) peerOpener {
	return func(b *testing.B, handle func([]byte)) *queuePeer {
		dir := ""
		if !memory {
			dir = b.TempDir()
		}
		e, err := ringwal.Open(dir, ringwal.Options{Durability: d})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- e.Run(ctx, w2Consumers, func(_ context.Context, d ringwal.Delivery) error {
				handle(d.Message.Payload)
				return nil
			})
		}()
		return &queuePeer{
			send: func(ctx context.Context, pl []byte) error {
				_, err := e.Enqueue(ctx, ringwal.Message{Payload: pl})
				return err
			},
			settled: func(n int) error {
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
					st := e.Stats()
					live := st.Pending + st.Delayed + st.Leased + st.Held
					if live == 0 && st.Acked == uint64(n) {
						return nil
					}
					if time.Now().After(deadline) {
						return fmt.Errorf("%d acked of %d, %d still live", st.Acked, n, live)
					}
				}
			},
			stop: func() {
				cancel()
				if err := <-done; err != nil {
					b.Error(err)
				}
				e.Close()
			},
		}
	}
}

// openJetStream is W2's jetstream (syncAlways false) or jetstream-sync.
func openJetStream(syncAlways bool) peerOpener {
	return func(b *testing.B, handle func([]byte)) *queuePeer {
		start := natsjs.Start
		if syncAlways {
			start = natsjs.StartSyncAlways
		}
		ns, err := start(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		pnc, pjs, err := natsjs.Connect(ns)
		if err != nil {
			natsjs.Stop(ns)
			b.Fatal(err)
		}
		cnc, cjs, err := natsjs.Connect(ns)
		if err != nil {
			pnc.Close()
			natsjs.Stop(ns)
			b.Fatal(err)
		}
		ctx := context.Background()
		cons, err := natsjs.Setup(ctx, pjs)
		if err == nil {
			cons, err = cjs.Consumer(ctx, natsjs.Stream, natsjs.Consumer)
		}
		if err != nil {
			cnc.Close()
			pnc.Close()
			natsjs.Stop(ns)
			b.Fatal(err)
		}
		var wg sync.WaitGroup
		var iters []jetstream.MessagesContext
		for range w2Consumers {
			it, err := cons.Messages(jetstream.PullMaxMessages(256))
			if err != nil {
				b.Fatal(err)
			}
			iters = append(iters, it)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					m, err := it.Next()
					if err != nil {
						if !errors.Is(err, jetstream.ErrMsgIteratorClosed) {
							b.Error(err)
						}
						return
					}
					handle(m.Data())
					ack := m.Ack
					if syncAlways {
						ack = func() error { return m.DoubleAck(ctx) }
					}
					if err := ack(); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		return &queuePeer{
			send: func(ctx context.Context, pl []byte) error {
				_, err := pjs.Publish(ctx, natsjs.Subject, pl)
				return err
			},
			stop: func() {
				for _, it := range iters {
					it.Stop()
				}
				wg.Wait()
				cnc.Close()
				pnc.Close()
				natsjs.Stop(ns)
			},
		}
	}
}

// openGoqite is W2's goqite: w2Consumers polling consumers.
func openGoqite(b *testing.B, handle func([]byte)) *queuePeer {
	q, db := goqiteQueue(b)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range w2Consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				m, err := q.Receive(ctx)
				if err != nil {
					if ctx.Err() == nil {
						b.Error(err)
					}
					return
				}
				if m == nil {
					time.Sleep(pollInterval)
					continue
				}
				handle(m.Body)
				if err := q.Delete(ctx, m.ID); err != nil && ctx.Err() == nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	return &queuePeer{
		send: func(ctx context.Context, pl []byte) error { return q.Send(ctx, goqite.Message{Body: pl}) },
		stop: func() { cancel(); wg.Wait(); db.Close() },
	}
}

// riverArgs is the River peers' job: the payload as a JSON string (the
// payloads are printable).
type riverArgs struct {
	Payload string `json:"p"`
}

func (riverArgs) Kind() string { return "bench" }

type riverWorker struct {
	river.WorkerDefaults[riverArgs]
	handle func([]byte)
}

func (w *riverWorker) Work(_ context.Context, j *river.Job[riverArgs]) error {
	w.handle([]byte(j.Args.Payload))
	return nil
}

// quiet is the River clients' logger: nothing.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// riverConfig is the configuration River's maintainers benchmark with
// (cmd/river/riverbench, behind the ~46k jobs/s they quote, riverqueue/river
// #278): FetchCooldown 2 ms, FetchPollInterval 20 ms, one queue of 2,000
// workers; everything else River's default (its default, batching
// completer among them). River's defaults (100 ms cooldown, 1 s poll)
// would cap it near MaxWorkers jobs per 100 ms: a fetch takes at most as
// many jobs as there are free workers, and fetches are a cooldown apart.
func riverConfig(handle func([]byte)) *river.Config {
	workers := river.NewWorkers()
	river.AddWorker(workers, &riverWorker{handle: handle})
	return &river.Config{
		FetchCooldown:     2 * time.Millisecond,
		FetchPollInterval: 20 * time.Millisecond,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 2000}},
		Workers:           workers,
		Logger:            quiet,
	}
}

// riverSQLiteDB opens River's SQLite database at path as the driver's doc
// advises (one open connection), in WAL mode with synchronous=FULL: a
// committed insert survives a power loss, as ringwal-fsync's and Postgres's
// (synchronous_commit on) do.
func riverSQLiteDB(path string) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// riverPeer wraps a started River client.
func riverPeer[TTx any](b *testing.B, client *river.Client[TTx], count func(ctx context.Context) (int, error), closeDB func()) *queuePeer {
	ctx := context.Background()
	if err := client.Start(ctx); err != nil {
		closeDB()
		b.Fatal(err)
	}
	return &queuePeer{
		send: func(ctx context.Context, pl []byte) error {
			_, err := client.Insert(ctx, riverArgs{Payload: string(pl)}, nil)
			return err
		},
		settled: func(n int) error {
			// The completer marks jobs completed in batches, asynchronously.
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				done, err := count(ctx)
				if err != nil {
					return err
				}
				if done == n {
					return nil
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("%d jobs completed of %d, 30 s after the last was worked", done, n)
				}
			}
		},
		stop: func() {
			stopCtx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			if err := client.Stop(stopCtx); err != nil {
				b.Error(err)
			}
			closeDB()
		},
	}
}

// openRiverSQLite: River on SQLite (riversqlite on modernc.org/sqlite), a
// fresh migrated database in b.TempDir().
func openRiverSQLite(b *testing.B, handle func([]byte)) *queuePeer {
	ctx := context.Background()
	db, err := riverSQLiteDB(filepath.Join(b.TempDir(), "river.db"))
	if err != nil {
		b.Fatal(err)
	}
	drv := riversqlite.New(db)
	if err := riverMigrate(ctx, drv); err != nil {
		db.Close()
		b.Fatal(err)
	}
	client, err := river.NewClient(drv, riverConfig(handle))
	if err != nil {
		db.Close()
		b.Fatal(err)
	}
	return riverPeer(b, client, func(ctx context.Context) (n int, err error) {
		err = db.QueryRowContext(ctx, `SELECT count(*) FROM river_job WHERE state = 'completed'`).Scan(&n)
		return n, err
	}, func() { db.Close() })
}

func riverMigrate[TTx any](ctx context.Context, drv riverdriver.Driver[TTx]) error {
	m, err := rivermigrate.New(drv, &rivermigrate.Config{Logger: quiet})
	if err != nil {
		return err
	}
	_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	return err
}

// openRiverPostgres: River on PostgreSQL (riverpgxv5), a fresh migrated
// database on the process's server (started on first use); the pool
// holds up to 80 connections (64 producers and River's own).
func openRiverPostgres(b *testing.B, handle func([]byte)) *queuePeer {
	ctx := context.Background()
	pool, err := newRiverPostgresDB(b, ctx)
	if err != nil {
		b.Fatal(err)
	}
	drv := riverpgxv5.New(pool)
	if err := riverMigrate(ctx, drv); err != nil {
		pool.Close()
		b.Fatal(err)
	}
	client, err := river.NewClient(drv, riverConfig(handle))
	if err != nil {
		pool.Close()
		b.Fatal(err)
	}
	return riverPeer(b, client, func(ctx context.Context) (n int, err error) {
		err = pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state = 'completed'`).Scan(&n)
		return n, err
	}, pool.Close)
}

var (
	pgOnce   sync.Once
	pgServer *servers.Postgres
	pgErr    error
	pgDBs    atomic.Int64
)

// sharedPostgres is the process's PostgreSQL server, started on first use
// (stopped by TestMain); it skips b when PostgreSQL is not installed.
func sharedPostgres(b *testing.B) *servers.Postgres {
	pgOnce.Do(func() { pgServer, pgErr = servers.StartPostgres() })
	if errors.Is(pgErr, servers.ErrNotInstalled) {
		b.Skipf("skipped: %v", pgErr)
	}
	if pgErr != nil {
		b.Fatal(pgErr)
	}
	return pgServer
}

// newRiverPostgresDB creates a fresh database on the shared server and
// returns a pool on it.
func newRiverPostgresDB(b *testing.B, ctx context.Context) (*pgxpool.Pool, error) {
	return newRiverPostgresDBNamed(ctx, sharedPostgres(b), fmt.Sprintf("bench%d", pgDBs.Add(1)))
}

// newRiverPostgresDBNamed creates database name on pg and returns a pool
// of up to 80 connections on it.
func newRiverPostgresDBNamed(ctx context.Context, pg *servers.Postgres, name string) (*pgxpool.Pool, error) {
	conn, err := pgx.Connect(ctx, pg.URL("postgres"))
	if err != nil {
		return nil, err
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+name)
	conn.Close(ctx)
	if err != nil {
		return nil, err
	}
	return pgxpool.New(ctx, pg.URL(name)+"&pool_max_conns=80")
}

// openAsynq: asynq on a fresh redis-server whose append-only file is
// synced as appendfsync says ("everysec" or "always"). The server has
// asynq's default configuration except Concurrency, w2Consumers (its
// default is the number of CPUs), and a log level of warnings; producers
// share one asynq.Client.
func openAsynq(appendfsync string) peerOpener {
	return func(b *testing.B, handle func([]byte)) *queuePeer {
		r, err := servers.StartRedis("", appendfsync)
		if errors.Is(err, servers.ErrNotInstalled) {
			b.Skipf("skipped: %v", err)
		}
		if err != nil {
			b.Fatal(err)
		}
		return asynqPeer(b, r, handle)
	}
}

func asynqPeer(b *testing.B, r *servers.Redis, handle func([]byte)) *queuePeer {
	opt := asynq.RedisClientOpt{Addr: r.Addr}
	client := asynq.NewClient(opt)
	srv := asynqServer(opt)
	mux := asynq.NewServeMux()
	mux.HandleFunc("bench", func(_ context.Context, t *asynq.Task) error {
		handle(t.Payload())
		return nil
	})
	if err := srv.Start(mux); err != nil {
		client.Close()
		r.Stop()
		b.Fatal(err)
	}
	insp := asynq.NewInspector(opt)
	return &queuePeer{
		send: func(ctx context.Context, pl []byte) error {
			_, err := client.EnqueueContext(ctx, asynq.NewTask("bench", pl))
			return err
		},
		settled: func(n int) error {
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				qi, err := insp.GetQueueInfo("default")
				if err != nil {
					return err
				}
				if qi.Size == 0 && qi.Processed == n {
					return nil
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("%d tasks processed of %d, %d still queued 10 s later", qi.Processed, n, qi.Size)
				}
			}
		},
		stop: func() {
			srv.Shutdown()
			insp.Close()
			client.Close()
			if err := r.Stop(); err != nil {
				b.Error(err)
			}
			os.RemoveAll(r.Dir)
		},
	}
}

func asynqServer(opt asynq.RedisClientOpt) *asynq.Server {
	return asynq.NewServer(opt, asynq.Config{Concurrency: w2Consumers, LogLevel: asynq.WarnLevel})
}
