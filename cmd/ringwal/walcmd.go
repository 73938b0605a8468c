package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/internal/adminfmt"
	"github.com/ringwal/ringwal/internal/wal"
)

// newWALCmd builds `ringwal wal` with verify and dump.
func newWALCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "wal",
		Short: "Verify or dump the write-ahead log of a data directory",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newWALVerifyCmd(), newWALDumpCmd())
	return cmd
}

// newWALVerifyCmd builds `ringwal wal verify`.
func newWALVerifyCmd() *cobra.Command {
	var repair, asJSON bool
	cmd := &cobra.Command{
		Use:   "verify DIR",
		Short: "Check every checksum and record of the log and its snapshots",
		Long: `Verify reads every batch of the log (framing, header, CRC32C checksum, every
record) and every snapshot file, offline.

A torn tail (a batch cut short by a crash mid-write) is reported but left
alone unless --repair is given; the next engine to open the directory cuts it
anyway. Without --repair verify takes no lock and changes nothing, so it may
be run on a directory in use (a batch being written then shows as a torn
tail). With --repair it takes the directory lock and fails if an engine holds
it.

Exit status: 0 if the log is sound (a torn tail included), 1 if there is
damage before the tail (the error names the segment file and offset).`,
		Example: "  ringwal wal verify /tmp/ringwal-demo/crash\n  ringwal wal verify --repair DIR",
		Args:    cobra.ExactArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if err := checkDataDir(args[0]); err != nil {
				return err
			}
			rep, verr := wal.Verify(args[0], repair)
			var damaged error
			if verr != nil {
				damaged = fmt.Errorf("verifying %s: %w", args[0], mapLocked(verr))
				if rep.Segments == 0 && len(rep.Snapshots) == 0 {
					return damaged // nothing read: no report to print
				}
			}
			var err error
			if asJSON {
				err = writeJSON(cmd.OutOrStdout(), verifyJSON(rep, verr))
			} else {
				printVerify(cmd.OutOrStdout(), rep, verr)
			}
			return cmp.Or(damaged, err)
		}),
	}
	cmd.Flags().BoolVar(&repair, "repair", false, "cut a torn tail (takes the directory lock)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// mapLocked explains a lock conflict.
func mapLocked(err error) error {
	if errors.Is(err, wal.ErrLocked) {
		return fmt.Errorf("the directory is in use by a running engine: %w", err)
	}
	return err
}

// verifyReportJSON is verify's JSON output.
type verifyReportJSON struct {
	Dir        string         `json:"dir"`
	OK         bool           `json:"ok"`
	Error      string         `json:"error,omitempty"`
	Segments   int            `json:"segments"`
	FirstIndex uint64         `json:"first_index"`
	LastIndex  uint64         `json:"last_index"`
	Batches    uint64         `json:"batches"`
	Records    uint64         `json:"records"`
	Bytes      int64          `json:"bytes"`
	Snapshot   string         `json:"snapshot"`
	Snapshots  []snapshotJSON `json:"snapshots"`
	TornTail   *tornJSON      `json:"torn_tail"`
	Repaired   bool           `json:"repaired"`
}

// snapshotJSON describes one snapshot file.
type snapshotJSON struct {
	Path    string `json:"path"`
	Index   uint64 `json:"index"`
	Records uint64 `json:"records"`
	Bytes   int64  `json:"bytes"`
	Error   string `json:"error,omitempty"`
}

// tornJSON describes a torn tail.
type tornJSON struct {
	Bytes   int64  `json:"bytes"`
	Batches int    `json:"batches"`
	Records int    `json:"records"`
	Segment string `json:"segment"`
	Offset  int64  `json:"offset"`
	Index   uint64 `json:"index"`
	Reason  string `json:"reason"`
}

// verifyJSON converts a verify report to its JSON form.
func verifyJSON(r wal.VerifyReport, verr error) verifyReportJSON {
	out := verifyReportJSON{
		Dir: r.Dir, OK: verr == nil, Segments: r.Segments, FirstIndex: r.FirstIndex, LastIndex: r.LastIndex,
		Batches: r.Batches, Records: r.Records, Bytes: r.Bytes, Snapshot: r.Snapshot,
		Snapshots: []snapshotJSON{}, Repaired: r.Repaired,
	}
	if verr != nil {
		out.Error = verr.Error()
	}
	for _, s := range r.Snapshots {
		sj := snapshotJSON{Path: s.Path, Index: s.Index, Records: s.Records, Bytes: s.Bytes}
		if s.Err != nil {
			sj.Error = s.Err.Error()
		}
		out.Snapshots = append(out.Snapshots, sj)
	}
	if t := r.Torn; t.Bytes > 0 || t.Segment != "" {
		out.TornTail = &tornJSON{Bytes: t.Bytes, Batches: t.Batches, Records: t.Records, Segment: t.Segment,
			Offset: t.Offset, Index: t.Index, Reason: t.Reason}
	}
	return out
}

// printVerify writes a verify report as text.
func printVerify(w io.Writer, r wal.VerifyReport, verr error) {
	tw := newTable(w)
	fmt.Fprintf(tw, "directory\t%s\n", safe(r.Dir))
	fmt.Fprintf(tw, "log\t%d segments; batches %d..%d: %s valid batches, %s records, %s\n",
		r.Segments, r.FirstIndex, r.LastIndex, count(r.Batches), count(r.Records), bytesize(r.Bytes))
	if len(r.Snapshots) == 0 {
		fmt.Fprintf(tw, "snapshots\tnone\n")
	}
	for i, s := range r.Snapshots {
		label := ""
		if i == 0 {
			label = "snapshots"
		}
		state := "ok"
		if s.Err != nil {
			state = "DAMAGED: " + s.Err.Error()
		}
		if s.Path == r.Snapshot {
			state += " (recovery starts here)"
		}
		fmt.Fprintf(tw, "%s\t%s: covers batches up to %d, %s records, %s, %s\n",
			label, safe(filepath.Base(s.Path)), s.Index, count(s.Records), bytesize(s.Bytes), safe(state))
	}
	t := r.Torn
	switch {
	case t.Bytes == 0 && t.Segment == "":
		fmt.Fprintf(tw, "torn tail\tnone\n")
	case r.Repaired:
		fmt.Fprintf(tw, "torn tail\t%s cut from %s at offset %d (batch %d: %s): repaired\n",
			bytesize(t.Bytes), safe(filepath.Base(t.Segment)), t.Offset, t.Index, safe(t.Reason))
	default:
		fmt.Fprintf(tw, "torn tail\t%s at %s offset %d (batch %d, %d records announced: %s)\n",
			bytesize(t.Bytes), safe(filepath.Base(t.Segment)), t.Offset, t.Index, t.Records, safe(t.Reason))
		fmt.Fprintf(tw, "\tleft alone: a crash mid-write leaves this; the next open cuts it, or run with --repair\n")
	}
	if verr != nil {
		fmt.Fprintf(tw, "result\tDAMAGED: %s\n", safe(verr.Error()))
	} else {
		fmt.Fprintf(tw, "result\tok: every checksum and record is valid\n")
	}
	_ = tw.Flush()
}

// newWALDumpCmd builds `ringwal wal dump`.
func newWALDumpCmd() *cobra.Command {
	var kinds []string
	var ids []string
	cmd := &cobra.Command{
		Use:   "dump DIR",
		Short: "Print every record recovery would replay, as JSON lines",
		Long: `Dump prints the records recovery would replay, one JSON object a line: the
newest snapshot's records (with "index" the snapshot's batch index), then the
log's records after it (with their batch index). It stops at a torn tail,
takes no lock and changes nothing.

Fields: index, kind, id, time, then what the kind carries: priority, key,
dedup_id, headers, payload (text) or payload_base64, not_before, deadline,
expires_at, max_attempts, attempt, until, category, text, crashes, queue
(a named queue's number; a queue record's key is its name), copies (a
publish record's copies: each one's queue number and ID) and unique (a
message's uniqueness mode: queued or live).`,
		Example: "  ringwal wal dump DIR | head\n  ringwal wal dump --kind deadletter --kind redrive DIR\n  ringwal wal dump --id 42 DIR",
		Args:    cobra.ExactArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			byName := map[string]wal.Kind{}
			for k := wal.Kind(1); k.Valid(); k++ {
				byName[normalizeKind(k.String())] = k
			}
			want := map[wal.Kind]bool{}
			for _, name := range kinds {
				k, ok := byName[normalizeKind(name)]
				if !ok {
					return usagef("--kind: unknown record kind %q", name)
				}
				want[k] = true
			}
			wantID := map[uint64]bool{}
			for _, a := range ids {
				id, err := strconv.ParseUint(strings.TrimSpace(a), 10, 64)
				if err != nil {
					return usagef("--id: %q is not a message ID", a)
				}
				wantID[id] = true
			}
			if err := checkDataDir(args[0]); err != nil {
				return err
			}
			bw := bufio.NewWriter(cmd.OutOrStdout())
			var line bytes.Buffer
			enc := json.NewEncoder(&line)
			err := wal.Dump(args[0], func(index uint64, r *wal.Record) error {
				if len(want) > 0 && !want[r.Kind] {
					return nil
				}
				if len(wantID) > 0 && !wantID[r.ID] && !slices.ContainsFunc(r.Copies, func(c wal.Copy) bool { return wantID[c.ID] }) {
					return nil
				}
				line.Reset()
				if err := enc.Encode(recordJSON(index, r)); err != nil {
					return err
				}
				// Names, keys, headers and texts as JSON escapes
				// where they hold what a terminal would not show.
				_, err := bw.Write(adminfmt.EscapeJSON(line.Bytes()))
				return err
			})
			if ferr := bw.Flush(); err == nil {
				err = ferr
			}
			if err != nil {
				return fmt.Errorf("dumping %s: %w", args[0], err)
			}
			return nil
		}),
	}
	cmd.Flags().StringSliceVar(&kinds, "kind", nil, "only records of this kind (repeatable): "+kindList())
	cmd.Flags().StringSliceVar(&ids, "id", nil, "only records of this message ID (repeatable; a publish record shows for each of its copies)")
	return cmd
}

