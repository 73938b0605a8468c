package dlq_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ringwal/ringwal/dlq"
)

func TestReviewString(t *testing.T) {
	assert.Equal(t, "any", dlq.Any.String())
	assert.Equal(t, "reviewed", dlq.OnlyReviewed.String())
	assert.Equal(t, "unreviewed", dlq.OnlyUnreviewed.String())
	assert.Equal(t, "review(9)", dlq.Review(9).String())
}
