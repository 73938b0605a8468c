// Package fold matches text without regard to case: the one substring
// search the module uses where a lower-cased copy would allocate per
// call (the dead-letter text search, the classifier's rules, header
// search). It owns nothing else.
package fold

import (
	"unicode"
	"unicode/utf8"
)

// Contains reports whether needle, lower-cased, occurs in s without
// regard to case, allocating nothing (a dead-letter search reads every
// entry; an error is classified on every failure), in time linear in s
// for a needle of a few runes.
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
// The two advance separately: a rune and its lower case may differ in
// width (the Kelvin sign, 3 bytes, is a "k").
func hasPrefixFold(s, needle string) bool {
	i, j := 0, 0
	for j < len(needle) {
		if i >= len(s) {
			return false
		}
		c, n := s[i], needle[j]
		if c < utf8.RuneSelf && n < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != n {
				return false
			}
			i++
			j++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		nr, nsize := utf8.DecodeRuneInString(needle[j:])
		if unicode.ToLower(r) != nr {
			return false
		}
		i += size
		j += nsize
	}
	return true
}
