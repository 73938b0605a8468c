package adminfmt

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What does not show as itself is printed as a visible escape, whatever
// prints it (the console, the CLI's tables, its JSON); what shows as
// itself is kept.
func TestEscapeShowsWhatDoesNotShowAsItself(t *testing.T) {
	for _, tc := range []struct{ in, want, text string }{
		{"", "", ""},
		{"plain key slack:#ops/eu", "plain key slack:#ops/eu", ""},
		{"héllo wörld 日本 🙂 no\u00a0break", "héllo wörld 日本 🙂 no\u00a0break", ""},
		{"orders\u202ebackwards", `orders\u202ebackwards`, ""},
		{"orders\u200b", `orders\u200b`, ""},
		{"\u2066orders\u2069", `\u2066orders\u2069`, ""},
		{"\ufeffbom\u00adsoft", `\ufeffbom\u00adsoft`, ""},
		{"filler\u3164", `filler\u3164`, ""},
		{"tag\U000e0041", `tag\U000e0041`, ""},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`, ""},
		{"a\tb\nc\rd", `a\tb\nc\rd`, "a\tb\nc\\rd"},
		{"\x00\x7f", `\x00\x7f`, ""},
		{"\u009b31m \u0085next", `\u009b31m \u0085next`, ""},
		{"line\u2028sep", `line\u2028sep`, ""},
		{"bad \x9b utf-8 \xff", `bad \x9b utf-8 \xff`, ""},
		{`already \x1b`, `already \x1b`, ""},
	} {
		assert.Equal(t, tc.want, Escape(tc.in), "Escape(%q)", tc.in)
		text := tc.text
		if text == "" {
			text = tc.want
		}
		assert.Equal(t, text, EscapeText(tc.in), "EscapeText(%q)", tc.in)
	}
}

// JSON keeps its meaning (every string decodes to what was encoded) but
// holds no raw character that does not show as itself; JSON without one
// is returned as it is.
func TestEscapeJSONKeepsTheValueAndShowsTheInvisible(t *testing.T) {
	v := map[string]string{
		"queue":     "orders\u202ebackwards",
		"key\u200b": "\u2066x\u2069 \x7f \U000e0041 \u0085",
		"plain":     "héllo 日本 🙂\n\t\x1b",
	}
	js, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	out := EscapeJSON(js)
	for _, raw := range []string{"\u202e", "\u200b", "\u2066", "\u2069", "\x7f", "\U000e0041", "\u0085"} {
		assert.NotContains(t, string(out), raw)
	}
	assert.Contains(t, string(out), `orders\u202ebackwards`)
	assert.Contains(t, string(out), `\udb40\udc41`, "past U+FFFF: a surrogate pair")
	assert.Contains(t, string(out), "héllo 日本 🙂", "what shows is kept")
	var back map[string]string
	require.NoError(t, json.Unmarshal(out, &back))
	assert.Equal(t, v, back, "the same JSON value")

	plain := []byte(`{"a": "héllo"}` + "\n")
	assert.Same(t, &plain[0], &EscapeJSON(plain)[0], "nothing to escape: not copied")
}
