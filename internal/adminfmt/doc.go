// Package adminfmt holds what the admin console and cmd/ringwal share but
// no user of package admin needs: the formatting of counts, sizes and
// durations (Count, ByteSize, Duration), so that the console and the CLI
// print numbers alike, and the parsers of form and flag values the server
// and the CLI read (ParseUntil, ParseStates), the wait reasons' order
// (WaitReasons), and the one escaping of outside text for display
// (Escape, EscapeText, EscapeJSON: what does not show as itself, U+202E
// and U+200B among it, written as an escape). It imports the root, as admin does. It is internal
// so that these helpers are not part of admin's public surface: a Go
// client of the admin API sends strings and typed queries and never needs
// them.
package adminfmt
