// Package visible says which characters do not show as themselves: those
// a reader cannot see (zero-width, fillers, format characters) and those
// that change how the text around them is shown (the bidirectional
// controls that reverse it, line and paragraph separators, controls). It
// is the one definition that the root (which refuses them in new queue
// and schedule names) and internal/adminfmt (which escapes them in what
// the console and cmd/ringwal print) share, so that what one refuses the
// other shows escaped. It owns no escaping and imports nothing of the
// module.
package visible

import "unicode"

// Invisible reports whether r shows as something other than itself: not
// graphic (controls, C0 and C1 and DEL; format characters, Cf, among them
// U+200B..U+200F, U+202A..U+202E, U+2060..U+2064, U+2066..U+2069, U+061C,
// U+FEFF and U+00AD; private-use, surrogate and unassigned code points;
// the line and paragraph separators U+2028 and U+2029), a variation
// selector, or one of Unicode's other default-ignorable code points (the
// Hangul fillers U+115F, U+1160, U+3164 and U+FFA0 among them). Letters,
// marks, numbers, punctuation, symbols and spaces are not: they show.
func Invisible(r rune) bool {
	if r < 0x80 {
		return r < 0x20 || r == 0x7f
	}
	return !unicode.IsGraphic(r) || unicode.Is(unicode.Variation_Selector, r) ||
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r)
}
