package main

// The one sanitizer of the CLI's text output. Keys, header names and
// values, dedup IDs, failure texts (often a downstream's answer), notes
// and error texts come from producers, downstreams and operators, or,
// with --addr, from whatever answers there. Printed raw, an escape
// sequence in one of them reaches the operator's terminal, which acts on
// it (retitle the window, rewrite what is on screen, in some terminals
// worse), and a tab or a newline forges table cells and rows. Every text
// printer passes such text through safe first; JSON output passes
// through adminfmt.EscapeJSON (encoding/json escapes control characters
// itself, but leaves U+202E and the like raw).

import (
	"strings"

	"github.com/ringwal/ringwal/internal/adminfmt"
)

// safe returns s with everything a terminal could act on, that could break
// a table's layout, or that shows as nothing or reorders the line
// (U+200B, U+202E), written as a visible Go-style escape: adminfmt.Escape,
// the console's escaping too.
func safe(s string) string { return adminfmt.Escape(s) }

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
