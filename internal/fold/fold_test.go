package fold

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestContains(t *testing.T) {
	tests := []struct {
		s, needle string
		want      bool
	}{
		{"Connection Reset by peer", "reset", true},
		{"CONNECTION RESET", "reset by", false},
		{"", "x", false},
		{"abc", "", true},
		{"Straße kaputt", "straße", true},
		{"ÉCHEC du service", "échec", true},
		{"timeout", "timeouts", false},
		{"a\xffb", "b", true},     // invalid UTF-8 is stepped over
		{"\u212Aey", "key", true}, // the Kelvin sign: 3 bytes that fold to 1
		{"İstanbul", "istanbul", true},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Contains(tt.s, tt.needle), "%q in %q", tt.needle, tt.s)
	}
}

// The classifier's rules: lower-case ASCII needles in error texts.
func TestContainsClassifierRules(t *testing.T) {
	tests := []struct {
		s, sub string
		want   bool
	}{
		{"I/O TIMEOUT", "timeout", true},
		{"timeou", "timeout", false},
		{"", "x", false},
		{"abc", "", true},
		{"xxTimeOutyy", "timeout", true},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Contains(tt.s, tt.sub), "%q in %q", tt.sub, tt.s)
	}
}

// Non-ASCII text or needle costs no allocation, whatever meets it: a
// dead-letter search holds the store's lock while it runs, and the
// classifier runs on every failure.
func TestContainsAllocatesNothing(t *testing.T) {
	ascii := strings.Repeat("Connection Reset By Peer ", 40)
	cyrillic := strings.Repeat("Ошибка Соединения ", 40)
	for _, tc := range []struct{ s, needle string }{
		{ascii, "échec"}, {cyrillic, "x"}, {cyrillic, "соединения!"}, {ascii, "timeout"},
	} {
		assert.Zero(t, testing.AllocsPerRun(20, func() { Contains(tc.s, tc.needle) }), "%q in %.20q…", tc.needle, tc.s)
	}
}
