package classify

import (
	"context"
	"errors"
	"io"
	"syscall"

	"github.com/ringwal/ringwal/internal/fold"
)

// Classifier maps an error to a failure Category. Implementations must be
// safe for concurrent use and should not block: the engine calls Classify
// on every nack.
type Classifier interface {
	// Classify returns err's category; Unknown if nothing matches or err is
	// nil.
	Classify(err error) Category
}

// ClassifierFunc adapts a function to Classifier. A custom classifier
// usually handles its own error types and falls back on Default:
//
//	classify.ClassifierFunc(func(err error) classify.Category {
//		if errors.Is(err, errQuotaGone) {
//			return classify.Permanent
//		}
//		return classify.Default().Classify(err)
//	})
type ClassifierFunc func(err error) Category

// Classify calls f(err).
func (f ClassifierFunc) Classify(err error) Category { return f(err) }

// Default returns the built-in classifier. It tries the rules below in this
// order; the first rule that matches anywhere in err's tree decides:
//
//  1. An explicit marker: Mark(err, c) gives c. After(err, d) is not a
//     category marker; its err is classified as usual.
//  2. A Retry-After hint: a RetryAfter() time.Duration method returning a
//     positive duration gives RateLimited.
//  3. A timeout gives Timeout: context.DeadlineExceeded, or a Timeout()
//     bool method that returns true. Such methods are on net.Error,
//     *url.Error, os.ErrDeadlineExceeded, and syscall.Errno for ETIMEDOUT
//     and EAGAIN.
//  4. A syscall.Errno: ECONNREFUSED, ECONNRESET, ECONNABORTED, EPIPE,
//     EHOSTUNREACH, EHOSTDOWN, ENETUNREACH, ENETDOWN, ENETRESET, ENOTCONN,
//     ESHUTDOWN, EINTR give Transient. ENOSPC, ENOMEM, EMFILE, ENFILE,
//     EDQUOT, ENOBUFS give Resource. EACCES, EPERM, EROFS give Permanent.
//  5. An HTTP-like status, from a StatusCode() int or HTTPStatusCode() int
//     method: 429 gives RateLimited, 408 Timeout, other 4xx Permanent, 5xx
//     Transient. Other codes do not match.
//  6. A network error that says what it is gives Transient. That is a
//     net.Error whose Temporary() is true, or whose cause is io.EOF or
//     io.ErrUnexpectedEOF: the peer closed the connection mid-exchange
//     ("Post …: EOF"). A net.Error is any error with Timeout() bool and
//     Temporary() bool methods, such as *net.OpError, *url.Error and
//     *net.DNSError. A net.Error's timeout is rule 3. What it wraps is
//     searched like any other child, so the cause decides when it is
//     known: an errno under a *net.OpError, a *net.OpError under a
//     *url.Error. A net.Error that is neither temporary nor over a known
//     cause falls through to the text. Such are a bad address, an unknown
//     network and a host not found.
//  7. A *PanicError gives Poison. The search does not descend into it: a
//     panic is a handler bug whatever value was thrown.
//  8. The message text, as a last resort, case-insensitively (see
//     textRules): "no space left", "too many requests", "timeout",
//     "connection refused", "connection reset", "broken pipe", "network
//     error", "unauthorized", "forbidden", "authentication failed",
//     "invalid token", "permission denied" and the like.
//
// Otherwise the result is Unknown (also for a nil err, and for
// context.Canceled, which says only that somebody stopped waiting).
//
// "Anywhere in err's tree" means every error reachable through Unwrap()
// error and Unwrap() []error (errors.Join, fmt.Errorf with several %w),
// visited depth-first, left to right, parent before children: the order
// errors.Is and errors.As use. Within one rule the first error visited
// wins, so the outermost Mark wins over an inner one, and in
// errors.Join(a, b) a's timeout wins over b's. Rules are ranked before
// positions so that an explicit Mark deep inside a wrapper still beats a
// heuristic nearer the top, and the message text, which wrappers repeat
// from their children, is read only when no structure matched. The
// search stops at depth 64 to bound the cost of a pathological chain.
//
// Rules 1 to 7 do not allocate (net/url and net are not imported: a
// network error is recognised by its methods, so the package stays free of
// the resolver); rule 8 calls Error() on each node.
func Default() Classifier { return defaultClassifier{} }

