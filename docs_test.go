package ringwal_test

// Black-box checks of claims made by the root package's doc comments and
// README.md. Each test names the claim it pins down.

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
)

// prom (the collector): ringwal_backpressure_waits_total counts "enqueues that found
// no room (waited or got ErrFull)"; README: "enqueues that found their
// tier or the engine full". A TryEnqueue refused with ErrFull is one.
func TestDocsBackpressureCountsTryEnqueueErrFull(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{MaxMessages: 1})
	_, err := e.TryEnqueue(ringwal.Message{})
	require.NoError(t, err)
	_, err = e.TryEnqueue(ringwal.Message{})
	require.ErrorIs(t, err, ringwal.ErrFull)
	assert.Equal(t, uint64(1), e.Stats().BackpressureWaits,
		"a TryEnqueue refused with ErrFull found the engine full")
}

// DESIGN.md: Close returns nil the second time; every other method after
// Close returns ErrClosed (TryDequeue returns false).
func TestDocsEveryMethodAfterClose(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	id := enqueue(t, e, ringwal.Message{Payload: []byte("x")})
	d := dequeue(t, e)
	require.Equal(t, id, d.ID)
	require.NoError(t, e.Close())
	require.NoError(t, e.Close(), "second Close")

	_, err := e.Enqueue(ctxBG, ringwal.Message{})
	assert.ErrorIs(t, err, ringwal.ErrClosed, "Enqueue")
	_, err = e.TryEnqueue(ringwal.Message{})
	assert.ErrorIs(t, err, ringwal.ErrClosed, "TryEnqueue")
	_, err = e.EnqueueBatch(ctxBG, []ringwal.Message{{}})
	assert.ErrorIs(t, err, ringwal.ErrClosed, "EnqueueBatch")
	_, err = e.Dequeue(ctxBG)
	assert.ErrorIs(t, err, ringwal.ErrClosed, "Dequeue")
	_, err = e.DequeueBatch(ctxBG, 4)
	assert.ErrorIs(t, err, ringwal.ErrClosed, "DequeueBatch")
	_, ok := e.TryDequeue()
	assert.False(t, ok, "TryDequeue")
	assert.ErrorIs(t, e.Ack(d.Lease), ringwal.ErrClosed, "Ack")
	assert.ErrorIs(t, e.Nack(d.Lease, errors.New("x")), ringwal.ErrClosed, "Nack")
	assert.ErrorIs(t, e.Extend(d.Lease, time.Second), ringwal.ErrClosed, "Extend")
	_, err = e.Get(id)
	assert.ErrorIs(t, err, ringwal.ErrClosed, "Get")
	assert.ErrorIs(t, e.Requeue(id), ringwal.ErrClosed, "Requeue")
	_, err = e.DeadLetters(dlq.Query{})
	assert.ErrorIs(t, err, ringwal.ErrClosed, "DeadLetters")
	assert.ErrorIs(t, e.Redrive(id), ringwal.ErrClosed, "Redrive")
	assert.ErrorIs(t, e.MarkReviewed(id, ""), ringwal.ErrClosed, "MarkReviewed")
	_, err = e.PurgeDeadLetters(dlq.Query{})
	assert.ErrorIs(t, err, ringwal.ErrClosed, "PurgeDeadLetters")
	assert.ErrorIs(t, e.Checkpoint(), ringwal.ErrClosed, "Checkpoint")
	assert.ErrorIs(t, e.Run(ctxBG, 1, func(context.Context, ringwal.Delivery) error { return nil }),
		ringwal.ErrClosed, "Run")
	assert.Nil(t, e.Peek(10), "Peek")
	assert.NotPanics(t, func() { _ = e.Stats() }, "Stats")
}

