package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ringwal/ringwal"
)

// The crash act: a child process (this binary, `ringwal demo-child`)
// enqueues and acks in Write mode and reports on its standard output, one
// line per event, only after the engine call returned:
//
//	E <id> <payload>   Enqueue returned: the message is acknowledged
//	D <id>             dequeued; an Ack is about to be in flight
//	A <id>             Ack returned: the message is gone for good
//	X <text>           the child failed
//
// The parent kills it with SIGKILL mid-stream, reopens the directory and
// checks every reported ID against what recovery rebuilt.

// newDemoChildCmd builds the hidden child half of the crash act.
func newDemoChildCmd() *cobra.Command {
	var dir string
	var lifetime time.Duration
	cmd := &cobra.Command{
		Use:    "demo-child --dir DIR",
		Short:  "The crash act's child process (run by demo; it waits for its SIGKILL)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return usagef("--dir is required")
			}
			return runChild(cmd.Context(), dir, lifetime, cmd.OutOrStdout())
		}),
	}
	cmd.Flags().StringVar(&dir, "dir", "", "data directory")
	cmd.Flags().DurationVar(&lifetime, "lifetime", time.Minute, "exit by itself after this long (if nobody kills it)")
	return cmd
}

// runChild enqueues with two producers and acks with one consumer, so a
// backlog builds up, reporting each call once it returned. Each report is
// one write(2) of less than PIPE_BUF bytes, so lines never interleave.
func runChild(ctx context.Context, dir string, lifetime time.Duration, out io.Writer) error {
	e, err := ringwal.Open(dir, ringwal.Options{Durability: ringwal.Write})
	if err != nil {
		fmt.Fprintf(out, "X open: %v\n", err)
		return fmt.Errorf("opening %s: %w", dir, err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(ctx, lifetime)
	defer cancel()
	var wg sync.WaitGroup
	fail := func(format string, args ...any) {
		fmt.Fprintf(out, "X "+format+"\n", args...)
		cancel()
	}
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), uint64(time.Now().UnixNano())))
			for seq := 1; ctx.Err() == nil; seq++ {
				payload := fmt.Sprintf("c%d-%d", g, seq)
				id, err := e.Enqueue(ctx, ringwal.Message{
					Key: "crash", Priority: ringwal.Priority(rng.IntN(5) - 2), Payload: []byte(payload),
				})
				if err != nil {
					if ctx.Err() == nil {
						fail("enqueue: %v", err)
					}
					return
				}
				if _, err := fmt.Fprintf(out, "E %d %s\n", id, payload); err != nil {
					cancel() // the parent is gone
					return
				}
				if seq%8 == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 1; ; n++ {
			d, err := e.Dequeue(ctx)
			if err != nil {
				return
			}
			fmt.Fprintf(out, "D %d\n", d.ID)
			if err := e.Ack(d.Lease); err != nil {
				fail("ack %d: %v", d.ID, err)
				return
			}
			fmt.Fprintf(out, "A %d\n", d.ID)
			if n%4 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
	}()
	wg.Wait()
	return nil
}

// crashAct is the parent half: run the child, kill it, check recovery.
type crashAct struct {
	dir      string
	duration time.Duration
	out      io.Writer

	mu       sync.Mutex
	enqueued map[ringwal.ID]string // reported enqueues: ID -> payload
	dequeued map[ringwal.ID]bool   // reported dequeues (ack in flight until A)
	acked    map[ringwal.ID]bool   // reported acks
	problems []string              // X lines and malformed lines
}

// crashResult is the outcome of the crash act.
type crashResult struct {
	pid         int
	killedAfter time.Duration
	enqueued    int // reported enqueues
	acked       int // reported acks
	owed        int // reported enqueued, not dequeued: must be present
	lost        []ringwal.ID
	badPayload  []ringwal.ID
	resurrected []ringwal.ID // reported acked, present again
	inFlight    int          // dequeued, ack not reported: either outcome is correct
	inFlightUp  int          // of those, present
	unreported  int          // present but never reported (enqueue in flight at the kill)
	recovery    ringwal.RecoveryStats
	problems    []string
	held        bool
}

// newCrashAct prepares the act over dir, of length d, printing to out.
func newCrashAct(dir string, d time.Duration, out io.Writer) *crashAct {
	return &crashAct{
		dir: dir, duration: d, out: out,
		enqueued: map[ringwal.ID]string{}, dequeued: map[ringwal.ID]bool{}, acked: map[ringwal.ID]bool{},
	}
}

