package ringwal

import (
	"strconv"
	"unicode/utf8"
)

// Bounds on what a message carries besides its payload, so that one
// message cannot cost the heap and the log far more than
// Options.MaxPayload says. They bound the headers a producer sends,
// refused past them with ErrInvalid at enqueue. They bound the error
// texts its failures keep, cut to a bound.
const (
	// maxHeaders bounds a message's header entries.
	maxHeaders = 256
	// maxHeaderName bounds one header's name, in bytes.
	maxHeaderName = 1 << 10
	// maxHeaderBytes bounds a message's headers, names and values added
	// up: 64 KiB, a sixteenth of the default MaxPayload, well past what
	// trace context, a job's kind and routing metadata take, and what
	// HTTP servers commonly allow a request's header block.
	maxHeaderBytes = 64 << 10
	// maxFailureText bounds the error text a failure keeps, in bytes. A
	// message's failures (Info.LastError), its dead letter's Failures and
	// their log records hold a text cut to it (failureText). So a
	// downstream that answers every call with a megabyte of HTML costs
	// 4 KiB a failure. A panic's text with its stack keeps its first
	// frames.
	maxFailureText = 4 << 10
)

// validHeaders checks h against the header bounds. Messages without
// headers (len 0) do not call it.
func validHeaders(h map[string]string) error {
	if len(h) > maxHeaders {
		return invalidf("%d headers exceed %d", len(h), maxHeaders)
	}
	total := 0
	for k, v := range h {
		if len(k) > maxHeaderName {
			return invalidf("header name of %d bytes exceeds %d", len(k), maxHeaderName)
		}
		total += len(k) + len(v)
	}
	if total > maxHeaderBytes {
		return invalidf("headers of %d bytes (names and values) exceed %d", total, maxHeaderBytes)
	}
	return nil
}

// failureText returns s if it is within maxFailureText bytes, else its
// start cut at a UTF-8 boundary and followed by " …[cut from N bytes]".
// All of it is within the bound, so cutting again changes nothing: a
// replayed text stays as it was logged. The cut text is a copy: it does
// not keep the long one alive.
func failureText(s string) string {
	if len(s) <= maxFailureText {
		return s
	}
	marker := " …[cut from " + strconv.Itoa(len(s)) + " bytes]"
	cut := maxFailureText - len(marker)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + marker
}
