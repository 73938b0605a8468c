package ringwalotel_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/ringwalotel"
)

// crashDirEnv names the data directory of the child half of
// TestTraceCrossesAKilledEngine.
const crashDirEnv = "RINGWALOTEL_CRASH_DIR"

// The acceptance test: a message enqueued inside a producer span by a
// process that is then SIGKILLed is handled, after the directory is
// reopened, in a consumer span linked to the producer's trace. The trace
// context crossed the kill in the message's logged headers.
func TestTraceCrossesAKilledEngine(t *testing.T) {
	if dir := os.Getenv(crashDirEnv); dir != "" {
		produceThenHang(dir) // the child: never returns
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestTraceCrossesAKilledEngine$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})

	// The child enqueues (durable once Enqueue returns: the default
	// Write durability survives a killed process), reports, and waits
	// to be killed without closing its engine.
	var checkout, send string
	var id ringwal.ID
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "enqueued %d in %s %s", &id, &checkout, &send); err == nil {
			break
		}
	}
	require.NotZero(t, id, "the child reported no enqueue")
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	killed = true

	r := newRecorded(t)
	o := r.opts(ringwalotel.Link)
	e, err := ringwal.Open(dir, ringwal.Options{OnEnqueue: ringwalotel.OnEnqueue(o)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var inHandler trace.SpanContext
	handle := func(ctx context.Context, d ringwal.Delivery) error {
		inHandler = trace.SpanContextFromContext(ctx)
		cancel()
		return nil
	}
	require.NoError(t, e.Queue("orders").Run(ctx, 1, ringwal.Chain(handle, ringwalotel.Middleware(o))))

	ps := r.ended("process orders")
	require.Len(t, ps, 1)
	p := ps[0]
	assert.Equal(t, p.SpanContext(), inHandler)
	assert.Equal(t, fmt.Sprint(id), attrs(p)["messaging.message.id"].AsString())
	require.Len(t, p.Links(), 1, "the consumer span links to the producer's")
	link := p.Links()[0].SpanContext
	assert.Equal(t, checkout, link.TraceID().String(), "one trace: the producer's")
	assert.Equal(t, send, link.SpanID().String(), "the link names the send span")
}

// produceThenHang is the child: it enqueues a message for queue "orders"
// inside a "checkout" span, reports the message's ID, the trace's ID and
// the send span's ID, and hangs until killed.
func produceThenHang(dir string) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	o := ringwalotel.Options{TracerProvider: tp}
	e, err := ringwal.Open(dir, ringwal.Options{OnEnqueue: ringwalotel.OnEnqueue(o)})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(3)
	}
	ctx, span := tp.Tracer("shop").Start(context.Background(), "checkout")
	id, err := e.Enqueue(ctx, ringwal.Message{Queue: "orders", Payload: []byte("order 7")})
	if err != nil || len(rec.Ended()) != 1 {
		fmt.Println("enqueue:", err, len(rec.Ended()))
		os.Exit(3)
	}
	fmt.Printf("enqueued %d in %s %s\n", id, span.SpanContext().TraceID(), rec.Ended()[0].SpanContext().SpanID())
	time.Sleep(time.Hour) // killed here: no Close
}