// Enqueue and EnqueueBatch wait for room "until ctx ends"; Close ends the
// wait too, with ErrClosed (as it does a blocked Dequeue's, per DESIGN.md).
func TestDocsBlockedCallsEndWithClose(t *testing.T) {
	e, err := ringwal.Open("", ringwal.Options{MaxMessages: 1})
	require.NoError(t, err)
	defer e.Close()
	enqueue(t, e, ringwal.Message{})

	enq := make(chan error, 1)
	batch := make(chan error, 1)
	go func() { _, err := e.Enqueue(ctxBG, ringwal.Message{}); enq <- err }()
	go func() { _, err := e.EnqueueBatch(ctxBG, []ringwal.Message{{}}); batch <- err }()
	time.Sleep(quiet) // let both park
	require.NoError(t, e.Close())
	for name, ch := range map[string]chan error{"Enqueue": enq, "EnqueueBatch": batch} {
		select {
		case err := <-ch:
			assert.ErrorIs(t, err, ringwal.ErrClosed, name)
		case <-time.After(waitFor):
			t.Fatalf("%s still blocked after Close", name)
		}
	}

	// A Dequeue blocked on an empty engine, and DequeueBatch.
	e2, err := ringwal.Open("", ringwal.Options{})
	require.NoError(t, err)
	deq := make(chan error, 2)
	go func() { _, err := e2.Dequeue(ctxBG); deq <- err }()
	go func() { _, err := e2.DequeueBatch(ctxBG, 8); deq <- err }()
	time.Sleep(quiet)
	require.NoError(t, e2.Close())
	for i := 0; i < 2; i++ {
		select {
		case err := <-deq:
			assert.ErrorIs(t, err, ringwal.ErrClosed)
		case <-time.After(waitFor):
			t.Fatal("Dequeue still blocked after Close")
		}
	}
}

// DESIGN.md: Run returns nil when the engine closes, once its handlers
// have returned.
func TestDocsRunReturnsNilOnClose(t *testing.T) {
	e, err := ringwal.Open("", ringwal.Options{})
	require.NoError(t, err)
	ran := make(chan error, 1)
	go func() {
		ran <- e.Run(ctxBG, 2, func(context.Context, ringwal.Delivery) error { return nil })
	}()
	time.Sleep(quiet)
	require.NoError(t, e.Close())
	select {
	case err := <-ran:
		assert.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("Run did not return after Close")
	}
}

// Options.CloseGrace "how long Close lets Run handlers finish"; Close's
// own comment says it then waits up to one more CloseGrace for handlers
// whose context ended. A handler that ignores its ctx holds Close up for
// about twice CloseGrace, not once, and Run returns only when it returns.
func TestDocsCloseGraceTwice(t *testing.T) {
	const grace = 100 * time.Millisecond
	e, err := ringwal.Open("", ringwal.Options{CloseGrace: grace})
	require.NoError(t, err)
	release := make(chan struct{})
	started := make(chan struct{})
	ran := make(chan error, 1)
	go func() {
		ran <- e.Run(ctxBG, 1, func(context.Context, ringwal.Delivery) error {
			close(started)
			<-release // ignores its ctx
			return nil
		})
	}()
	enqueue(t, e, ringwal.Message{})
	<-started
	t0 := time.Now()
	require.NoError(t, e.Close())
	took := time.Since(t0)
	assert.GreaterOrEqual(t, took, 2*grace-10*time.Millisecond, "Close waits two graces for a handler ignoring its ctx")
	assert.Less(t, took, 2*grace+2*time.Second)
	select {
	case <-ran:
		t.Fatal("Run returned while its handler was still running")
	default:
	}
	close(release)
	select {
	case err := <-ran:
		assert.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("Run did not return once its handler did")
	}
}

// Info.EnqueuedAt "is when the message was first enqueued": a redrive
// restarts it (the TTL counts afresh from the redrive too), and a dead
// letter's Info does not carry it.
func TestDocsInfoEnqueuedAt(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{})
	t0 := fake.Now()
	id := enqueue(t, e, ringwal.Message{})
	d := dequeue(t, e)
	require.NoError(t, e.Nack(d.Lease, permanent("no")))
	info, err := e.Get(id)
	require.NoError(t, err)
	require.Equal(t, ringwal.Dead, info.State)
	assert.True(t, info.EnqueuedAt.IsZero(), "a dead letter's Info has no EnqueuedAt, got %v (enqueued %v)", info.EnqueuedAt, t0)
	assert.Equal(t, "no", info.LastError)
	assert.Equal(t, classify.Permanent, info.LastCategory)

	fake.Advance(time.Minute)
	require.NoError(t, e.Redrive(id))
	info, err = e.Get(id)
	require.NoError(t, err)
	assert.True(t, fake.Now().Equal(info.EnqueuedAt), "a redrive restarts EnqueuedAt: got %v, want %v", info.EnqueuedAt, fake.Now())
	assert.Equal(t, 0, info.Attempts, "a redrive resets the attempts")
}