type defaultClassifier struct{}

// ranks of the rules in Default, lower wins.
const (
	rankMarker = iota
	rankRetryAfter
	rankTimeout
	rankErrno
	rankStatus
	rankNetwork
	rankPanic
	rankNone // nothing structural matched: fall back on text
)

// maxDepth bounds the tree walk; wrapping chains are a handful deep in
// practice.
const maxDepth = 64

// match is the best rule found so far in a walk.
type match struct {
	rank int
	cat  Category
}

func (defaultClassifier) Classify(err error) Category {
	if err == nil {
		return Unknown
	}
	m := match{rank: rankNone}
	walk(err, &m, 0)
	if m.rank < rankNone {
		return m.cat
	}
	if c, ok := classifyText(err, 0); ok {
		return c
	}
	return Unknown
}

// walk visits err's tree in pre-order and records in m the lowest-ranked
// structural rule that matches, keeping the first node for a tie.
func walk(err error, m *match, depth int) {
	if err == nil || depth > maxDepth || m.rank == rankMarker {
		return
	}
	if r, c := classifyNode(err, m.rank); r < m.rank {
		m.rank, m.cat = r, c
	}
	switch u := err.(type) {
	case *PanicError:
		// Do not descend: see rule 6.
	case interface{ Unwrap() error }:
		walk(u.Unwrap(), m, depth+1)
	case interface{ Unwrap() []error }:
		for _, c := range u.Unwrap() {
			walk(c, m, depth+1)
		}
	}
}

// classifyNode applies the structural rules ranked below limit to err
// alone, not its children, and returns the best one's rank and category,
// or limit if none matches.
func classifyNode(err error, limit int) (int, Category) {
	if e, ok := err.(*markedError); ok {
		return rankMarker, e.cat
	}
	if limit <= rankRetryAfter {
		return limit, Unknown
	}
	if e, ok := err.(retryAfterer); ok && e.RetryAfter() > 0 {
		return rankRetryAfter, RateLimited
	}
	if limit <= rankTimeout {
		return limit, Unknown
	}
	if err == context.DeadlineExceeded { // one node: walk covers the tree
		return rankTimeout, Timeout
	}
	if e, ok := err.(interface{ Timeout() bool }); ok && e.Timeout() {
		return rankTimeout, Timeout
	}
	if limit <= rankErrno {
		return limit, Unknown
	}
	if e, ok := err.(syscall.Errno); ok {
		if c, ok := errnoCategory(e); ok {
			return rankErrno, c
		}
	}
	if limit <= rankStatus {
		return limit, Unknown
	}
	if c, ok := statusCategory(err); ok {
		return rankStatus, c
	}
	if limit <= rankNetwork {
		return limit, Unknown
	}
	if networkTransient(err) {
		return rankNetwork, Transient
	}
	if limit <= rankPanic {
		return limit, Unknown
	}
	if _, ok := err.(*PanicError); ok {
		return rankPanic, Poison
	}
	return limit, Unknown
}

// errnoCategory is rule 4 of Default.
func errnoCategory(e syscall.Errno) (Category, bool) {
	switch e {
	case syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED,
		syscall.EPIPE, syscall.EHOSTUNREACH, syscall.EHOSTDOWN,
		syscall.ENETUNREACH, syscall.ENETDOWN, syscall.ENETRESET,
		syscall.ENOTCONN, syscall.ESHUTDOWN, syscall.EINTR:
		return Transient, true
	case syscall.ENOSPC, syscall.ENOMEM, syscall.EMFILE, syscall.ENFILE,
		syscall.EDQUOT, syscall.ENOBUFS:
		return Resource, true
	case syscall.EACCES, syscall.EPERM, syscall.EROFS:
		// A permission or read-only file system does not fix itself in
		// the minutes a retry schedule spans.
		return Permanent, true
	}
	return Unknown, false
}