// kindList names every record kind, for --kind's help.
func kindList() string {
	var names []string
	for k := wal.Kind(1); k.Valid(); k++ {
		names = append(names, k.String())
	}
	return strings.Join(names, ", ")
}

// normalizeKind makes kind names comparable: "deadletter", "dead_letter"
// and "dead-letter" are one.
func normalizeKind(s string) string {
	return strings.NewReplacer("_", "", "-", "", " ", "").Replace(strings.ToLower(s))
}

// walRecordJSON is one dumped record.
type walRecordJSON struct {
	Index         uint64            `json:"index"`
	Kind          string            `json:"kind"`
	ID            uint64            `json:"id"`
	Time          time.Time         `json:"time"`
	Priority      string            `json:"priority,omitempty"`
	Key           string            `json:"key,omitempty"`
	DedupID       string            `json:"dedup_id,omitempty"`
	Headers       map[string]string `json:"headers,omitempty"`
	Payload       *string           `json:"payload,omitempty"`
	PayloadBinary []byte            `json:"payload_base64,omitempty"`
	NotBefore     *time.Time        `json:"not_before,omitempty"`
	Deadline      *time.Time        `json:"deadline,omitempty"`
	ExpiresAt     *time.Time        `json:"expires_at,omitempty"`
	MaxAttempts   int32             `json:"max_attempts,omitempty"`
	Attempt       int32             `json:"attempt,omitempty"`
	Until         *time.Time        `json:"until,omitempty"`
	Category      string            `json:"category,omitempty"`
	Text          string            `json:"text,omitempty"`
	Crashes       int32             `json:"crashes,omitempty"`
	Queue         uint32            `json:"queue,omitempty"`
	Copies        []walCopyJSON     `json:"copies,omitempty"`
	Unique        string            `json:"unique,omitempty"`
}