// Requeue, Redrive and MarkReviewed of an ID in the wrong place: Requeue
// of a dead letter is ErrInvalid (use Redrive); Redrive and MarkReviewed
// of a live message are ErrNotFound (no such dead letter).
func TestDocsWrongPlaceErrors(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	live := enqueue(t, e, ringwal.Message{})
	assert.ErrorIs(t, e.Redrive(live), ringwal.ErrNotFound, "Redrive of a live message")
	assert.ErrorIs(t, e.MarkReviewed(live, "x"), ringwal.ErrNotFound, "MarkReviewed of a live message")
	assert.NoError(t, e.Requeue(live), "Requeue of a pending message leaves it")

	d := dequeue(t, e)
	require.NoError(t, e.Nack(d.Lease, permanent("no")))
	assert.ErrorIs(t, e.Requeue(live), ringwal.ErrInvalid, "Requeue of a dead letter")
	assert.ErrorIs(t, e.Requeue(12345), ringwal.ErrNotFound, "Requeue of an unknown ID")
}

// Handler: "ctx ends when the lease expires, when Run's ctx ends, or when
// Close's grace period ends" - and when the message is requeued.
func TestDocsHandlerCtxEndsOnRequeue(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	ctx, cancel := context.WithCancel(ctxBG)
	defer cancel()
	leased := make(chan ringwal.ID, 1)
	ended := make(chan struct{})
	ran := make(chan error, 1)
	go func() {
		ran <- e.Run(ctx, 1, func(hctx context.Context, d ringwal.Delivery) error {
			if d.Attempt > 1 {
				return nil
			}
			leased <- d.ID
			select {
			case <-hctx.Done():
				close(ended)
			case <-time.After(waitFor):
			}
			return nil
		})
	}()
	enqueue(t, e, ringwal.Message{})
	id := <-leased
	require.NoError(t, e.Requeue(id))
	select {
	case <-ended:
	case <-time.After(waitFor):
		t.Error("the handler's ctx did not end when its message was requeued")
	}
	cancel()
	require.NoError(t, <-ran)
}

// Options bounds that Open enforces with ErrInvalid.
func TestDocsOptionsBounds(t *testing.T) {
	for name, o := range map[string]ringwal.Options{
		"MaxMessages above 1<<25":  {MaxMessages: 1<<25 + 1},
		"TierCapacity above 1<<25": {TierCapacity: 1<<25 + 1},
		"negative DeadlineSlack":   {DeadlineSlack: -1},
		"negative LeaseTimeout":    {LeaseTimeout: -1},
		"negative FlushInterval":   {FlushInterval: -1},
		"negative CloseGrace":      {CloseGrace: -1},
		"negative weight":          {Weights: [5]int{-1}},
		"unknown Durability":       {Durability: ringwal.Buffered + 1},
	} {
		_, err := ringwal.Open("", o)
		assert.ErrorIs(t, err, ringwal.ErrInvalid, name)
	}
	// Negative AgingAfter, DedupWindow, CheckpointBytes and
	// DeadLetterRetention are meaningful (off / forever).
	e, err := ringwal.Open("", ringwal.Options{AgingAfter: -1, DedupWindow: -1, CheckpointBytes: -1, DeadLetterRetention: -1})
	require.NoError(t, err)
	require.NoError(t, e.Close())
}

// Options.Weights: "Zero = 16, 8, 4, 2, 1" means all zero; a single zero
// weight among others is served as weight 1, not never.
func TestDocsZeroWeightIsOne(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{Weights: [5]int{1, 0, 0, 0, 0}, AgingAfter: -1})
	enqueueP(t, e, ringwal.Critical, "c1")
	enqueueP(t, e, ringwal.Critical, "c2")
	enqueueP(t, e, ringwal.Background, "b1")
	enqueueP(t, e, ringwal.Background, "b2")
	var got []string
	for _, info := range e.Peek(4) {
		got = append(got, string(info.Message.Payload))
	}
	assert.Equal(t, []string{"c1", "b1", "c2", "b2"}, got)
}

// Options.TierCapacity: a tier's ring holds min(TierCapacity, MaxMessages)
// slots, rounded up to a power of two.
func TestDocsTierCapacityCappedByMaxMessages(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{TierCapacity: 1000, MaxMessages: 10})
	enqueue(t, e, ringwal.Message{})
	assert.Equal(t, 1.0/16, e.Stats().TierUtilization[2], "Normal's ring has 16 slots")
}

