package main

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/wal"
)

// newInspectCmd builds `ringwal inspect DIR`.
func newInspectCmd() *cobra.Command {
	var asJSON bool
	var next int
	cmd := &cobra.Command{
		Use:   "inspect DIR",
		Short: "Show the state of a data directory",
		Long: `Inspect opens the engine over DIR, prints what it holds, closes it, and
reports on the log files: depth per priority tier, delayed and leased
messages, dead letters per category, log size and segments, and the last
checkpoint.

Opening is a start-up like any other: the write-ahead log is replayed, a
torn tail left by a crash is cut, messages leased at the crash come back
pending (so leased reads 0), and the engine's housekeeping runs while it is
open (a message whose TTL has passed is dead-lettered as expired; delayed
messages that are due become pending).

The directory must not be in use: a running engine holds its lock, and
inspect says so. Use the admin API of ` + "`ringwal serve`" + ` for a live one.`,
		Example: "  ringwal inspect /tmp/ringwal-demo/live\n  ringwal inspect --json /var/lib/app/queue",
		Args:    cobra.ExactArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if next < 0 {
				return usagef("--next %d is negative", next)
			}
			rep, err := inspect(args[0], next)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			return rep.print(cmd.OutOrStdout())
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().IntVar(&next, "next", 5, "list this many pending messages in the order they would be delivered")
	return cmd
}

// inspectReport is what inspect found; its JSON form is --json's output:
// the engine's Stats as the admin API shows them (admin.StatsView, its
// fields at the top level), the next messages in line as admin.InfoView,
// and what the log files hold.
type inspectReport struct {
	Dir string `json:"dir"`
	admin.StatsView
	Next       []admin.InfoView `json:"next"`
	LogFiles   walReport        `json:"log_files"`
	Checkpoint *checkpointEntry `json:"checkpoint"`
}

// walReport describes the log files.
type walReport struct {
	Segments   int    `json:"segments"`
	FirstIndex uint64 `json:"first_index"`
	LastIndex  uint64 `json:"last_index"`
	Batches    uint64 `json:"batches"`
	Records    uint64 `json:"records"`
	LogBytes   int64  `json:"log_bytes"`
	DiskBytes  int64  `json:"disk_bytes"`
}

// checkpointEntry describes the snapshot recovery starts from.
type checkpointEntry struct {
	Path    string    `json:"path"`
	Index   uint64    `json:"index"`
	Records uint64    `json:"records"`
	Bytes   int64     `json:"bytes"`
	Time    time.Time `json:"time"`
}

// inspect opens dir, gathers the report, closes the engine and reads the
// log files.
func inspect(dir string, next int) (rep inspectReport, err error) {
	e, err := openDataDir(dir)
	if err != nil {
		return rep, err
	}
	s := e.Stats()
	rep = inspectReport{Dir: dir, StatsView: admin.NewStatsView(s), Next: []admin.InfoView{}}
	// No more than are pending: Peek sizes its answer by what it is asked.
	for _, in := range e.Peek(min(next, s.Pending)) {
		rep.Next = append(rep.Next, admin.NewInfoView(in))
	}
	if err := e.Close(); err != nil {
		return rep, fmt.Errorf("closing the engine: %w", err)
	}
	// The engine is closed, so the log is quiet: Verify (without repair)
	// reads every batch and snapshot and takes no lock.
	vr, err := wal.Verify(dir, false)
	if err != nil {
		return rep, fmt.Errorf("reading the log: %w", err)
	}
	rep.LogFiles = walReport{
		Segments: vr.Segments, FirstIndex: vr.FirstIndex, LastIndex: vr.LastIndex,
		Batches: vr.Batches, Records: vr.Records, LogBytes: vr.Bytes, DiskBytes: diskUsage(dir),
	}
	for _, sn := range vr.Snapshots {
		if sn.Err != nil || sn.Path != vr.Snapshot {
			continue
		}
		ce := &checkpointEntry{Path: sn.Path, Index: sn.Index, Records: sn.Records, Bytes: sn.Bytes}
		if st, err := os.Stat(sn.Path); err == nil {
			ce.Time = st.ModTime()
		}
		rep.Checkpoint = ce
	}
	return rep, nil
}

// priorities lists the priorities from most to least urgent.
var priorities = []ringwal.Priority{ringwal.Critical, ringwal.High, ringwal.Normal, ringwal.Low, ringwal.Background}

// diskUsage is the total size of the regular files under dir.
func diskUsage(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			n += info.Size()
		}
		return nil
	})
	return n
}