// statusCategory is rule 5 of Default. HTTPStatusCode is the AWS SDK's
// spelling of StatusCode.
func statusCategory(err error) (Category, bool) {
	var code int
	switch e := err.(type) {
	case interface{ StatusCode() int }:
		code = e.StatusCode()
	case interface{ HTTPStatusCode() int }:
		code = e.HTTPStatusCode()
	default:
		return Unknown, false
	}
	switch {
	case code == 429:
		return RateLimited, true
	case code == 408:
		return Timeout, true
	case code >= 400 && code < 500:
		return Permanent, true
	case code >= 500 && code < 600:
		return Transient, true
	}
	return Unknown, false
}

// netError is net.Error's method set, spelled here so that the package
// need not import net (and, with cgo, its resolver) to recognise one.
type netError interface {
	error
	Timeout() bool
	Temporary() bool
}

// networkTransient is rule 6 of Default: err alone (its children are
// walked separately) is a network error that a retry may get past.
// Temporary is deprecated in net for timeouts, which rule 3 handles first;
// what it still says is true of the causes that pass (a reset or aborted
// connection, a DNS server's temporary failure).
func networkTransient(err error) bool {
	e, ok := err.(netError)
	if !ok {
		return false
	}
	if e.Temporary() {
		return true
	}
	u, ok := err.(interface{ Unwrap() error })
	if !ok {
		return false
	}
	cause := u.Unwrap()
	return cause == io.EOF || errors.Is(cause, io.ErrUnexpectedEOF)
}

// textRules is rule 8 of Default: lower-case substrings, tried in order, so
// the more specific phrases come first ("rate limit exceeded" is not a
// timeout even though "deadline exceeded" is).
var textRules = [...]struct {
	substr string
	cat    Category
}{
	{"no space left", Resource},
	{"disk full", Resource},
	{"out of memory", Resource},
	{"cannot allocate memory", Resource},
	{"too many open files", Resource},
	{"quota exceeded", Resource},
	{"too many requests", RateLimited},
	{"rate limit", RateLimited},
	{"ratelimit", RateLimited},
	{"throttl", RateLimited},
	{"timeout", Timeout},
	{"timed out", Timeout},
	{"deadline exceeded", Timeout},
	{"connection refused", Transient},
	{"connection reset", Transient},
	{"connection aborted", Transient},
	{"connection closed", Transient},
	{"connection lost", Transient},
	{"use of closed network connection", Transient},
	{"broken pipe", Transient},
	{"unexpected eof", Transient},
	{"no route to host", Transient},
	{"network is unreachable", Transient},
	{"network is down", Transient},
	{"network error", Transient},
	{"network failure", Transient},
	{"service unavailable", Transient},
	{"bad gateway", Transient},
	{"temporarily unavailable", Transient},
	{"temporary failure", Transient},
	{"try again", Transient},
	{"permission denied", Permanent},
	{"access denied", Permanent},
	{"forbidden", Permanent},
	{"unauthorized", Permanent},
	{"unauthorised", Permanent},
	{"not authorized", Permanent},
	{"unauthenticated", Permanent},
	{"authentication failed", Permanent},
	{"authentication failure", Permanent},
	{"authentication required", Permanent},
	{"authorization failed", Permanent},
	{"auth failed", Permanent},
	{"invalid token", Permanent},
	{"invalid credentials", Permanent},
	{"invalid api key", Permanent},
	{"bad credentials", Permanent},
	{"bad request", Permanent},
}

// classifyText applies textRules to each node's text in pre-order; the
// first node with a matching phrase wins. The root usually decides, since
// wrappers repeat their children's text; visiting children too covers
// wrappers that replace it.
func classifyText(err error, depth int) (Category, bool) {
	if err == nil || depth > maxDepth {
		return Unknown, false
	}
	s := err.Error()
	for _, r := range textRules {
		if fold.Contains(s, r.substr) {
			return r.cat, true
		}
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return classifyText(u.Unwrap(), depth+1)
	case interface{ Unwrap() []error }:
		for _, c := range u.Unwrap() {
			if cat, ok := classifyText(c, depth+1); ok {
				return cat, true
			}
		}
	}
	return Unknown, false
}