// walCopyJSON is one copy of a dumped publish record.
type walCopyJSON struct {
	Queue uint32 `json:"queue"`
	ID    uint64 `json:"id"`
}

// recordJSON converts a log record to its JSON form.
func recordJSON(index uint64, r *wal.Record) walRecordJSON {
	j := walRecordJSON{
		Index: index, Kind: r.Kind.String(), ID: r.ID, Time: time.Unix(0, r.Time).UTC(),
		Key: r.Key, DedupID: r.DedupID, MaxAttempts: r.MaxAttempts, Attempt: r.Attempt, Text: r.Text, Crashes: r.Crashes,
		NotBefore: optTime(r.NotBefore), Deadline: optTime(r.Deadline), ExpiresAt: optTime(r.ExpiresAt), Until: optTime(r.Until),
		Queue: r.Queue,
	}
	for _, c := range r.Copies {
		j.Copies = append(j.Copies, walCopyJSON{Queue: c.Queue, ID: c.ID})
	}
	if r.Unique != 0 {
		j.Unique = ringwal.Unique(r.Unique).String()
	}
	switch r.Kind {
	case wal.KindEnqueue, wal.KindPublish:
		j.Priority = ringwal.Priority(r.Priority).String()
		if text, ok := payloadText(r.Payload); ok {
			j.Payload = &text
		} else {
			j.PayloadBinary = append([]byte(nil), r.Payload...)
		}
	case wal.KindNack, wal.KindDeadLetter, wal.KindFailure:
		j.Category = classify.Category(r.Category).String()
	}
	if len(r.Headers) > 0 {
		j.Headers = make(map[string]string, len(r.Headers)/2)
		for i := 0; i+1 < len(r.Headers); i += 2 {
			j.Headers[r.Headers[i]] = r.Headers[i+1]
		}
	}
	return j
}

// optTime converts unix nanoseconds to a time, nil for 0.
func optTime(ns int64) *time.Time {
	if ns == 0 {
		return nil
	}
	t := time.Unix(0, ns).UTC()
	return &t
}
