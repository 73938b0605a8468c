package main

// The text output of the dlq subcommands, from admin's views (so a
// directory and a live engine print alike).

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/ringwal/ringwal/admin"
)

// reportBulk prints what a mutating subcommand did.
func reportBulk(w io.Writer, verb string, done []uint64, failed map[uint64]error, asJSON bool) error {
	if asJSON {
		type failedID struct {
			ID    uint64 `json:"id"`
			Error string `json:"error"`
		}
		out := struct {
			Action string     `json:"action"`
			Done   []uint64   `json:"done"`
			Failed []failedID `json:"failed"`
		}{Action: verb, Done: done, Failed: []failedID{}}
		for _, id := range sortedKeys(failed) {
			out.Failed = append(out.Failed, failedID{ID: id, Error: failed[id].Error()})
		}
		return writeJSON(w, out)
	}
	fmt.Fprintf(w, "%s %s", pastTense(verb), plural(len(done), "dead letter", "dead letters"))
	if len(done) > 0 {
		fmt.Fprintf(w, ": %s", summarizeIDs(done))
	}
	fmt.Fprintln(w)
	failedIDs := sortedKeys(failed)
	for i, id := range failedIDs {
		if i == idsShownHead && len(failedIDs) > maxIDsShown {
			fmt.Fprintf(w, "and %d more failed (--json for all)\n", len(failedIDs)-i)
			break
		}
		fmt.Fprintf(w, "failed %d: %s\n", id, safe(failed[id].Error()))
	}
	return nil
}

// pastTense returns the past participle of a bulk verb.
func pastTense(verb string) string {
	switch verb {
	case "redrive":
		return "redriven"
	case "review":
		return "reviewed"
	}
	return verb + "d" // purge
}

// printDLQTable writes one line per dead letter.
func printDLQTable(w io.Writer, ds []admin.DeadLetterView) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "ID\tQUEUE\tCATEGORY\tKEY\tPRIORITY\tATTEMPTS\tDEAD AT\tREVIEWED\tLAST ERROR")
	for _, d := range ds {
		rev := "no"
		if d.Reviewed {
			rev = "yes"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", d.ID, safe(admin.AdminQueueName(d.Queue)), d.Category, cell(d.Key), safe(d.Message.Priority),
			d.Attempts, timestamp(d.DeadAt), rev, cell(firstLine(d.LastError, 60)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, plural(len(ds), "dead letter", "dead letters"))
	return nil
}

// printDeadLetter writes one dead letter in full.
func printDeadLetter(w io.Writer, d admin.DeadLetterView) {
	tw := newTable(w)
	m := d.Message
	fmt.Fprintf(tw, "dead letter\t%d\n", d.ID)
	fmt.Fprintf(tw, "queue\t%s\n", safe(admin.AdminQueueName(d.Queue)))
	fmt.Fprintf(tw, "category\t%s\n", d.Category)
	fmt.Fprintf(tw, "key\t%s\n", cell(d.Key))
	fmt.Fprintf(tw, "priority\t%s\n", safe(m.Priority))
	fmt.Fprintf(tw, "attempts\t%d\n", d.Attempts)
	fmt.Fprintf(tw, "first failed\t%s\n", timestamp(d.FirstFailedAt))
	fmt.Fprintf(tw, "dead at\t%s\n", timestamp(d.DeadAt))
	if d.Reviewed {
		fmt.Fprintf(tw, "reviewed\t%s: %s\n", timestamp(d.ReviewedAt), cell(d.Note))
	} else {
		fmt.Fprintf(tw, "reviewed\tno\n")
	}
	if m.DedupID != "" {
		fmt.Fprintf(tw, "dedup id\t%s\n", safe(m.DedupID))
	}
	for _, k := range sortedKeys(m.Headers) {
		fmt.Fprintf(tw, "header\t%s: %s\n", safe(k), safe(m.Headers[k]))
	}
	if b, err := m.PayloadBytes(); err != nil {
		fmt.Fprintf(tw, "payload\t%s\n", safe(err.Error()))
	} else if m.PayloadEncoding == admin.PayloadText {
		fmt.Fprintf(tw, "payload\t%q\n", m.Payload)
	} else {
		fmt.Fprintf(tw, "payload\t%d bytes of binary (see --json)\n", len(b))
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "failures (the last %d, oldest first):\n", len(d.Failures))
	for _, f := range d.Failures {
		fmt.Fprintf(w, "  %s  %-12s %s\n", timestamp(f.At), f.Category, safe(firstLine(f.Error, 100)))
	}
	if last := d.LastError; strings.Contains(last, "\n") || utf8.RuneCountInString(last) > 100 {
		fmt.Fprintln(w, "last error in full:")
		for _, line := range strings.Split(strings.TrimRight(last, "\n"), "\n") {
			fmt.Fprintf(w, "  %s\n", safe(line))
		}
	}
}
