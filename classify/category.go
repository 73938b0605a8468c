package classify

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrInvalid is wrapped by every error this package returns for a bad
// argument: an unknown category name or a malformed RetryPolicy.
var ErrInvalid = errors.New("ringwal/classify: invalid argument")

// Category is the kind of a failure. It decides the retry policy, whether
// the failure counts against the target's circuit breaker, and which
// dead-letter queue the message ends in. Unknown is the zero value.
type Category uint8

// The categories. The numeric values are persisted by the write-ahead log
// and the dead-letter queues: append new ones, never renumber.
const (
	// Unknown is a failure no rule recognised. It is retried conservatively.
	Unknown Category = iota
	// Transient is a failure expected to go away by itself: connection
	// refused or reset, 5xx responses.
	Transient
	// Timeout is a deadline that passed: context.DeadlineExceeded, a
	// net.Error whose Timeout() is true, HTTP 408, an expired lease.
	Timeout
	// RateLimited means the target asked us to slow down: HTTP 429 or a
	// Retry-After hint.
	RateLimited
	// Resource is local exhaustion: disk full, out of memory, out of file
	// descriptors.
	Resource
	// Permanent is a failure that retrying cannot fix: a 4xx response, or
	// an error the handler marked with Mark(err, Permanent).
	Permanent
	// Poison is a message that crashes its handler (a recovered panic).
	Poison
	// Expired is a message whose TTL passed before it was handled. Only the
	// engine assigns it.
	Expired

	numCategories // keep last
)

var categoryNames = [numCategories]string{
	Unknown:     "unknown",
	Transient:   "transient",
	Timeout:     "timeout",
	RateLimited: "rate_limited",
	Resource:    "resource",
	Permanent:   "permanent",
	Poison:      "poison",
	Expired:     "expired",
}

// Categories returns every category in numeric order, Unknown first. The
// slice is fresh on each call, so the caller may keep or modify it (the
// engine uses it to pre-register one metric series per category).
func Categories() []Category {
	cs := make([]Category, numCategories)
	for i := range cs {
		cs[i] = Category(i)
	}
	return cs
}

// Valid reports whether c is one of the declared categories.
func (c Category) Valid() bool { return c < numCategories }

// String returns the lower-case snake_case name of c ("rate_limited"), or
// "category(N)" for a value outside the declared set.
func (c Category) String() string {
	if c.Valid() {
		return categoryNames[c]
	}
	return "category(" + strconv.Itoa(int(c)) + ")"
}

// MarshalText implements encoding.TextMarshaler so that a Category reads as
// its name in JSON, including as a map key. An undeclared value is an error
// rather than "category(N)", which could not be parsed back.
func (c Category) MarshalText() ([]byte, error) {
	if !c.Valid() {
		return nil, fmt.Errorf("marshal %s: %w", c, ErrInvalid)
	}
	return []byte(categoryNames[c]), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseCategory.
func (c *Category) UnmarshalText(b []byte) error {
	v, err := ParseCategory(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// ParseCategory returns the category named s. It ignores case and the
// separators '_', '-' and ' ', so "rate_limited", "RateLimited",
// "rate-limited" and "ratelimited" are all RateLimited. An unknown name
// returns an error wrapping ErrInvalid that quotes s and lists the names.
func ParseCategory(s string) (Category, error) {
	norm := normalizeName(s)
	for i, name := range categoryNames {
		if norm == strings.ReplaceAll(name, "_", "") {
			return Category(i), nil
		}
	}
	return Unknown, fmt.Errorf("parse category %q: not one of %s: %w",
		s, strings.Join(categoryNames[:], ", "), ErrInvalid)
}

// normalizeName lower-cases s and drops the separators ParseCategory
// ignores.
func normalizeName(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range strings.ToLower(strings.TrimSpace(s)) {
		if r == '_' || r == '-' || r == ' ' {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// CountsAgainstBreaker reports whether a failure of category c is evidence
// that the downstream target is unhealthy, and so counts against the
// target's circuit breaker: true for Transient, Timeout, RateLimited and
// Resource only. A Permanent failure (the target answered "no"), a Poison
// message (our handler crashed), an Expired message (never sent) and an
// Unknown error say nothing reliable about the target.
func CountsAgainstBreaker(c Category) bool {
	switch c {
	case Transient, Timeout, RateLimited, Resource:
		return true
	}
	return false
}
