package httpfail_test

import (
	"errors"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/httpfail"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func retryAfter(v string) http.Header { return http.Header{"Retry-After": []string{v}} }

func TestFromStatusClassifiesEachStatusWithItsHint(t *testing.T) {
	in90s := now.Add(90 * time.Second).Format(http.TimeFormat)
	tests := []struct {
		name   string
		code   int
		header http.Header
		cat    classify.Category // ignored when ok
		hint   time.Duration     // 0: no hint
		ok     bool              // nil error expected
		text   string            // the error's text
	}{
		{name: "200 is no failure", code: 200, ok: true},
		{name: "204 is no failure", code: 204, ok: true},
		{name: "304 is no failure", code: 304, ok: true},
		{name: "101 is no failure", code: 101, ok: true},
		{name: "429 with delta-seconds", code: 429, header: retryAfter("120"), cat: classify.RateLimited, hint: 2 * time.Minute, text: "http 429 Too Many Requests (retry after 2m0s)"},
		{name: "429 with an HTTP-date", code: 429, header: retryAfter(in90s), cat: classify.RateLimited, hint: 90 * time.Second},
		{name: "429 with a garbage value", code: 429, header: retryAfter("soon, please"), cat: classify.RateLimited, text: "http 429 Too Many Requests"},
		{name: "429 with a negative value", code: 429, header: retryAfter("-5"), cat: classify.RateLimited},
		{name: "429 with a fraction", code: 429, header: retryAfter("1.5"), cat: classify.RateLimited},
		{name: "429 with zero", code: 429, header: retryAfter("0"), cat: classify.RateLimited},
		{name: "429 with a date past", code: 429, header: retryAfter(now.Add(-time.Hour).Format(http.TimeFormat)), cat: classify.RateLimited},
		{name: "429 without Retry-After", code: 429, cat: classify.RateLimited},
		{name: "503 with delta-seconds", code: 503, header: retryAfter(" 30 "), cat: classify.Transient, hint: 30 * time.Second, text: "http 503 Service Unavailable (retry after 30s)"},
		{name: "503 with an HTTP-date", code: 503, header: retryAfter(in90s), cat: classify.Transient, hint: 90 * time.Second},
		{name: "503 with an RFC 850 date", code: 503, header: retryAfter(now.Add(time.Minute).Format(time.RFC850)), cat: classify.Transient, hint: time.Minute},
		{name: "503 with an asctime date", code: 503, header: retryAfter(now.Add(time.Minute).Format(time.ANSIC)), cat: classify.Transient, hint: time.Minute},
		{name: "503 with a garbage value", code: 503, header: retryAfter("tomorrow"), cat: classify.Transient, text: "http 503 Service Unavailable"},
		{name: "503 without Retry-After", code: 503, cat: classify.Transient},
		{name: "500", code: 500, cat: classify.Transient, text: "http 500 Internal Server Error"},
		{name: "502 ignores its Retry-After", code: 502, header: retryAfter("10"), cat: classify.Transient},
		{name: "599 unnamed", code: 599, cat: classify.Transient, text: "http 599"},
		{name: "408", code: 408, cat: classify.Timeout, text: "http 408 Request Timeout"},
		{name: "400", code: 400, cat: classify.Permanent, text: "http 400 Bad Request"},
		{name: "404", code: 404, cat: classify.Permanent},
		{name: "401", code: 401, cat: classify.Permanent},
		{name: "409", code: 409, cat: classify.Permanent},
		{name: "a code below 100", code: 0, cat: classify.Unknown, text: "http 0"},
		{name: "a code past 599", code: 600, cat: classify.Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := httpfail.Options{Now: func() time.Time { return now }}.FromStatus(tt.code, tt.header)
			if tt.ok {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tt.cat, classify.Default().Classify(err), "category")
			d, hinted := classify.RetryAfter(err)
			assert.Equal(t, tt.hint > 0, hinted, "hinted")
			assert.Equal(t, tt.hint, d, "hint")
			var he *httpfail.Error
			require.ErrorAs(t, err, &he)
			assert.Equal(t, tt.code, he.Code)
			assert.Equal(t, tt.hint, he.RetryAfter)
			assert.Contains(t, err.Error(), "http "+he.Status)
			if tt.text != "" {
				assert.Equal(t, tt.text, err.Error())
			}
		})
	}
}

func TestFromResponseNamesTheRequestWithoutItsSecrets(t *testing.T) {
	u, err := url.Parse("https://user:pw@hooks.example.com/v1/deliver?token=s3cret#frag")
	require.NoError(t, err)
	resp := &http.Response{
		StatusCode: 503,
		Status:     "503 Down For Maintenance",
		Header:     retryAfter("7"),
		Request:    &http.Request{Method: http.MethodPost, URL: u},
	}
	err = httpfail.FromResponse(resp)
	require.Error(t, err)
	assert.Equal(t, "http POST https://hooks.example.com/v1/deliver: 503 Down For Maintenance (retry after 7s)", err.Error())
	assert.NotContains(t, err.Error(), "s3cret")
	assert.NotContains(t, err.Error(), "pw")
	assert.Equal(t, classify.Transient, classify.Default().Classify(err))
	d, ok := classify.RetryAfter(err)
	assert.True(t, ok)
	assert.Equal(t, 7*time.Second, d)

	resp.StatusCode, resp.Status = 201, "201 Created"
	assert.NoError(t, httpfail.FromResponse(resp))
}

