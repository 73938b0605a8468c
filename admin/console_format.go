package admin

// The console templates' formatting functions.

import (
	"fmt"
	"html/template"
	"strconv"
	"strings"
	"time"
)

// templateFuncs are the functions the console's templates call.
var templateFuncs = template.FuncMap{
	"ts":    formatTime,
	"clock": formatClock,
	"dur":   Duration,
	"secs":  func(s float64) string { return Duration(time.Duration(s * float64(time.Second))) },
	"count": formatCount,
	"bytes": formatBytes,
	"rate":  func(r float64) string { return strconv.FormatFloat(r, 'f', 1, 64) + "/s" },
	"pct":   func(p float64) string { return strconv.FormatFloat(p, 'f', 0, 64) + "%" },
	"qname": AdminQueueName,
	"dash": func(s string) string {
		if s == "" {
			return "—"
		}
		return s
	},
	"short": func(s string, n int) string {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[:i] + " …"
		}
		if r := []rune(s); len(r) > n {
			s = string(r[:n-1]) + "…"
		}
		return s
	},
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

// Duration formats d with three significant digits: 1.23ms, 4.5s, 3m0s.
// The console and the CLI print durations with it.
func Duration(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < time.Microsecond:
		return d.String()
	case d < time.Millisecond:
		return fmt.Sprintf("%.3gµs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.3gms", float64(d)/float64(time.Millisecond))
	case d < time.Minute:
		return fmt.Sprintf("%.3gs", d.Seconds())
	}
	return d.Round(time.Second).String()
}

// formatCount is Count for the templates, which pass any number.
func formatCount(n any) string {
	switch v := n.(type) {
	case int:
		return Count(v)
	case uint64:
		return Count(v)
	case int64:
		return Count(v)
	}
	return fmt.Sprint(n)
}

// formatBytes is ByteSize for the templates (an int64 or uint64).
func formatBytes(v any) string {
	switch b := v.(type) {
	case uint64:
		return ByteSize(b)
	case int64:
		return ByteSize(b)
	}
	return fmt.Sprint(v)
}

// Count formats n with thousands separators: 12,345. The console and the
// CLI print counts with it, so that they agree.
func Count[T ~int | ~int64 | ~uint64](n T) string {
	var s string
	if n < 0 {
		s = strconv.FormatInt(int64(n), 10)
	} else {
		s = strconv.FormatUint(uint64(n), 10)
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// ByteSize formats n bytes with a binary unit: 1.5 MiB (a negative n is
// 0 B). The console and the CLI print sizes with it.
func ByteSize[T ~int64 | ~uint64](n T) string {
	if n < 0 {
		n = 0
	}
	u := uint64(n)
	const unit = 1024
	if u < unit {
		return fmt.Sprintf("%d B", u)
	}
	div, exp := uint64(unit), 0
	for m := u / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(u)/float64(div), "KMGTPE"[exp])
}
