package bench

// W4 for River and asynq: time from a restart of the application to the
// first job handled, with w4Pending() jobs waiting.
//
//	BenchmarkW4/river-sqlite/<n>    open the SQLite database, NewClient, Start, until the worker's Work is called
//	BenchmarkW4/river-postgres/<n>  open a pool on the (running, warm) PostgreSQL server, NewClient, Start,
//	                                until Work is called: an application restart, not a database restart
//	BenchmarkW4/asynq-everysec/<n>  start redis-server on the store's directory (it loads its append-only
//	                                file), asynq's Server, until the handler is called
//
// Jobs are inserted untimed with each peer's batch insert where it has one
// (River's InsertManyFast on PostgreSQL, InsertMany in transactions of
// 10,000 on SQLite); asynq has none, so 64 goroutines Enqueue.

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"

	"github.com/ringwal/ringwal/bench/internal/servers"
)

// riverInsertPending inserts n jobs through client, in batches of 10,000.
func riverInsertPending[TTx any](ctx context.Context, client *river.Client[TTx], fast bool, n int) error {
	pl := string(payload(Small))
	batch := make([]river.InsertManyParams, 10_000)
	for i := range batch {
		batch[i] = river.InsertManyParams{Args: riverArgs{Payload: pl}}
	}
	for left := n; left > 0; left -= len(batch) {
		var err error
		if fast {
			_, err = client.InsertManyFast(ctx, batch[:min(left, len(batch))])
		} else {
			_, err = client.InsertMany(ctx, batch[:min(left, len(batch))])
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// riverRestart times one River start to the first Work call; the client
// stops (completing that job) outside the timer.
func riverRestart[TTx any](drv riverdriver.Driver[TTx], closeDB func()) (func() error, error) {
	first := make(chan struct{})
	var once sync.Once
	client, err := river.NewClient(drv, riverConfig(func([]byte) { once.Do(func() { close(first) }) }))
	if err != nil {
		closeDB()
		return nil, err
	}
	ctx := context.Background()
	if err := client.Start(ctx); err != nil {
		closeDB()
		return nil, err
	}
	select {
	case <-first:
	case <-time.After(time.Minute):
		client.Stop(ctx)
		closeDB()
		return nil, fmt.Errorf("no job worked a minute after Start")
	}
	return func() error {
		// Stop lets the started jobs finish (they do nothing) and
		// completes them; the next restart takes the next ones.
		err := client.Stop(ctx)
		closeDB()
		return err
	}, nil
}

func w4RiverSQLite(b *testing.B) {
	ctx := context.Background()
	dir := w4Build(b, "river-sqlite", func(dir string, n int) error {
		db, err := riverSQLiteDB(filepath.Join(dir, "river.db"))
		if err != nil {
			return err
		}
		defer db.Close()
		drv := riversqlite.New(db)
		if err := riverMigrate(ctx, drv); err != nil {
			return err
		}
		client, err := river.NewClient(drv, &river.Config{Logger: quiet})
		if err != nil {
			return err
		}
		return riverInsertPending(ctx, client, false, n)
	})
	w4Loop(b, func() (func() error, error) {
		db, err := riverSQLiteDB(filepath.Join(dir, "river.db"))
		if err != nil {
			return nil, err
		}
		return riverRestart(riversqlite.New(db), func() { db.Close() })
	})
}

func w4RiverPostgres(b *testing.B) {
	ctx := context.Background()
	pg := sharedPostgres(b)
	name := "w4river"
	w4Build(b, "river-postgres", func(string, int) error {
		pool, err := newRiverPostgresDBNamed(ctx, pg, name)
		if err != nil {
			return err
		}
		defer pool.Close()
		drv := riverpgxv5.New(pool)
		if err := riverMigrate(ctx, drv); err != nil {
			return err
		}
		client, err := river.NewClient(drv, &river.Config{Logger: quiet})
		if err != nil {
			return err
		}
		if err := riverInsertPending(ctx, client, true, w4Pending()); err != nil {
			return err
		}
		_, err = pool.Exec(ctx, "VACUUM ANALYZE river_job")
		return err
	})
	w4Loop(b, func() (func() error, error) {
		pool, err := pgxpool.New(ctx, pg.URL(name)+"&pool_max_conns=80")
		if err != nil {
			return nil, err
		}
		return riverRestart(riverpgxv5.New(pool), pool.Close)
	})
}

func w4Asynq(b *testing.B) {
	if _, err := servers.RedisBinary(); err != nil {
		b.Skipf("skipped: %v", err)
	}
	dir := w4Build(b, "asynq-everysec", func(dir string, n int) error {
		r, err := servers.StartRedis(dir, "everysec")
		if err != nil {
			return err
		}
		defer r.Stop()
		client := asynq.NewClient(asynq.RedisClientOpt{Addr: r.Addr})
		defer client.Close()
		pl := payload(Small)
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for i := range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range share(n, 64, i) {
					if _, err := client.Enqueue(asynq.NewTask("bench", pl)); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		return <-errs
	})
	w4Loop(b, func() (func() error, error) {
		r, err := servers.StartRedis(dir, "everysec")
		if err != nil {
			return nil, err
		}
		first := make(chan struct{})
		var once sync.Once
		opt := asynq.RedisClientOpt{Addr: r.Addr}
		srv := asynqServer(opt)
		mux := asynq.NewServeMux()
		mux.HandleFunc("bench", func(context.Context, *asynq.Task) error {
			once.Do(func() { close(first) })
			return nil
		})
		if err := srv.Start(mux); err != nil {
			r.Stop()
			return nil, err
		}
		select {
		case <-first:
		case <-time.After(time.Minute):
			srv.Shutdown()
			r.Stop()
			return nil, fmt.Errorf("no task handled a minute after the restart")
		}
		return func() error {
			srv.Shutdown()
			return r.Stop()
		}, nil
	})
}
