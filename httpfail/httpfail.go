package httpfail

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ringwal/ringwal/classify"
)

// Error is the failure FromStatus and FromResponse return for a status
// that is not a success. It is always wrapped in classify's markers (its
// category, and its hint when there is one): reach it with errors.As.
type Error struct {
	// Code is the response's status code.
	Code int
	// Status is the status line's text, "503 Service Unavailable" (a
	// response's own Status when there is one).
	Status string
	// Request is "METHOD scheme://host/path" of the request that got the
	// response (no user info, query or fragment, which may hold secrets);
	// "" when unknown (FromStatus).
	Request string
	// RetryAfter is the Retry-After hint the error carries (classify.After),
	// 0 when it carries none.
	RetryAfter time.Duration
}

// Error returns "[request: ]status[ (retry after d)]".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("http ")
	if e.Request != "" {
		b.WriteString(e.Request)
		b.WriteString(": ")
	}
	b.WriteString(e.Status)
	if e.RetryAfter > 0 {
		b.WriteString(" (retry after ")
		b.WriteString(e.RetryAfter.String())
		b.WriteString(")")
	}
	return b.String()
}

// StatusCode returns Code, so that a classifier that reads status codes
// (classify.Default's rule for StatusCode() int) sees it too.
//
// Error deliberately has no RetryAfter() method: classify.Default reads
// one as "rate limited", and a 503's hint is not that. The hint travels
// in the classify.After wrapper around it instead.
func (e *Error) StatusCode() int { return e.Code }

// Options is the clock and bound FromStatus and FromResponse use; the
// zero value is the real clock and no bound. Its methods are safe for
// concurrent use.
type Options struct {
	// Now is the clock an HTTP-date Retry-After is measured against; nil
	// is time.Now. A test on a fake clock passes the fake's Now.
	Now func() time.Time
	// MaxRetryAfter bounds a hint: a longer Retry-After is cut to it (a
	// target that asks for a day would otherwise pause its key for a day).
	// 0 means no bound beyond the 2^31 seconds of RFC 9111 section 1.2.2.
	MaxRetryAfter time.Duration
}

// FromStatus is Options{}.FromStatus: Retry-After dates measured against
// time.Now.
func FromStatus(code int, header http.Header) error { return Options{}.FromStatus(code, header) }

// FromResponse is Options{}.FromResponse: Retry-After dates measured
// against time.Now.
func FromResponse(resp *http.Response) error { return Options{}.FromResponse(resp) }

// FromStatus returns the classified error for a response with this status
// code and header (nil header: no Retry-After), or nil for 1xx, 2xx and
// 3xx. See the package comment for the mapping.
func (o Options) FromStatus(code int, header http.Header) error {
	return o.classify(code, "", "", header)
}

// FromResponse is FromStatus for resp's status and header, with the
// response's own status text and its request's method and URL in the
// error. It does not read or close the body. A nil resp is an error of
// category Unknown (not a success: the caller lost the response).
func (o Options) FromResponse(resp *http.Response) error {
	if resp == nil {
		return classify.Mark(&Error{Status: "no response (nil *http.Response)"}, classify.Unknown)
	}
	return o.classify(resp.StatusCode, resp.Status, requestText(resp.Request), resp.Header)
}

func (o Options) classify(code int, status, request string, header http.Header) error {
	if code >= 100 && code < 400 {
		return nil
	}
	if status == "" {
		status = strconv.Itoa(code)
		if text := http.StatusText(code); text != "" {
			status += " " + text
		}
	}
	e := &Error{Code: code, Status: status, Request: request}
	var cat classify.Category
	switch {
	case code == http.StatusRequestTimeout:
		cat = classify.Timeout
	case code == http.StatusTooManyRequests:
		cat = classify.RateLimited
	case code >= 400 && code < 500:
		cat = classify.Permanent
	case code >= 500 && code < 600:
		cat = classify.Transient
	default:
		cat = classify.Unknown
	}
	if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
		if d, ok := o.hint(header); ok {
			e.RetryAfter = d
			return classify.Mark(classify.After(e, d), cat)
		}
	}
	return classify.Mark(e, cat)
}

// hint reads header's Retry-After: ok only for a positive delay, cut to
// MaxRetryAfter.
func (o Options) hint(header http.Header) (time.Duration, bool) {
	v := header.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	d, ok := ParseRetryAfter(v, now())
	if !ok || d <= 0 {
		return 0, false
	}
	if o.MaxRetryAfter > 0 && d > o.MaxRetryAfter {
		d = o.MaxRetryAfter
	}
	return d, true
}

// requestText is "METHOD scheme://host/path" of req, without user info,
// query or fragment; "" without a request or URL.
func requestText(req *http.Request) string {
	if req == nil || req.URL == nil {
		return ""
	}
	u := *req.URL
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	method := req.Method
	if method == "" {
		method = http.MethodGet // net/http's meaning of ""
	}
	return method + " " + u.String()
}
