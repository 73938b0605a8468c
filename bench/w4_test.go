package bench

// W4: restart. A store holding w4Pending() pending 128-byte messages is
// built once per process (not timed); each iteration then times open to
// first delivery: opening the store the way the peer opens it after a
// restart and taking one message. The message is then acked, and the
// store closed, outside the timer. ns/op is the time to first delivery;
// ms-to-first says the same in milliseconds.
//
//	BenchmarkW4/ringwal/<n>       Buffered mode, TierCapacity 1<<20, MaxMessages 1<<21: Open + first TryDequeue
//	BenchmarkW4/ringwal-checkpoint/<n>  the same, the backlog in a snapshot (Checkpoint before the build's Close)
//	BenchmarkW4/sqlite-seed/<n>   the seed queue: open (pragmas, schema) + first Dequeue transaction
//	BenchmarkW4/jetstream/<n>     embedded server restart (JetStream recovers the stream), connect, bind the
//	                              durable consumer, fetch the first message
//
// n is 1,000,000 for every peer, or 10,000 with -short (so CI's run of
// every benchmark stays well within its budget).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/bench/internal/natsjs"
	"github.com/ringwal/ringwal/bench/internal/seedq"
)

// w4Pending is the backlog W4 restarts with.
func w4Pending() int {
	if testing.Short() {
		return 10_000
	}
	return 1_000_000
}