func TestFromResponseWithoutAResponseIsAnUnknownFailure(t *testing.T) {
	err := httpfail.FromResponse(nil)
	require.Error(t, err)
	assert.Equal(t, classify.Unknown, classify.Default().Classify(err))
}

func TestMaxRetryAfterCutsALongHint(t *testing.T) {
	o := httpfail.Options{MaxRetryAfter: time.Minute}
	err := o.FromStatus(429, retryAfter("86400"))
	d, ok := classify.RetryAfter(err)
	assert.True(t, ok)
	assert.Equal(t, time.Minute, d)

	err = o.FromStatus(429, retryAfter("20"))
	d, _ = classify.RetryAfter(err)
	assert.Equal(t, 20*time.Second, d, "a shorter hint is kept")
}

// The wrapping keeps errors.Is and errors.As working through the markers.
func TestErrorIsReachableThroughItsMarkers(t *testing.T) {
	err := httpfail.FromStatus(429, retryAfter("3"))
	var he *httpfail.Error
	require.True(t, errors.As(err, &he))
	assert.Equal(t, 429, he.StatusCode())
}

func TestParseRetryAfter(t *testing.T) {
	tests := []struct {
		in   string
		d    time.Duration
		ok   bool
		name string
	}{
		{name: "seconds", in: "120", d: 2 * time.Minute, ok: true},
		{name: "zero", in: "0", d: 0, ok: true},
		{name: "leading zeros", in: "007", d: 7 * time.Second, ok: true},
		{name: "spaces and tabs", in: " \t5\t ", d: 5 * time.Second, ok: true},
		{name: "huge is 2^31 seconds", in: "99999999999999999999999999", d: (1 << 31) * time.Second, ok: true},
		{name: "just 2^31", in: "2147483648", d: (1 << 31) * time.Second, ok: true},
		{name: "IMF-fixdate", in: "Sun, 01 Mar 2026 12:01:00 GMT", d: time.Minute, ok: true},
		{name: "date past", in: "Sun, 01 Mar 2026 11:00:00 GMT", d: 0, ok: true},
		{name: "date far past", in: "Mon, 01 Jan 0001 00:00:00 GMT", d: 0, ok: true},
		{name: "date far ahead is 2^31 seconds", in: "Fri, 31 Dec 9999 23:59:59 GMT", d: (1 << 31) * time.Second, ok: true},
		{name: "empty", in: ""},
		{name: "blank", in: "   "},
		{name: "negative", in: "-1"},
		{name: "plus sign", in: "+1"},
		{name: "fraction", in: "1.5"},
		{name: "unit", in: "5s"},
		{name: "garbage", in: "later"},
		{name: "date without zone", in: "Sun, 01 Mar 2026 12:01:00"},
		{name: "non-ASCII digits", in: "١٢"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, ok := httpfail.ParseRetryAfter(tt.in, now)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.d, d)
		})
	}
}

// FuzzParseRetryAfter: any value gives either no hint or a delay in
// [0, 2^31 s]; delta-seconds are whole seconds; FromStatus carries exactly
// the positive delay it parsed.
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"120", "0", "-1", "1.5", "", " 7 ", "Sun, 01 Mar 2026 12:01:00 GMT",
		"Sunday, 01-Mar-26 12:01:00 GMT", "Sun Mar  1 12:01:00 2026", "99999999999999999999", "garbage"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := httpfail.ParseRetryAfter(v, now)
		if !ok {
			if d != 0 {
				t.Fatalf("ParseRetryAfter(%q) = %v, false: a refusal must carry 0", v, d)
			}
			return
		}
		if d < 0 || d > (1<<31)*time.Second {
			t.Fatalf("ParseRetryAfter(%q) = %v: outside [0, 2^31 s]", v, d)
		}
		trimmed := strings.Trim(v, " \t")
		if trimmed != "" && strings.Trim(trimmed, "0123456789") == "" {
			if d%time.Second != 0 {
				t.Fatalf("ParseRetryAfter(%q) = %v: delta-seconds out of range", v, d)
			}
		}
		// Whatever it reads, FromStatus carries it as the hint (or none for 0).
		err := httpfail.Options{Now: func() time.Time { return now }}.FromStatus(429, retryAfter(v))
		hint, hinted := classify.RetryAfter(err)
		if hinted != (d > 0) {
			t.Fatalf("FromStatus(429, %q): hinted %v, parsed %v", v, hinted, d)
		}
		if hinted && hint != d {
			t.Fatalf("FromStatus(429, %q): hint %v, parsed %v", v, hint, d)
		}
	})
}

// TestDepsNoHTTPInRootOrClassify: this package is where net/http is
// imported, so that the root and classify need not.
func TestDepsNoHTTPInRootOrClassify(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	for _, pkg := range []string{"github.com/ringwal/ringwal", "github.com/ringwal/ringwal/classify"} {
		out, err := exec.Command(goBin, "list", "-deps", pkg).CombinedOutput()
		require.NoError(t, err, "%s", out)
		for _, dep := range strings.Fields(string(out)) {
			assert.False(t, dep == "net/http" || strings.HasPrefix(dep, "net/http/"), "%s depends on %s", pkg, dep)
		}
	}
}
