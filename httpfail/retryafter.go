package httpfail

import (
	"net/http"
	"strings"
	"time"
)

// maxDeltaSeconds is the largest delta-seconds honoured: RFC 9111 section
// 1.2.2 has a recipient treat a larger value as 2^31 seconds.
const maxDeltaSeconds = 1 << 31

// ParseRetryAfter reads a Retry-After header value in either form (RFC
// 9110 section 10.2.3), measured against now. One form is delta-seconds:
// "120", one or more ASCII digits, no sign. The other is an HTTP-date:
// IMF-fixdate, or the obsolete RFC 850 and ANSI C asctime forms, as
// http.ParseTime reads them. Surrounding spaces and tabs are ignored.
//
// ok is false for anything else: empty, negative, fractional, a number
// with a sign or garbage after it. A date at or before now is (0, true):
// the server's time has come. A delay beyond 2^31 seconds, in either
// form, is 2^31 seconds (as RFC 9111 section 1.2.2 has a recipient read
// such delta-seconds), so no value overflows a time.Duration.
func ParseRetryAfter(value string, now time.Time) (d time.Duration, ok bool) {
	v := strings.Trim(value, " \t")
	if v == "" {
		return 0, false
	}
	if secs, isNum := parseDigits(v); isNum {
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d = t.Sub(now) // saturates, never wraps
	return min(max(d, 0), maxDeltaSeconds*time.Second), true
}

// parseDigits reads 1*DIGIT, saturating at maxDeltaSeconds. isNum is
// false if v holds anything but ASCII digits.
func parseDigits(v string) (secs int64, isNum bool) {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if secs < maxDeltaSeconds {
			secs = secs*10 + int64(c-'0')
		}
	}
	return min(secs, maxDeltaSeconds), true
}
