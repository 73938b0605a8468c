package ringwal

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ringwal/ringwal/classify"
)

// numCategories sizes the per-category counters; a new classify category
// must not be folded into Unknown by accident.
func TestNumCategoriesMatchesClassify(t *testing.T) {
	assert.Len(t, classify.Categories(), numCategories)
}
