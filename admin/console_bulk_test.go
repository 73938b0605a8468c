package admin_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/dlq"
)

// The list offers per-row selection and "all N matching"; the selected
// rows' confirmation states their count and acts on exactly them.
func TestConsoleBulkSelected(t *testing.T) {
	e, fake, _ := adminEngine(t, ringwal.Options{})
	ids := fiveDeadLetters(t, e, fake)
	b := newBrowser(t, e, admin.Options{})

	p := b.get("dead-letters?key=a").html(t, http.StatusOK, "list")
	assert.Contains(t, p.body, fmt.Sprintf(`name="id" value="%d"`, ids[0]))
	assert.Contains(t, p.body, "Redrive all 3 matching")

	sel := fmt.Sprintf("bulk?action=redrive&id=%d&id=%d&back=key%%3Da", ids[0], ids[3])
	p = b.get(sel).html(t, http.StatusOK, "confirmation")
	assert.Contains(t, p.body, `<strong id="bulk-count">2</strong>`)
	tok := p.csrf(t)
	form := url.Values{"csrf": {tok}, "action": {"redrive"}, "id": {fmt.Sprint(ids[0]), fmt.Sprint(ids[3])}, "expect": {"2"}}

	// One of them went meanwhile: the count changed, nothing is done.
	require.NoError(t, e.Redrive(ids[3]))
	p = b.post("bulk", form, nil).html(t, http.StatusOK, "a stale count")
	assert.Contains(t, p.body, "changed from 2 to 1")
	assert.Equal(t, 4, e.Stats().Dead)

	form.Set("expect", "1")
	p = b.post("bulk", form, nil).html(t, http.StatusOK, "done")
	assert.Contains(t, p.body, "Redrove 1 dead letter.")
	assert.Equal(t, 3, e.Stats().Dead)
	info, err := e.Get(ids[0])
	require.NoError(t, err)
	assert.Equal(t, ringwal.Pending, info.State)
}

// All matching: the confirmation counts with the store's mark, and the
// action takes exactly those counted, not one dead-lettered after.
func TestConsoleBulkAllMatching(t *testing.T) {
	e, fake, _ := adminEngine(t, ringwal.Options{})
	fiveDeadLetters(t, e, fake)
	b := newBrowser(t, e, admin.Options{})

	p := b.get("bulk?action=review&all=true&key=a").html(t, http.StatusOK, "confirmation")
	assert.Contains(t, p.body, `<strong id="bulk-count">3</strong>`)
	assert.Contains(t, p.body, `name="through"`)
	form := url.Values{"csrf": {p.csrf(t)}, "action": {"review"}, "all": {"true"}, "key": {"a"},
		"expect": {"3"}, "through": {hiddenValue(t, p.body, "through")}, "note": {"known bug"}}
	later := makeDeadLetters(t, e, fake, []string{"a"}, []error{errPermanent})

	p = b.post("bulk", form, nil).html(t, http.StatusOK, "done")
	assert.Contains(t, p.body, "Marked reviewed 3 dead letters.")
	ds, err := e.DeadLetters(dlq.Query{Key: "a", Reviewed: dlq.OnlyUnreviewed})
	require.NoError(t, err)
	require.Len(t, ds, 1)
	assert.Equal(t, later[0], ds[0].ID, "the later one is not reviewed")

	b.get("bulk?action=redrive&all=true&queue=_default").html(t, http.StatusBadRequest, "the default queue alone")
	b.get("bulk?action=explode&all=true").html(t, http.StatusBadRequest, "an unknown action")
	b.get("bulk?action=redrive").html(t, http.StatusBadRequest, "nothing selected")
	form.Del("through")
	b.post("bulk", form, nil).html(t, http.StatusBadRequest, "no mark")
}

// hiddenValue is the value of the page's hidden input name.
func hiddenValue(t *testing.T, body, name string) string {
	t.Helper()
	m := regexp.MustCompile(`<input type="hidden" name="` + regexp.QuoteMeta(name) + `" value="([^"]*)">`).FindStringSubmatch(body)
	require.NotNil(t, m, "no hidden %s in the page", name)
	return m[1]
}

// Purge of the selected rows: the confirmation states the count and that
// it cannot be undone, the action deletes exactly the rows still dead, a
// stale count confirms again, a POST without the CSRF field is refused,
// and purging all matching stays the purge page's.
func TestConsoleBulkPurgeSelected(t *testing.T) {
	e, fake, _ := adminEngine(t, ringwal.Options{})
	ids := fiveDeadLetters(t, e, fake)
	b := newBrowser(t, e, admin.Options{})

	p := b.get("dead-letters").html(t, http.StatusOK, "list")
	assert.Contains(t, p.body, `id="purge-selected"`)

	p = b.get(fmt.Sprintf("bulk?action=purge&id=%d&id=%d&id=%d", ids[0], ids[3], ids[4])).html(t, http.StatusOK, "confirmation")
	assert.Contains(t, p.body, `<strong id="bulk-count">3</strong>`)
	assert.Contains(t, p.body, "deletes for good")
	assert.Contains(t, p.body, "cannot be undone")
	form := url.Values{"csrf": {p.csrf(t)}, "action": {"purge"}, "id": {fmt.Sprint(ids[0]), fmt.Sprint(ids[3]), fmt.Sprint(ids[4])}, "expect": {"3"}}

	noCSRF := url.Values{"action": {"purge"}, "id": {fmt.Sprint(ids[0])}, "expect": {"1"}}
	b.post("bulk", noCSRF, nil).html(t, http.StatusForbidden, "no CSRF field")
	assert.Equal(t, 5, e.Stats().Dead)

	require.NoError(t, e.Redrive(ids[4]))
	p = b.post("bulk", form, nil).html(t, http.StatusOK, "a stale count")
	assert.Contains(t, p.body, "changed from 3 to 2")
	assert.Equal(t, 4, e.Stats().Dead, "nothing purged on a stale count")

	form.Set("expect", "2")
	p = b.post("bulk", form, nil).html(t, http.StatusOK, "done")
	assert.Contains(t, p.body, "Purged 2 dead letters.")
	ds, err := e.DeadLetters(dlq.Query{})
	require.NoError(t, err)
	var left []ringwal.ID
	for _, d := range ds {
		left = append(left, d.ID)
	}
	assert.Equal(t, []ringwal.ID{ids[1], ids[2]}, left, "exactly the selected rows still dead went")
	info, err := e.Get(ids[4])
	require.NoError(t, err)
	assert.Equal(t, ringwal.Pending, info.State, "the redriven one is untouched")

	b.get("bulk?action=purge&all=true&key=a").html(t, http.StatusBadRequest, "purge all matching is the purge page's")
}
