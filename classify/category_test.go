package classify

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCategoryStringAndParse(t *testing.T) {
	tests := []struct {
		cat  Category
		name string
	}{
		{Unknown, "unknown"},
		{Transient, "transient"},
		{Timeout, "timeout"},
		{RateLimited, "rate_limited"},
		{Resource, "resource"},
		{Permanent, "permanent"},
		{Poison, "poison"},
		{Expired, "expired"},
	}
	require.Len(t, tests, len(Categories()), "every category is in the table")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.name, tt.cat.String())
			got, err := ParseCategory(tt.name)
			require.NoError(t, err)
			assert.Equal(t, tt.cat, got)
		})
	}
}

func TestParseCategorySpellings(t *testing.T) {
	tests := []struct {
		in   string
		want Category
	}{
		{"rate_limited", RateLimited},
		{"ratelimited", RateLimited},
		{"RateLimited", RateLimited},
		{"RATE-LIMITED", RateLimited},
		{"rate limited", RateLimited},
		{"  Timeout ", Timeout},
		{"POISON", Poison},
	}
	for _, tt := range tests {
		got, err := ParseCategory(tt.in)
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
}

func TestParseCategoryErrors(t *testing.T) {
	for _, in := range []string{"", "fatal", "rate__limitedx", "category(9)"} {
		_, err := ParseCategory(in)
		require.Error(t, err, in)
		assert.ErrorIs(t, err, ErrInvalid)
		assert.Contains(t, err.Error(), "rate_limited", "the error lists the valid names")
	}
}

func TestCategoryOutOfRange(t *testing.T) {
	c := Category(200)
	assert.False(t, c.Valid())
	assert.Equal(t, "category(200)", c.String())
	_, err := c.MarshalText()
	assert.ErrorIs(t, err, ErrInvalid)
}

func TestCategoryJSON(t *testing.T) {
	in := map[Category]int{RateLimited: 2, Poison: 1}
	b, err := json.Marshal(in)
	require.NoError(t, err)
	assert.JSONEq(t, `{"rate_limited":2,"poison":1}`, string(b))

	var out map[Category]int
	require.NoError(t, json.Unmarshal(b, &out))
	assert.Equal(t, in, out)

	var c Category
	err = json.Unmarshal([]byte(`"nope"`), &c)
	assert.True(t, errors.Is(err, ErrInvalid), "%v", err)
}

func TestCategories(t *testing.T) {
	cs := Categories()
	require.Len(t, cs, int(numCategories))
	for i, c := range cs {
		assert.Equal(t, Category(i), c)
	}
	cs[0] = Poison
	assert.Equal(t, Unknown, Categories()[0], "each call returns a fresh slice")
}

func TestCountsAgainstBreaker(t *testing.T) {
	want := map[Category]bool{
		Unknown: false, Transient: true, Timeout: true, RateLimited: true,
		Resource: true, Permanent: false, Poison: false, Expired: false,
	}
	for _, c := range Categories() {
		assert.Equal(t, want[c], CountsAgainstBreaker(c), c.String())
	}
	assert.False(t, CountsAgainstBreaker(Category(99)))
}
