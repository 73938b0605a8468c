package main

// The one sanitizer of the CLI's text output. Keys, header names and
// values, dedup IDs, failure texts (often a downstream's answer), notes
// and error texts come from producers, downstreams and operators, or,
// with --addr, from whatever answers there. Printed raw, an escape
// sequence in one of them reaches the operator's terminal, which acts on
// it (retitle the window, rewrite what is on screen, in some terminals
// worse), and a tab or a newline forges table cells and rows. Every text
// printer passes such text through safe first; JSON output is left alone
// (encoding/json escapes control characters itself).

import (
	"strings"
	"unicode/utf8"
)

// safe returns s with everything a terminal could act on, or that could
// break a table's layout, written as a visible Go-style escape: C0
// controls (\t, \n, \r by name, the rest as \x1b and the like), DEL
// (\x7f), C1 controls (\u009b), Unicode's bidirectional overrides and
// isolates and line and paragraph separators (\u202e, \u2028; they reorder
// or break what is shown), and bytes that are not UTF-8 (\xff: a stray
// 0x9b is a CSI to an 8-bit terminal). Anything else, non-ASCII letters
// included, is kept. Backslashes are kept as they are, so a text that
// already reads "\x1b" and an escaped ESC look alike: the point is that
// neither reaches the terminal as an ESC.
func safe(s string) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, n) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s // the common case: nothing to escape, no copy
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			writeEscape(&b, `\x`, uint32(s[i]), 2)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80 && unsafeRune(r, n):
			writeEscape(&b, `\x`, uint32(r), 2)
		case unsafeRune(r, n):
			writeEscape(&b, `\u`, uint32(r), 4)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// unsafeRune reports whether the rune r, n bytes long, is escaped by safe.
func unsafeRune(r rune, n int) bool {
	switch {
	case r == utf8.RuneError && n == 1: // not UTF-8
		return true
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f: // C0, DEL, C1
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, // bidi marks
		r >= 0x202a && r <= 0x202e, // bidi embeddings and overrides
		r >= 0x2066 && r <= 0x2069, // bidi isolates
		r == 0x2028, r == 0x2029:   // line and paragraph separators
		return true
	}
	return false
}

// writeEscape writes prefix and v in hex, zero-padded to digits.
func writeEscape(b *strings.Builder, prefix string, v uint32, digits int) {
	const hex = "0123456789abcdef"
	b.WriteString(prefix)
	for d := digits - 1; d >= 0; d-- {
		b.WriteByte(hex[v>>(4*d)&0xf])
	}
}

// cell is a table cell of outside text: safe, "-" when empty.
func cell(s string) string { return safe(orDash(s)) }

// safeLines is safe for a text printed over several lines (an error
// message): its newlines are kept, everything else is escaped.
func safeLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = safe(l)
	}
	return strings.Join(lines, "\n")
}
