package admin_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
)

func TestParseDeadLetterQuery(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	q, err := admin.ParseDeadLetterQuery(url.Values{
		"category": {"poison,Permanent", "expired"}, "key": {"api"}, "since": {"24h"},
		"until": {"2026-03-01T11:30:00.5+01:00"}, "reviewed": {"false"}, "after": {"42"}, "limit": {"7"},
	}, now.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, []classify.Category{classify.Poison, classify.Permanent, classify.Expired}, q.Categories)
	assert.Equal(t, "api", q.Key)
	assert.Equal(t, now.Add(-23*time.Hour), q.Since, "a duration is that long before now")
	assert.True(t, q.Until.Equal(now.Add(-90*time.Minute+500*time.Millisecond)), "%v", q.Until)
	assert.Equal(t, dlq.OnlyUnreviewed, q.Reviewed)
	assert.Equal(t, uint64(42), q.After)
	assert.Equal(t, 7, q.Limit)

	// Round trip through DeadLetterQueryValues.
	back, err := admin.ParseDeadLetterQuery(admin.DeadLetterQueryValues(q), now)
	require.NoError(t, err)
	assert.True(t, back.Since.Equal(q.Since) && back.Until.Equal(q.Until))
	back.Since, back.Until, q.Since, q.Until = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	assert.Equal(t, q, back)

	empty, err := admin.ParseDeadLetterQuery(url.Values{}, now)
	require.NoError(t, err)
	assert.Equal(t, dlq.Query{}, empty, "no limit given: Limit 0, the caller's default")

	for _, bad := range []url.Values{
		{"since": {"-1h"}}, {"since": {"yesterday"}}, {"until": {"2026-01-01"}},
		{"reviewed": {"yes"}}, {"limit": {"0"}}, {"after": {"x"}}, {"nope": {"1"}},
		{"since": {"1h"}, "until": {"2h"}}, {"category": {"bogus"}},
	} {
		_, err := admin.ParseDeadLetterQuery(bad, now)
		assert.Error(t, err, "%v", bad)
	}
}

func TestPurgeRequestQuery(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	yes := true
	q, err := admin.PurgeRequest{Category: admin.Strings{"poison"}, Since: "1h", Reviewed: &yes, Limit: 3}.Query(now)
	require.NoError(t, err)
	assert.Equal(t, dlq.Query{Categories: []classify.Category{classify.Poison}, Since: now.Add(-time.Hour),
		Reviewed: dlq.OnlyReviewed, Limit: 3}, q)
	_, err = admin.PurgeRequest{}.Query(now)
	assert.ErrorContains(t, err, `"all": true`)
	q, err = admin.PurgeRequest{All: true}.Query(now)
	require.NoError(t, err)
	assert.Equal(t, dlq.Query{}, q)
	back, err := admin.NewPurgeRequest(dlq.Query{Key: "k", After: 9, Reviewed: dlq.OnlyUnreviewed}).Query(now)
	require.NoError(t, err)
	assert.Equal(t, dlq.Query{Key: "k", After: 9, Reviewed: dlq.OnlyUnreviewed}, back)
}