func TestMain(m *testing.M) {
	code := m.Run()
	if pgServer != nil {
		if err := pgServer.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	w4Dirs.Range(func(_, v any) bool {
		os.RemoveAll(v.(*w4Store).dir)
		return true
	})
	os.Exit(code)
}

// w4Store is a peer's store, built once per process.
type w4Store struct {
	once sync.Once
	dir  string
	err  error
}

var w4Dirs sync.Map // peer name -> *w4Store

func w4Build(b *testing.B, peer string, build func(dir string, n int) error) string {
	v, _ := w4Dirs.LoadOrStore(peer, &w4Store{})
	st := v.(*w4Store)
	st.once.Do(func() {
		st.dir, st.err = os.MkdirTemp("", "ringwal-bench-w4-"+peer+"-")
		if st.err != nil {
			return
		}
		start := time.Now()
		st.err = build(st.dir, w4Pending())
		b.Logf("%s: built a store of %d pending messages in %v", peer, w4Pending(), time.Since(start).Round(time.Millisecond))
	})
	if st.err != nil {
		b.Fatalf("%s setup: %v", peer, st.err)
	}
	return st.dir
}

func BenchmarkW4(b *testing.B) {
	peers := []struct {
		name string
		fn   func(*testing.B)
	}{
		{"ringwal", func(b *testing.B) { w4Ringwal(b, false, 0) }},
		{"ringwal-checkpoint", func(b *testing.B) { w4Ringwal(b, true, 0) }},
		{"ringwal-16queues", func(b *testing.B) { w4Ringwal(b, false, 16) }},
		{"ringwal-16queues-checkpoint", func(b *testing.B) { w4Ringwal(b, true, 16) }},
		{"sqlite-seed", w4Seed},
		{"jetstream", w4JetStream},
		{"river-sqlite", w4RiverSQLite},
		{"river-postgres", w4RiverPostgres},
		{"asynq-everysec", w4Asynq},
	}
	for _, p := range peers {
		b.Run(fmt.Sprintf("%s/%d", p.name, w4Pending()), p.fn)
	}
}

// w4Loop runs b.N timed restarts: open returns the first delivery's
// settle-and-close function.
func w4Loop(b *testing.B, open func() (finish func() error, err error)) {
	b.StopTimer()
	b.ResetTimer()
	for range b.N {
		runtime.GC() // the previous iteration's garbage is not this one's cost
		b.StartTimer()
		finish, err := open()
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		if err := finish(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed())/1e6/float64(b.N), "ms-to-first")
}

func w4RingwalOptions() ringwal.Options {
	return ringwal.Options{Durability: ringwal.Buffered, TierCapacity: 1 << 20, MaxMessages: 1 << 21}
}

// w4Ringwal times ringwal's restart; with checkpoint, from a store whose
// backlog is in a snapshot (a checkpoint taken before the Close that ends
// the build), as an engine that has run long enough to pass
// CheckpointBytes restarts. With queues > 0 the backlog is spread over
// that many named queues (message i in queue i%queues), and the first
// delivery is taken from whichever queue has one.
func w4Ringwal(b *testing.B, checkpoint bool, queues int) {
	name := "ringwal"
	if queues > 0 {
		name = fmt.Sprintf("ringwal-%dqueues", queues)
	}
	if checkpoint {
		name += "-checkpoint"
	}
	names := []string{""}
	if queues > 0 {
		names = make([]string, queues)
		for i := range names {
			names[i] = fmt.Sprintf("q%02d", i)
		}
	}
	dir := w4Build(b, name, func(dir string, n int) error {
		e, err := ringwal.Open(dir, w4RingwalOptions())
		if err != nil {
			return err
		}
		pl := payload(Small)
		batch := make([]ringwal.Message, 1000)
		for i := range batch {
			batch[i] = ringwal.Message{Payload: pl, Queue: names[i%len(names)]}
		}
		for left := n; left > 0; left -= len(batch) {
			if _, err := e.EnqueueBatch(context.Background(), batch[:min(left, len(batch))]); err != nil {
				e.Close()
				return err
			}
		}
		if got := e.Stats().Pending; got != n {
			e.Close()
			return fmt.Errorf("%d pending after setup, want %d", got, n)
		}
		if checkpoint {
			if err := e.Checkpoint(); err != nil {
				e.Close()
				return err
			}
		}
		return e.Close()
	})
	w4Loop(b, func() (func() error, error) {
		e, err := ringwal.Open(dir, w4RingwalOptions())
		if err != nil {
			return nil, err
		}
		deadline := time.Now().Add(time.Minute)
		for i := 0; ; i++ {
			if d, ok := e.Queue(names[i%len(names)]).TryDequeue(); ok {
				return func() error {
					if err := e.Ack(d.Lease); err != nil {
						return err
					}
					return e.Close()
				}, nil
			}
			if time.Now().After(deadline) {
				e.Close()
				return nil, fmt.Errorf("no delivery a minute after Open (pending %d)", e.Stats().Pending)
			}
		}
	})
}

func w4Seed(b *testing.B) {
	ctx := context.Background()
	cfg := func(dir string) seedq.Config {
		return seedq.Config{DBPath: filepath.Join(dir, "queue.db"), Platform: "slack"}
	}
	dir := w4Build(b, "sqlite-seed", func(dir string, n int) error {
		q, err := seedq.Open(ctx, cfg(dir))
		if err != nil {
			return err
		}
		content := string(payload(Small))
		batch := make([]seedq.Message, 10_000)
		for i := range batch {
			batch[i] = seedq.Message{TargetRoom: "!room:example.org", TargetChannel: "C0123456", Type: "text", Content: content}
		}
		for left := n; left > 0; left -= len(batch) {
			if err := q.EnqueueBatch(ctx, batch[:min(left, len(batch))]); err != nil {
				q.Close()
				return err
			}
		}
		return q.Close()
	})
	w4Loop(b, func() (func() error, error) {
		q, err := seedq.Open(ctx, cfg(dir))
		if err != nil {
			return nil, err
		}
		m, ok, err := q.Dequeue(ctx)
		if err != nil || !ok {
			q.Close()
			return nil, fmt.Errorf("first dequeue: ok=%v err=%v", ok, err)
		}
		return func() error {
			if err := q.Ack(ctx, m.ID); err != nil {
				return err
			}
			return q.Close()
		}, nil
	})
}

func w4JetStream(b *testing.B) {
	ctx := context.Background()
	dir := w4Build(b, "jetstream", func(dir string, n int) error {
		ns, err := natsjs.Start(dir)
		if err != nil {
			return err
		}
		defer natsjs.Stop(ns)
		nc, js, err := natsjs.Connect(ns, jetstream.WithPublishAsyncMaxPending(4096))
		if err != nil {
			return err
		}
		defer nc.Close()
		if _, err := natsjs.Setup(ctx, js); err != nil {
			return err
		}
		pl := payload(Small)
		// On a loaded machine the server can fall behind the 4096
		// outstanding publishes for longer than the client's default stall
		// wait (200 ms), which then fails the setup; wait as long as it takes.
		stall := jetstream.WithStallWait(time.Minute)
		for range n {
			if _, err := js.PublishAsync(natsjs.Subject, pl, stall); err != nil {
				return err
			}
		}
		select {
		case <-js.PublishAsyncComplete():
		case <-time.After(5 * time.Minute):
			return fmt.Errorf("publishing %d messages took over 5 minutes", n)
		}
		s, err := js.Stream(ctx, natsjs.Stream)
		if err != nil {
			return err
		}
		info, err := s.Info(ctx)
		if err != nil {
			return err
		}
		if info.State.Msgs != uint64(n) {
			return fmt.Errorf("stream holds %d messages, want %d", info.State.Msgs, n)
		}
		return nil
	})
	w4Loop(b, func() (func() error, error) {
		ns, err := natsjs.Start(dir)
		if err != nil {
			return nil, err
		}
		fail := func(err error) (func() error, error) { natsjs.Stop(ns); return nil, err }
		nc, js, err := natsjs.Connect(ns)
		if err != nil {
			return fail(err)
		}
		cons, err := js.Consumer(ctx, natsjs.Stream, natsjs.Consumer)
		if err != nil {
			nc.Close()
			return fail(err)
		}
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(time.Minute))
		if err != nil {
			nc.Close()
			return fail(err)
		}
		m, ok := <-batch.Messages()
		if !ok {
			nc.Close()
			return fail(fmt.Errorf("no message: %v", batch.Error()))
		}
		return func() error {
			defer natsjs.Stop(ns)
			defer nc.Close()
			return m.DoubleAck(ctx)
		}, nil
	})
}
