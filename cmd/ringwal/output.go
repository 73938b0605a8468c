package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/vbauerster/mpb/v8/cwriter"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/internal/adminfmt"
)

// isTerminal reports whether rw, an output or an input, is a terminal
// (output may be redrawn in place; an operator can answer a question)
// rather than a pipe, a file or /dev/null.
func isTerminal(rw any) bool {
	f, ok := rw.(*os.File)
	return ok && cwriter.IsTerminal(int(f.Fd()))
}

// newTable returns a tab-separated table writer over w; Flush it.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// writeJSON writes v as indented JSON followed by a newline, with the
// characters that do not show as themselves escaped (adminfmt.EscapeJSON:
// the same JSON value).
func writeJSON(w io.Writer, v any) error {
	js, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("writing JSON: %w", err)
	}
	if _, err := w.Write(append(adminfmt.EscapeJSON(js), '\n')); err != nil {
		return fmt.Errorf("writing JSON: %w", err)
	}
	return nil
}

// openDataDir opens the engine over an existing data directory. It refuses
// a directory that does not look like one (rather than creating it), and
// says clearly when a running engine holds the directory.
func openDataDir(dir string) (*ringwal.Engine, error) {
	if err := checkDataDir(dir); err != nil {
		return nil, err
	}
	e, err := ringwal.Open(dir, ringwal.Options{})
	if errors.Is(err, ringwal.ErrLocked) {
		return nil, fmt.Errorf("%s is in use by a running engine: operate it through the admin API its application mounts (admin.NewHandler), with --addr URL or $%s instead of the directory; or stop it first: %w", dir, envAddr, ringwal.ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", dir, err)
	}
	return e, nil
}

// checkDataDir returns an error unless dir exists and holds a FORMAT file,
// the mark of a ringwal data directory.
func checkDataDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "FORMAT")); err != nil {
		return fmt.Errorf("%s is not a ringwal data directory (no FORMAT file): %w", dir, err)
	}
	return nil
}

// closeEngine closes e and joins its error to *errp.
func closeEngine(e *ringwal.Engine, errp *error) {
	if err := e.Close(); err != nil {
		*errp = errors.Join(*errp, fmt.Errorf("closing the engine: %w", err))
	}
}

// count and bytesize are adminfmt's, as the console's are.
func count[T ~int | ~int64 | ~uint64](n T) string { return adminfmt.Count(n) }

func bytesize(n int64) string { return adminfmt.ByteSize(n) }

// dur is adminfmt's Duration, so that the CLI and the console agree.
func dur(d time.Duration) string { return adminfmt.Duration(d) }

// timestamp formats t for tables: local time to the millisecond, or "-".
func timestamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05.000")
}

// firstLine returns s's first line cut to max runes, with an ellipsis if
// anything was left out.
func firstLine(s string, max int) string {
	cut := false
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s, cut = s[:i], true
	}
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s, cut = string(r[:max-1]), true
	}
	if cut {
		s += "…"
	}
	return s
}

// orDash returns s, or "-" if s is empty (an empty table cell is hard to
// read).
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// payloadText returns p as text if it is valid UTF-8, and says so.
func payloadText(p []byte) (string, bool) {
	if utf8.Valid(p) {
		return string(p), true
	}
	return "", false
}

// sortedKeys returns m's keys in order.
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}
