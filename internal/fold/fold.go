// Package fold matches text without regard to case: the one substring
// search the module uses where a lower-cased copy would allocate per
// call (the dead-letter text search, the classifier's rules, header
// search). It owns nothing else.
package fold

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Contains reports whether needle, lower-cased, occurs in s without
// regard to case, allocating nothing (a dead-letter search reads every
// entry; an error is classified on every failure) unless a multi-byte
// rune folds to one of another width.
func Contains(s, needle string) bool {
	if len(needle) > len(s) {
		return false
	}
	for i := 0; i+len(needle) <= len(s); {
		if hasPrefixFold(s[i:], needle) {
			return true
		}
		if s[i] < utf8.RuneSelf {
			i++
		} else {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
		}
	}
	return false
}

// hasPrefixFold: s starts with needle (lower-case) without regard to case.
func hasPrefixFold(s, needle string) bool {
	for j := 0; j < len(needle); {
		if j >= len(s) {
			return false
		}
		c, n := s[j], needle[j]
		if c < utf8.RuneSelf && n < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != n {
				return false
			}
			j++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[j:])
		nr, nsize := utf8.DecodeRuneInString(needle[j:])
		if size != nsize || unicode.ToLower(r) != nr {
			return strings.HasPrefix(strings.ToLower(s), needle) // rare: multi-byte folding of unequal widths
		}
		j += size
	}
	return true
}