// print writes the report as text.
func (r inspectReport) print(w io.Writer) error {
	tw := newTable(w)
	fmt.Fprintf(tw, "data directory\t%s\n", r.Dir)
	fmt.Fprintf(tw, "messages\tpending %s · delayed %s · leased %s · held %s · dead %s\n",
		count(r.Pending), count(r.Delayed), count(r.Leased), count(r.Held), count(r.Dead))
	fmt.Fprintf(tw, "oldest pending\t%s\n", orDash(durOrZero(seconds(r.OldestPendingSeconds))))
	fmt.Fprintln(tw, "\t")
	fmt.Fprintln(tw, "PENDING BY TIER\t")
	for _, p := range priorities {
		fmt.Fprintf(tw, "  %s\t%s\n", p, count(r.ByPriority[ringwal.Pending.String()][p.String()]))
	}
	fmt.Fprintln(tw, "\t")
	fmt.Fprintln(tw, "DEAD LETTERS BY CATEGORY\t")
	for _, c := range classify.Categories() {
		fmt.Fprintf(tw, "  %s\t%s\n", c, count(r.DeadByCategory[c]))
	}
	fmt.Fprintln(tw, "\t")
	fmt.Fprintln(tw, "WRITE-AHEAD LOG\t")
	fmt.Fprintf(tw, "  segments\t%d (batches %d..%d: %s batches, %s records, %s)\n",
		r.LogFiles.Segments, r.LogFiles.FirstIndex, r.LogFiles.LastIndex, count(r.LogFiles.Batches), count(r.LogFiles.Records), bytesize(r.LogFiles.LogBytes))
	fmt.Fprintf(tw, "  on disk\t%s (log, snapshot and lock files)\n", bytesize(r.LogFiles.DiskBytes))
	if c := r.Checkpoint; c != nil {
		fmt.Fprintf(tw, "  last checkpoint\t%s (%s ago), covers batches up to %d: %s records, %s\n",
			timestamp(c.Time), dur(time.Since(c.Time).Round(time.Second)), c.Index, count(c.Records), bytesize(c.Bytes))
	} else {
		fmt.Fprintf(tw, "  last checkpoint\tnone (recovery replays the whole log)\n")
	}
	if rc := r.Recovery; rc != nil {
		fmt.Fprintf(tw, "  replayed on open\t%s records (%s) in %s; torn tail cut: %s; leased at a crash: %d (requeued), crash-looping: %d (dead-lettered)\n",
			count(rc.Records), bytesize(rc.Bytes), dur(seconds(rc.DurationSeconds)), bytesize(rc.TornBytes), rc.Crashed, rc.Poisoned)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Next) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nNEXT IN LINE")
	tw = newTable(w)
	fmt.Fprintln(tw, "ID\tPRIORITY\tKEY\tATTEMPTS\tPAYLOAD")
	for _, in := range r.Next {
		m := in.Message
		payload := m.Payload
		if m.PayloadEncoding != admin.PayloadText {
			payload = "(binary, base64: " + payload + ")"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\n", in.ID, m.Priority, orDash(m.Key), in.Attempts, firstLine(payload, 40))
	}
	return tw.Flush()
}

// seconds turns a view's _seconds field back into a duration.
func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// durOrZero formats d, "" for zero.
func durOrZero(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return dur(d)
}
