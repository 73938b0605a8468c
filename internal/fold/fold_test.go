package fold

import (
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
		{"a\xffb", "b", true}, // invalid UTF-8 is stepped over
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
