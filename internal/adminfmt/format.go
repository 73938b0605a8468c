package adminfmt

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

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