// Stats.Wait and Stats.Handling are sampled: one message in 64 (by ID) is
// measured, so Count is not the number of deliveries.
func TestDocsLatencyIsSampled(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	for i := 0; i < 10; i++ { // IDs 1..10: none is a multiple of 64
		enqueue(t, e, ringwal.Message{})
		require.NoError(t, e.Ack(dequeue(t, e).Lease))
	}
	s := e.Stats()
	assert.Equal(t, uint64(10), s.Acked)
	assert.Zero(t, s.Handling.Count, "Handling is measured for one message in 64")
	assert.Zero(t, s.Wait.Count, "Wait is measured for one message in 64")
}

// Nack with a nil cause records "nack without a cause" as Unknown.
func TestDocsNackNilCause(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	id := enqueue(t, e, ringwal.Message{})
	require.NoError(t, e.Nack(dequeue(t, e).Lease, nil))
	info, err := e.Get(id)
	require.NoError(t, err)
	assert.Equal(t, classify.Unknown, info.LastCategory)
	assert.Equal(t, "nack without a cause", info.LastError)
}

// Stats: "Lifetime totals since Open": messages Open recovers are live
// but were not enqueued since Open.
func TestDocsStatsTotalsSinceOpen(t *testing.T) {
	dir := t.TempDir()
	e, err := ringwal.Open(dir, ringwal.Options{})
	require.NoError(t, err)
	enqueue(t, e, ringwal.Message{})
	enqueue(t, e, ringwal.Message{})
	require.NoError(t, e.Close())

	e = open(t, dir, ringwal.Options{})
	s := e.Stats()
	assert.Equal(t, 2, s.Pending)
	assert.Zero(t, s.Enqueued, "recovered messages are not enqueued since Open")
}

// Checks that keep README.md, ARCHITECTURE.md and bench/README.md true to
// the code they describe: the metrics table, the Go version, the install
// lines, the files they name, the restart figures the benchmark findings
// quote. (The commands in README code blocks are checked by cmd/ringwal's
// TestDocsReadmeCommandsExist, which can run the CLI in-process.)

// readDoc returns a repository file's text.
func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// section returns the text of the markdown section whose heading line is
// heading, up to the next heading of the same or a higher level.
func section(t *testing.T, doc, heading string) string {
	t.Helper()
	i := strings.Index(doc, "\n"+heading+"\n")
	require.GreaterOrEqual(t, i, 0, "no section %q", heading)
	rest := doc[i+len(heading)+2:]
	level := strings.Repeat("#", strings.Count(strings.Fields(heading)[0], "#"))
	for _, l := range []string{"\n" + level + " ", "\n" + level[:max(1, len(level)-1)] + " "} {
		if j := strings.Index(rest, l); j >= 0 {
			rest = rest[:j]
		}
	}
	return rest
}

// goModLine returns the value of the go.mod directive named directive
// ("module", "go").
func goModLine(t *testing.T, directive string) string {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(readDoc(t, "go.mod")))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == directive {
			return f[1]
		}
	}
	t.Fatalf("go.mod has no %s line", directive)
	return ""
}

// README: "It needs Go X or newer (the go line of go.mod)", and its install
// lines name the module go.mod declares.
func TestDocsReadmeGoVersionAndInstall(t *testing.T) {
	readme := readDoc(t, "README.md")
	goLine := goModLine(t, "go") // 1.26.0
	parts := strings.SplitN(goLine, ".", 3)
	require.GreaterOrEqual(t, len(parts), 2, "go line %q", goLine)
	want := parts[0] + "." + parts[1]
	m := regexp.MustCompile(`needs Go (\d+\.\d+(?:\.\d+)?) or newer`).FindAllStringSubmatch(readme, -1)
	require.Len(t, m, 1, "the README states the Go version it needs once")
	assert.Equal(t, want, m[0][1], "the README's Go version is go.mod's go line (%s)", goLine)

	// The first two commands stay the front door; then the install lines,
	// before the first section.
	first := regexp.MustCompile("(?s)^# ringwal\n\n```sh\n(.*?)```").FindStringSubmatch(readme)
	require.NotNil(t, first, "the README opens with a sh code block")
	assert.Equal(t, "go run ./cmd/ringwal demo\ngo test -race work\n", first[1])
	top := readme[:strings.Index(readme, "\n## ")]
	module := goModLine(t, "module")
	assert.Contains(t, top, "go get "+module+"\n", "a go get line near the top")
	assert.Contains(t, top, `import "`+module+`"`, "the import path near the top")
}

