// Package natsjs runs an embedded NATS server with JetStream for the
// benchmarks: file storage in a directory the caller owns, listening on
// 127.0.0.1 at a random port, and one work-queue stream with one durable
// pull consumer with explicit acks.
//
// Durability: by default (Start) a one-replica file stream writes each
// message to its block file (write(2)) before it sends the PubAck ("flush
// in place"), and fsyncs every SyncInterval (2 minutes by default). That is
// ringwal's Write mode: a killed process loses nothing acknowledged, a
// power loss may. StartSyncAlways sets the server's sync_always option
// (Options.SyncAlways): the store files are opened O_SYNC, so every write,
// the message's before its PubAck and the ack's removal alike, is on disk
// when it returns. That is ringwal's Fsync mode.
package natsjs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Names of the stream, its subject and its consumer.
const (
	Stream   = "W"
	Subject  = "w"
	Consumer = "workers"
)

// Start starts a server with JetStream storing in dir and waits until it
// accepts connections.
func Start(dir string) (*server.Server, error) { return start(dir, false) }

// StartSyncAlways is Start with sync_always: every store write is synced.
func StartSyncAlways(dir string) (*server.Server, error) { return start(dir, true) }

func start(dir string, syncAlways bool) (*server.Server, error) {
	opts := &server.Options{
		Host:       "127.0.0.1",
		Port:       server.RANDOM_PORT,
		JetStream:  true,
		StoreDir:   dir,
		SyncAlways: syncAlways,
		NoLog:      true,
		NoSigs:     true,
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, err
	}
	// Start does not block: it enables JetStream (recovering its streams)
	// and opens the client listener, then returns, leaving the server
	// running in its own goroutines. Called directly (not "go ns.Start()"),
	// ReadyForConnections below succeeds at its first check instead of
	// polling every 25 ms, which would add up to 25 ms to W4's timed
	// restart.
	ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		ns.Shutdown()
		return nil, errors.New("nats server not ready after 30s")
	}
	if !ns.JetStreamEnabled() {
		ns.Shutdown()
		return nil, errors.New("jetstream not enabled")
	}
	return ns, nil
}

// Stop shuts the server down and waits for it.
func Stop(ns *server.Server) {
	ns.Shutdown()
	ns.WaitForShutdown()
}

// Connect opens a client connection to ns.
func Connect(ns *server.Server, opts ...jetstream.JetStreamOpt) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := nats.Connect(ns.ClientURL(), nats.MaxReconnects(0))
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc, opts...)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

// Setup creates the work-queue stream (file storage, one replica) and its
// durable pull consumer (explicit ack).
func Setup(ctx context.Context, js jetstream.JetStream) (jetstream.Consumer, error) {
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:      Stream,
		Subjects:  []string{Subject},
		Retention: jetstream.WorkQueuePolicy,
		Storage:   jetstream.FileStorage,
		Replicas:  1,
	})
	if err != nil {
		return nil, fmt.Errorf("create stream: %w", err)
	}
	c, err := js.CreateOrUpdateConsumer(ctx, Stream, jetstream.ConsumerConfig{
		Durable:       Consumer,
		AckPolicy:     jetstream.AckExplicitPolicy,
		MaxAckPending: 1 << 16,
		AckWait:       time.Minute,
	})
	if err != nil {
		return nil, fmt.Errorf("create consumer: %w", err)
	}
	return c, nil
}