// run plays the act. An error means the act could not be played; a
// recovery check that failed is reported in the result (held false).
func (c *crashAct) run(ctx context.Context) (res crashResult, err error) {
	self, err := os.Executable()
	if err != nil {
		return res, fmt.Errorf("finding this program to re-run it as the child: %w", err)
	}
	cmd := exec.Command(self, "demo-child", "--dir", c.dir)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return res, fmt.Errorf("child pipe: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("starting the child: %w", err)
	}
	res.pid = cmd.Process.Pid
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	first := make(chan struct{})
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		c.read(stdout, first)
	}()

	b := newBoard(c.out, "crash act", c.duration, 2, max(time.Second/2, c.duration/6))
	b.event(fmt.Sprintf("child pid %d: %s demo-child --dir %s (Write durability)", res.pid, self, c.dir))
	select {
	case <-first:
	case <-readDone:
		return res, fmt.Errorf("the child exited before enqueuing anything: %s", strings.Join(c.problems, "; "))
	case <-time.After(15 * time.Second):
		return res, errors.New("the child did not start enqueuing within 15s")
	case <-ctx.Done():
		return res, ctx.Err()
	}
	// Kill at a random moment 60% to 80% into the act (counted from the
	// child's start, and at least 100ms after its first report), leaving
	// the rest for recovery: the child never pauses, so the kill lands
	// mid-stream.
	killAt := c.duration*60/100 + time.Duration(rand.Int64N(int64(c.duration/5)+1))
	killAt = max(killAt-b.elapsed(), 100*time.Millisecond)
	started := time.Now()
	kill := time.NewTimer(killAt)
	defer kill.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case <-kill.C:
			break wait
		case <-readDone:
			return res, fmt.Errorf("the child exited before the kill: %s", strings.Join(c.problems, "; "))
		case <-ctx.Done():
			return res, ctx.Err()
		case <-tick.C:
			b.set(c.lines(res.pid, killAt-time.Since(started)), c.compact(res.pid))
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return res, fmt.Errorf("killing the child: %w", err)
	}
	killed = true
	res.killedAfter = b.elapsed() // since the child started
	<-readDone                    // every line the child wrote before it died
	werr := cmd.Wait()
	b.event(fmt.Sprintf("SIGKILL sent to pid %d, %s after it started; child ended: %v", res.pid, dur(res.killedAfter), werr))

	if err := c.check(&res); err != nil {
		return res, err
	}
	b.event(fmt.Sprintf("reopened %s: replayed %s records (%s) in %s; torn tail cut: %s; %d leased at the kill came back pending",
		c.dir, count(res.recovery.Records), bytesize(res.recovery.Bytes), dur(res.recovery.Duration),
		bytesize(res.recovery.TornBytes), res.recovery.Crashed))
	b.finish(c.lines(res.pid, 0), "")
	return res, nil
}

// read parses the child's reports until its pipe closes.
func (c *crashAct) read(r io.Reader, first chan<- struct{}) {
	sc := bufio.NewScanner(r)
	var once sync.Once
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		c.mu.Lock()
		if len(f) >= 2 && f[0] == "X" {
			c.problems = append(c.problems, line[2:])
			c.mu.Unlock()
			continue
		}
		var id uint64
		var err error
		if len(f) >= 2 {
			id, err = strconv.ParseUint(f[1], 10, 64)
		}
		switch {
		case len(f) < 2 || err != nil:
			c.problems = append(c.problems, "malformed report: "+line)
		case f[0] == "E" && len(f) == 3:
			c.enqueued[id] = f[2]
			once.Do(func() { close(first) })
		case f[0] == "D":
			c.dequeued[id] = true
		case f[0] == "A":
			c.acked[id] = true
		default:
			c.problems = append(c.problems, "malformed report: "+line)
		}
		c.mu.Unlock()
	}
}

// lines are the board's lines while the child runs.
func (c *crashAct) lines(pid int, killIn time.Duration) []string {
	c.mu.Lock()
	e, a := len(c.enqueued), len(c.acked)
	c.mu.Unlock()
	next := "killed and reopened: the check follows"
	if killIn > 0 {
		next = fmt.Sprintf("SIGKILL in %s, then reopen and check every reported ID", dur(killIn.Round(10*time.Millisecond)))
	}
	return []string{
		fmt.Sprintf("  child     pid %d · enqueues acknowledged %s · acks acknowledged %s · backlog %s",
			pid, count(e), count(a), count(max(0, e-a))),
		"  next      " + next,
	}
}

