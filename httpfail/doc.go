// Package httpfail turns an HTTP response a handler did not like into a
// classified error, so that the engine retries, backs off or gives up as
// the status asks, without a hand-written error type or Retry-After
// parser in every handler.
//
// The mapping (FromStatus, FromResponse):
//
//   - 1xx, 2xx, 3xx: nil, not a failure;
//   - 408 Request Timeout: classify.Timeout;
//   - 429 Too Many Requests: classify.RateLimited, with its Retry-After as
//     the retry hint (classify.After), which makes the engine pause the
//     message's key until then instead of counting a breaker failure;
//   - 503 Service Unavailable: classify.Transient, with its Retry-After as
//     the retry hint;
//   - other 5xx: classify.Transient; other 4xx: classify.Permanent;
//   - a code outside 100-599: classify.Unknown.
//
// Retry-After is read in both of its forms (RFC 9110 section 10.2.3):
// delta-seconds ("120") and an HTTP-date ("Fri, 31 Dec 1999 23:59:59
// GMT", and the two obsolete date forms). A value that is neither, or is
// negative, gives no hint (the category is unchanged, so the category's
// backoff applies); so does a zero delay or a date that has passed.
//
// The error's text holds the response's status (and, from a response,
// the request's method and URL without its query), so a dead letter says
// what the target answered; errors.As with *Error gives the code back.
//
// It is its own package so that neither the root package nor classify
// imports net/http.
package httpfail
