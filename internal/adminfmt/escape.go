package adminfmt

// The one escaping of outside text for display: queue, schedule and key
// names, header names and values, dedup IDs, failure texts and notes come
// from producers, downstreams and operators (a queue or schedule name
// from a log an older version wrote, too). Shown raw, a terminal acts on
// an escape sequence in one (retitles the window, rewrites the screen), a
// tab or a newline forges table cells and rows, and a character that
// shows as nothing (U+200B) or reverses the text after it (U+202E) makes
// one name read as another, in a terminal and in a browser alike. The
// console's templates, the CLI's text printers and its JSON printers
// (`ringwal wal dump` among them) pass such text through these.

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/ringwal/ringwal/internal/visible"
)

// Escape returns s with everything that does not show as itself written
// as a visible Go-style escape: \t, \n and \r by name, the other ASCII
// controls and DEL as \x1b and the like, every other character
// visible.Invisible reports (C1 controls, U+200B, the bidirectional
// controls U+202A..U+202E and U+2066..U+2069, U+2028, fillers...) as
// \u202e or \U000e0041, and bytes that are not UTF-8 as \xff (a stray 0x9b
// is a CSI to an 8-bit terminal). Anything else, non-ASCII letters
// included, is kept, and s itself is returned, not copied, when nothing
// needs escaping. Backslashes are kept as they are, so a text that
// already reads "\x1b" and an escaped ESC look alike: the point is that
// neither acts as an ESC.
func Escape(s string) string { return escape(s, false) }

// EscapeText is Escape for a text shown over several lines (a failure's
// error with its stack, a note): its newlines and tabs are kept, a
// carriage return and everything else Escape escapes is escaped.
func EscapeText(s string) string { return escape(s, true) }

func escape(s string, lines bool) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if escaped(r, n, lines) {
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
		case !escaped(r, n, lines):
			b.WriteString(s[i : i+n])
		case r == utf8.RuneError && n == 1:
			writeHex(&b, `\x`, uint32(s[i]), 2)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80:
			writeHex(&b, `\x`, uint32(r), 2)
		case r > 0xffff:
			writeHex(&b, `\U`, uint32(r), 8)
		default:
			writeHex(&b, `\u`, uint32(r), 4)
		}
		i += n
	}
	return b.String()
}

// escaped reports whether the rune r, n bytes long, is escaped; lines
// keeps newlines and tabs.
func escaped(r rune, n int, lines bool) bool {
	switch {
	case r == utf8.RuneError && n == 1: // not UTF-8
		return true
	case lines && (r == '\n' || r == '\t'):
		return false
	}
	return visible.Invisible(r)
}

// writeHex writes prefix and v in hex, zero-padded to digits.
func writeHex(b *strings.Builder, prefix string, v uint32, digits int) {
	const hex = "0123456789abcdef"
	b.WriteString(prefix)
	for d := digits - 1; d >= 0; d-- {
		b.WriteByte(hex[v>>(4*d)&0xf])
	}
}

// EscapeJSON returns js, JSON as encoding/json writes it, with every
// character visible.Invisible reports that encoding/json leaves raw
// (U+202E, U+200B, DEL and the like: it escapes only the C0 controls and,
// by default, U+2028 and U+2029) written as a \u escape (a surrogate pair
// past U+FFFF). The JSON means exactly what it meant, every string the
// same string once decoded, but a terminal shows each such character as
// its escape rather than act on it. Outside strings JSON holds only
// ASCII, so every such character is in a string. js is returned as it
// is, not copied, when it holds none (always when it is all ASCII but
// DEL).
func EscapeJSON(js []byte) []byte {
	i := 0
	for i < len(js) {
		if js[i] == 0x7f {
			break
		}
		if js[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(js[i:])
		if r != utf8.RuneError && visible.Invisible(r) {
			break
		}
		i += n
	}
	if i == len(js) {
		return js
	}
	out := make([]byte, 0, len(js)+16)
	out = append(out, js[:i]...)
	for i < len(js) {
		r, n := utf8.DecodeRune(js[i:])
		switch {
		case r == utf8.RuneError && n == 1: // not from encoding/json; keep it
			out = append(out, js[i])
		case r != utf8.RuneError && visible.Invisible(r) && (r >= 0x80 || r == 0x7f):
			if r > 0xffff {
				hi, lo := utf16.EncodeRune(r)
				out = appendU(appendU(out, hi), lo)
			} else {
				out = appendU(out, r)
			}
		default:
			out = append(out, js[i:i+n]...)
		}
		i += n
	}
	return out
}

// appendU appends r (at most U+FFFF) as a JSON \u escape.
func appendU(out []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	return append(out, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
}
