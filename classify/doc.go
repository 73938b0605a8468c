// Package classify turns a handler's error into a failure Category and
// decides, per category, whether and when a message is tried again.
//
// It owns Category, the closed set of failure kinds: Unknown, Transient,
// Timeout, RateLimited, Resource, Permanent, Poison, Expired. Each has
// text forms for logs, metrics labels and the admin API. It owns
// Classifier and Default, the rules that map an error to a Category.
//
// It owns the error wrappers a handler uses to say what it knows better
// than any heuristic. Mark says this failure is of category c. After says
// retry exactly after d. Panic and PanicError say the handler panicked.
//
// It owns RetryPolicy, DefaultPolicy and the backoff computation. That
// has the four jitter kinds of the AWS Architecture Blog post
// "Exponential Backoff and Jitter". It also has a proportional one (±p %
// around each delay), for a schedule written down as "1 s, 2 s, 4 s, 8 s
// with ±10 % jitter". And it owns CountsAgainstBreaker, which says which
// categories are evidence that a downstream target is unhealthy.
//
// It does not own scheduling, attempt counting or dead-lettering: the engine
// counts deliveries, asks ShouldRetry and Delay, and parks messages in the
// dlq package. It has no state: every function is safe for concurrent use.
// It imports the standard library only.
//
// Exported surface: all of it is for applications: handlers mark and wrap
// errors (Mark, After, Panic, PanicError), Options take a Classifier and
// per-category RetryPolicy values, and Category names what Stats, dead
// letters and metrics report.
package classify
