package admin

// The console templates' formatting functions.

import (
	"fmt"
	"html/template"
	"strconv"
	"strings"
	"time"

	"github.com/ringwal/ringwal/internal/adminfmt"
)

// templateFuncs are the functions the console's templates call. What
// shows outside text (names, keys, headers, errors) escapes what does not
// show as itself (adminfmt.Escape: U+202E, U+200B and the like written as
// \u202e): qname, dash and short always, vis and vistext (a text over
// several lines) where a template shows such text bare. Attribute values
// (a form's hidden name, a link's query) stay exact: they are sent back,
// not shown.
var templateFuncs = template.FuncMap{
	"ts":    formatTime,
	"clock": formatClock,
	"dur":   adminfmt.Duration,
	"secs":  func(s float64) string { return adminfmt.Duration(time.Duration(s * float64(time.Second))) },
	"count": formatCount,
	"bytes": formatBytes,
	"rate":  func(r float64) string { return strconv.FormatFloat(r, 'f', 1, 64) + "/s" },
	"pct":   func(p float64) string { return strconv.FormatFloat(p, 'f', 0, 64) + "%" },
	"qname": func(name string) string { return adminfmt.Escape(AdminQueueName(name)) },
	"dash": func(s string) string {
		if s == "" {
			return "—"
		}
		return adminfmt.Escape(s)
	},
	"short": func(s string, n int) string {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[:i] + " …"
		}
		if r := []rune(s); len(r) > n {
			s = string(r[:n-1]) + "…"
		}
		return adminfmt.Escape(s)
	},

	"vis":     adminfmt.Escape,
	"vistext": adminfmt.EscapeText,
}

// formatTime is t in the server's local time to the millisecond, with its
// zone; "—" for the zero time.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.Local().Format("2006-01-02 15:04:05.000 MST")
}

// formatClock is t in the server's local time, to the second: the time
// of day when t is within a day from now, else with its date too; "—"
// for the zero time.
func formatClock(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	t = t.Local()
	if d := time.Until(t); d > -24*time.Hour && d < 24*time.Hour {
		return t.Format("15:04:05 MST")
	}
	return t.Format("2006-01-02 15:04 MST")
}

// formatCount is Count for the templates, which pass any number.
func formatCount(n any) string {
	switch v := n.(type) {
	case int:
		return adminfmt.Count(v)
	case uint64:
		return adminfmt.Count(v)
	case int64:
		return adminfmt.Count(v)
	}
	return fmt.Sprint(n)
}

// formatBytes is ByteSize for the templates (an int64 or uint64).
func formatBytes(v any) string {
	switch b := v.(type) {
	case uint64:
		return adminfmt.ByteSize(b)
	case int64:
		return adminfmt.ByteSize(b)
	}
	return fmt.Sprint(v)
}
