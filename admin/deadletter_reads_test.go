package admin_test

// The console's and the API's reads of dead letters cost what they return:
// one by ID, counts per key, a purge's count; and the purge takes exactly
// what its confirmation counted.

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/dlq"
	"github.com/ringwal/ringwal/internal/enginetest"
)

func getOK(t testing.TB, h http.Handler, path string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	req := httptest.NewRequest("GET", path, nil)
	req.Host = "localhost" // without a token only loopback names are served
	h.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, w.Code, w.Body)
	}
	return w
}

func TestDeadLetterReadsOfTheConsoleAndAPIDoNotCopyTheStore(t *testing.T) {
	e, _, _ := adminEngine(t, ringwal.Options{})
	const n = 20_000
	ids := enginetest.DeadLetterN(t, e, "k", n)
	h := admin.NewHandler(e, admin.Options{})

	w := getOK(t, h, fmt.Sprintf("/api/messages/%d", ids[n/2]))
	assert.Contains(t, w.Body.String(), `"dead_letter"`)
	w = getOK(t, h, "/keys")
	assert.Contains(t, w.Body.String(), "20,000")

	for _, path := range []string{
		fmt.Sprintf("/api/messages/%d", ids[n/2]),
		fmt.Sprintf("/dead-letters/%d", ids[n/2]),
		"/keys",
		"/purge?key=k",
	} {
		// Copying the key's 20k dead letters would take megabytes.
		assert.Less(t, enginetest.BytesPerRun(5, func() { getOK(t, h, path) }), uint64(256<<10), path)
	}
}

var (
	expectField  = regexp.MustCompile(`name="expect" value="(\d+)"`)
	throughField = regexp.MustCompile(`name="through" value="(\d+)"`)
)

func TestConsolePurgeTakesExactlyTheDeadLettersItCounted(t *testing.T) {
	e, fake, _ := adminEngine(t, ringwal.Options{})
	fiveDeadLetters(t, e, fake)
	b := newBrowser(t, e, admin.Options{})

	p := b.get("purge?key=a").html(t, http.StatusOK, "confirmation")
	assert.Contains(t, p.body, `<strong id="purge-count">3</strong>`)
	form := url.Values{"csrf": {p.csrf(t)}, "key": {"a"},
		"expect": {expectField.FindStringSubmatch(p.body)[1]}, "through": {throughField.FindStringSubmatch(p.body)[1]}}

	// A dead letter of key a arrives between the count and the purge.
	late := makeDeadLetters(t, e, fake, []string{"a"}, []error{errPermanent})[0]

	p = b.post("purge", form, nil).html(t, http.StatusOK, "purged")
	assert.Contains(t, p.body, "Deleted 3 dead letters.")
	_, err := e.DeadLetter(late)
	assert.NoError(t, err, "the dead letter that arrived after the count survives")
	assert.Equal(t, 3, e.Stats().Dead)

	// One of those counted goes meanwhile: the purge asks again.
	p = b.get("purge?key=b").html(t, http.StatusOK, "confirmation")
	form = url.Values{"csrf": {p.csrf(t)}, "key": {"b"},
		"expect": {expectField.FindStringSubmatch(p.body)[1]}, "through": {throughField.FindStringSubmatch(p.body)[1]}}
	n, _, err := e.CountDeadLetters(keyQuery("b"))
	require.NoError(t, err)
	require.Equal(t, 2, n)
	first, err := e.DeadLetters(keyQuery("b"))
	require.NoError(t, err)
	require.NoError(t, e.Redrive(first[0].ID))
	p = b.post("purge", form, nil).html(t, http.StatusOK, "a changed count")
	assert.Contains(t, p.body, "changed from 2 to 1")
	assert.Equal(t, 2, e.Stats().Dead)
}

func TestConsoleShowsHowCloseTheDeadLettersAreToTheirBound(t *testing.T) {
	e, _, _ := adminEngine(t, ringwal.Options{MaxDeadLetters: 3000})
	enginetest.DeadLetterN(t, e, "k", 3002)
	b := newBrowser(t, e, admin.Options{})
	p := b.get("dead-letters").html(t, http.StatusOK, "dead letters")
	assert.Contains(t, p.body, "3,000 of 3,000 dead letters")
	assert.Contains(t, p.body, "2 evicted at the bound")
}

func TestPauseAnswerReadsTheKeysPause(t *testing.T) {
	e, _, c := adminEngine(t, ringwal.Options{MaxPausedKeys: 1})
	r := c.do("POST", "/keys/a/pause", map[string]string{"until": "1h"}).expect(t, http.StatusOK, "pause")
	assert.Equal(t, true, r.body["paused"])
	assert.NotNil(t, r.body["paused_until"])
	c.do("POST", "/keys/b/pause", nil).expect(t, http.StatusServiceUnavailable, "past MaxPausedKeys")
	r = c.do("POST", "/keys/a/resume", nil).expect(t, http.StatusOK, "resume")
	assert.Equal(t, false, r.body["paused"])
	_ = e
}

func keyQuery(k string) dlq.Query { return dlq.Query{Key: k} }

func TestSearchFindsDeadLettersByErrorTextInTheAPIAndTheConsole(t *testing.T) {
	e, fake, _ := adminEngine(t, ringwal.Options{})
	ids := makeDeadLetters(t, e, fake, []string{"acct-1", "acct-2", "acct-3"}, []error{
		fmt.Errorf("%w: card declined", errPermanent), fmt.Errorf("%w: TLS handshake", errPermanent), fmt.Errorf("%w: card expired", errPermanent)})
	h := admin.NewHandler(e, admin.Options{})

	w := getOK(t, h, "/api/dead-letters?text=CARD")
	for i, want := range []bool{true, false, true} {
		assert.Equal(t, want, regexp.MustCompile(fmt.Sprintf(`"id":\s*%d\b`, ids[i])).MatchString(w.Body.String()), "API search: dead letter %d", i)
	}
	w = getOK(t, h, "/api/dead-letters/count?text=handshake")
	assert.Regexp(t, `"count":\s*1\b`, w.Body.String())

	b := newBrowser(t, e, admin.Options{})
	p := b.get("dead-letters?text=expired").html(t, http.StatusOK, "search")
	assert.Contains(t, p.body, `value="expired"`, "the search box keeps the text")
	assert.Contains(t, p.body, fmt.Sprintf(`name="id" value="%d"`, ids[2]))
	assert.NotContains(t, p.body, fmt.Sprintf(`name="id" value="%d"`, ids[0]))
	assert.Contains(t, p.body, "Redrive all 1 matching", "bulk actions take the search's matches")
	assert.Contains(t, p.body, "Purge all 1 matching", "a search is a filter")
}
