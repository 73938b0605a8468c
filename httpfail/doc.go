// Package httpfail turns an HTTP response a handler did not like into a
// classified error, so that the engine retries, backs off or gives up as
// the status asks, without a hand-written error type or Retry-After
// parser in every handler.
//
// The mapping of FromStatus and FromResponse follows. A 1xx, 2xx or 3xx
// status gives nil, not a failure. Status 408 Request Timeout gives
// classify.Timeout. Status 429 Too Many Requests gives
// classify.RateLimited, with its Retry-After as the retry hint
// (classify.After). That hint makes the engine pause the message's key
// until then instead of counting a breaker failure. Status 503 Service
// Unavailable gives classify.Transient, with its Retry-After as the retry
// hint. Other 5xx give classify.Transient, other 4xx classify.Permanent.
// A code outside 100-599 gives classify.Unknown.
//
// Retry-After is read in both of its forms (RFC 9110 section 10.2.3):
// delta-seconds ("120") and an HTTP-date. An HTTP-date is "Fri, 31 Dec
// 1999 23:59:59 GMT", or one of the two obsolete date forms. A value that
// is neither, or is negative, gives no hint. The category is then
// unchanged, so the category's backoff applies. A zero delay or a date
// that has passed gives no hint either.
//
// The error's text holds the response's status. From a response, it also
// holds the request's method and URL without its query. So a dead letter
// says what the target answered; errors.As with *Error gives the code
// back.
//
// It is its own package so that neither the root package nor classify
// imports net/http.
package httpfail
