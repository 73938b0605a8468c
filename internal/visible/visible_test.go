package visible

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The characters that hide or reorder text are invisible; what shows as
// itself, non-ASCII letters, marks, symbols and spaces included, is not.
func TestInvisibleIsWhatDoesNotShowAsItself(t *testing.T) {
	for _, tt := range []struct {
		r    rune
		want bool
	}{
		{'a', false}, {' ', false}, {'~', false}, {'é', false}, {'注', false}, {'📦', false},
		{'\u0301', false}, // a combining accent shows on its letter
		{'\u00a0', false}, // a no-break space shows as a space
		{'\x00', true}, {'\t', true}, {'\n', true}, {'\x1b', true}, {'\x7f', true}, {'\u0085', true}, {'\u009b', true},
		{'\u202e', true}, {'\u202a', true}, {'\u200e', true}, {'\u200f', true}, {'\u061c', true},
		{'\u2066', true}, {'\u2067', true}, {'\u2068', true}, {'\u2069', true},
		{'\u200b', true}, {'\u200c', true}, {'\u200d', true}, {'\u2060', true}, {'\ufeff', true}, {'\u00ad', true},
		{'\u2028', true}, {'\u2029', true},
		{'\u3164', true}, {'\u115f', true}, {'\uffa0', true}, {'\ufe0f', true}, {'\U000e0041', true},
		{'\ue000', true},     // private use
		{'\U0010ffff', true}, // a noncharacter
	} {
		t.Run(fmt.Sprintf("%U", tt.r), func(t *testing.T) {
			assert.Equal(t, tt.want, Invisible(tt.r))
		})
	}
}