// compact is the plain-mode line while the child runs.
func (c *crashAct) compact(pid int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("child pid %d: enqueues acknowledged %s, acks acknowledged %s",
		pid, count(len(c.enqueued)), count(len(c.acked)))
}

// check reopens the directory and compares every reported ID with what
// recovery rebuilt:
//   - reported enqueued, never dequeued: must be present, payload intact;
//   - reported acked: must be absent;
//   - dequeued but the ack not reported: the ack was in flight at the
//     kill, so present (pending again) and absent are both correct;
//   - present but never reported: the enqueue was in flight; allowed.
func (c *crashAct) check(res *crashResult) (err error) {
	e, err := ringwal.Open(c.dir, ringwal.Options{Durability: ringwal.Write})
	if err != nil {
		return fmt.Errorf("reopening %s after the kill: %w", c.dir, err)
	}
	defer closeEngine(e, &err)
	c.mu.Lock()
	defer c.mu.Unlock()
	s := e.Stats()
	res.recovery = s.Recovery
	res.enqueued, res.acked, res.problems = len(c.enqueued), len(c.acked), c.problems
	presentReported := 0
	for id, payload := range c.enqueued {
		if c.acked[id] {
			continue
		}
		info, err := e.Get(id)
		found := err == nil
		if err != nil && !errors.Is(err, ringwal.ErrNotFound) {
			return fmt.Errorf("get %d: %w", id, err)
		}
		if found {
			presentReported++
		}
		if c.dequeued[id] {
			res.inFlight++
			if found {
				res.inFlightUp++
			}
			continue
		}
		res.owed++
		switch {
		case !found:
			res.lost = append(res.lost, id)
		case string(info.Message.Payload) != payload:
			res.badPayload = append(res.badPayload, id)
		}
	}
	for id := range c.acked {
		_, err := e.Get(id)
		switch {
		case err == nil:
			res.resurrected = append(res.resurrected, id)
		case !errors.Is(err, ringwal.ErrNotFound):
			return fmt.Errorf("get %d: %w", id, err)
		}
	}
	live := s.Pending + s.Delayed + s.Leased + s.Held + s.Dead
	res.unreported = max(0, live-presentReported)
	res.held = len(res.lost) == 0 && len(res.badPayload) == 0 && len(res.resurrected) == 0 &&
		len(res.problems) == 0 && res.enqueued > 0
	return nil
}

// printCheck writes the recovery check's verdict.
func (r crashResult) printCheck(w io.Writer) {
	mark := func(ok bool) string {
		if ok {
			return "ok  "
		}
		return "FAIL"
	}
	fmt.Fprintln(w, "\nrecovery check (every ID the child reported, looked up with Get in the reopened engine):")
	fmt.Fprintf(w, "  [%s] %s enqueued and acknowledged, not yet dequeued: %s present, payload intact\n",
		mark(len(r.lost) == 0 && len(r.badPayload) == 0), count(r.owed), count(r.owed-len(r.lost)-len(r.badPayload)))
	if len(r.lost) > 0 {
		fmt.Fprintf(w, "         LOST: %s\n", idList(r.lost))
	}
	if len(r.badPayload) > 0 {
		fmt.Fprintf(w, "         WRONG PAYLOAD: %s\n", idList(r.badPayload))
	}
	fmt.Fprintf(w, "  [%s] %s acked: %d present again\n", mark(len(r.resurrected) == 0), count(r.acked), len(r.resurrected))
	if len(r.resurrected) > 0 {
		fmt.Fprintf(w, "         BACK AFTER ACK: %s\n", idList(r.resurrected))
	}
	fmt.Fprintf(w, "  [info] %d acks in flight at the kill (dequeued, ack not reported): %d pending again, %d gone; either is correct\n",
		r.inFlight, r.inFlightUp, r.inFlight-r.inFlightUp)
	fmt.Fprintf(w, "  [info] %d enqueues in flight at the kill (present, never reported); allowed\n", r.unreported)
	for _, p := range r.problems {
		fmt.Fprintf(w, "  [FAIL] child reported: %s\n", safe(p))
	}
	if r.held {
		fmt.Fprintln(w, "recovery check: held (nothing acknowledged was lost, nothing acked came back)")
	} else {
		fmt.Fprintln(w, "recovery check: FAILED")
	}
}

// idList formats up to ten IDs.
func idList(ids []ringwal.ID) string {
	parts := make([]string, 0, min(len(ids), 10))
	for i, id := range ids {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("and %d more", len(ids)-10))
			break
		}
		parts = append(parts, strconv.FormatUint(id, 10))
	}
	return strings.Join(parts, ", ")
}