// fileRefRE matches what reads as a repository path in prose or code: a
// name with an extension the repository's files have, optionally with
// directories. URLs are removed before it is applied.
var fileRefRE = regexp.MustCompile(`(?:\.{0,2}/)?[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*\.(?:go|md|png|svg|sh|mod|txt|json)\b`)

// README.md and ARCHITECTURE.md name no file the repository does not
// have: a path is looked up from the repository root (one leading out of
// it, ../, is missing from every clone), and a bare file name
// (ARCHITECTURE.md names each package's files without their directory) is
// found anywhere in the repository.
func TestDocsNameOnlyFilesThatExist(t *testing.T) {
	names := map[string]bool{}
	require.NoError(t, filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		names[d.Name()] = true
		return nil
	}))
	urlRE := regexp.MustCompile(`https?://\S+`)
	for _, doc := range []string{"README.md", "ARCHITECTURE.md"} {
		text := urlRE.ReplaceAllString(readDoc(t, doc), "")
		var missing []string
		for _, ref := range fileRefRE.FindAllString(text, -1) {
			if strings.HasPrefix(ref, "../") { // outside the repository: a clone does not have it
				missing = append(missing, ref)
				continue
			}
			if strings.Contains(ref, "/") || strings.HasPrefix(ref, ".") {
				if _, err := os.Stat(filepath.Join(filepath.Dir(doc), ref)); err != nil {
					missing = append(missing, ref)
				}
				continue
			}
			if !names[ref] {
				missing = append(missing, ref)
			}
		}
		slices.Sort(missing)
		assert.Empty(t, slices.Compact(missing), "%s names files the repository does not have", doc)
	}
}

// bench/README.md's findings quote the restart figures of the table they
// stand beside (bench/results/results.md, W4), not older ones.
func TestDocsBenchFindingsQuoteTheRestartTable(t *testing.T) {
	results := readDoc(t, filepath.Join("bench", "results", "results.md"))
	w4 := section(t, results, "## W4 — restart: open → first delivery with a backlog")
	row := regexp.MustCompile(`(?m)^\| pending 1000000 \|(.*)\|$`).FindStringSubmatch(w4)
	require.NotNil(t, row, "results.md's W4 row for 10^6 pending")
	cellRE := regexp.MustCompile(`[0-9.]+ ms`)
	var cells []string
	for _, c := range strings.Split(row[1], "|") {
		cells = append(cells, cellRE.FindString(c))
	}
	require.NotEmpty(t, cells[0], "ringwal's own W4 figure")

	readme := readDoc(t, filepath.Join("bench", "README.md"))
	findings := readme[strings.Index(readme, "\n## Findings"):]
	i := strings.Index(findings, "**W4")
	require.GreaterOrEqual(t, i, 0, "the findings have a W4 paragraph")
	w4Finding := findings[i:]
	if j := strings.Index(w4Finding, "\n\n"); j >= 0 {
		w4Finding = w4Finding[:j]
	}
	w4Finding = strings.Join(strings.Fields(w4Finding), " ")
	assert.Contains(t, w4Finding, cells[0], "the W4 finding quotes ringwal's figure, %s", cells[0])
	for _, f := range cellRE.FindAllString(w4Finding, -1) {
		assert.Contains(t, cells, f, "the W4 finding quotes %s, which the table does not have", f)
	}
}

// README's first example and Options.Strict: the default order is
// weighted, so a low tier still moves while a higher one has a backlog;
// Strict: true is the one switch to strict priority order.
func TestDocsDefaultOrderIsWeightedStrictIsOneSwitch(t *testing.T) {
	order := func(o ringwal.Options) int {
		e, _ := memEngine(t, o)
		for i := 0; i < 30; i++ {
			enqueueP(t, e, ringwal.Critical, "c")
		}
		enqueueP(t, e, ringwal.Background, "b")
		for i := 0; i < 31; i++ {
			d := dequeue(t, e)
			require.NoError(t, e.Ack(d.Lease))
			if string(d.Message.Payload) == "b" {
				return i
			}
		}
		t.Fatal("the background message was not delivered")
		return -1
	}
	assert.Less(t, order(ringwal.Options{}), 30, "by default the background message goes out before the critical backlog is drained")
	assert.Equal(t, 30, order(ringwal.Options{Strict: true}), "Strict: true drains the critical tier first")
}
