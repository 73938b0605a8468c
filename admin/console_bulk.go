package admin

// The console's bulk actions on dead letters: the list's selected rows,
// or all that its filters match, redriven or reviewed (or the selected
// rows purged: purging all matching is the purge page's) behind a
// confirmation page that states the count. The confirmation carries what
// it counted (the selected IDs, or the store's mark at the count), so the
// action takes exactly that set; when the count changed meanwhile it
// confirms again instead of acting.

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/dlq"
)

// bulkVerbs are the bulk actions by form value, with their words.
var bulkVerbs = map[string]struct{ Title, Verb, Done string }{
	"redrive": {"Redrive dead letters", "Redrive", "Redrove"},
	"review":  {"Review dead letters", "Mark reviewed", "Marked reviewed"},
	"purge":   {"Purge dead letters", "Purge", "Purged"},
}

// bulkView is the confirmation's (and the result's) data.
type bulkView struct {
	Action, Title, Verb, Done string
	Selected                  bool             // the rows picked on the list, else all matching
	IDs                       []ringwal.ID     // the selected ones still dead, carried by the form
	Filters                   []header         // all matching: the filters, in words and as the form's hidden fields
	All                       bool             // all matching, no filter: every dead letter
	Count                     int              // how many the action takes
	Through                   uint64           // all matching: the store's mark at the count
	Entries                   []DeadLetterView // the first purgeListMax
	Changed                   bool             // the count changed since the confirmation
	Was                       int
	Note                      string
	Back                      template.URL // the list's query
}

// bulkRequest is a bulk form, read from a GET's query or a POST's form.
type bulkRequest struct {
	action string
	ids    []ringwal.ID // selected rows; nil for all matching
	q      dlq.Query    // all matching: the filters
	back   url.Values
}

func (h *handler) readBulk(vals url.Values) (bulkRequest, error) {
	b := bulkRequest{action: vals.Get("action")}
	if _, ok := bulkVerbs[b.action]; !ok {
		return b, fmt.Errorf("action %q: want redrive, review or purge", b.action)
	}
	ids, all, err := readSelection(vals, "dead letter")
	if err != nil {
		return b, err
	}
	if !all {
		b.ids = ids
		b.back, _ = url.ParseQuery(vals.Get("back"))
		return b, nil
	}
	if b.action == "purge" {
		return b, errors.New("purging all matching is the purge page's: follow the dead letters' Purge link")
	}
	q, err := ParseDeadLetterQuery(formValues(vals, "action", "all", "csrf", "expect", "through", "note", "back", "after", "limit"), h.now())
	if err == nil && q.Queue == DefaultQueue {
		err = errors.New("the default queue's dead letters cannot be selected apart from the named queues': select rows instead")
	}
	b.q, b.back = q, DeadLetterQueryValues(q)
	return b, err
}

func (h *handler) bulkPage(w http.ResponseWriter, r *http.Request) {
	b, err := h.readBulk(formValues(r.URL.Query()))
	if err != nil {
		h.errorPage(w, r, http.StatusBadRequest, err.Error())
		return
	}
	h.confirmBulk(w, r, b, -1, "")
}

// confirmBulk counts b's set (the selected rows still dead, or what b.q
// matches, with the store's mark) and answers the confirmation; was is
// the count a previous confirmation showed (-1 for none).
func (h *handler) confirmBulk(w http.ResponseWriter, r *http.Request, b bulkRequest, was int, note string) {
	words := bulkVerbs[b.action]
	v := bulkView{Action: b.action, Title: words.Title, Verb: words.Verb, Done: words.Done,
		Selected: b.ids != nil, Changed: was >= 0, Was: was, Note: note, Back: template.URL(b.back.Encode())}
	if b.ids != nil {
		for _, id := range b.ids {
			if d, err := h.e.DeadLetter(id); err == nil {
				v.IDs = append(v.IDs, id)
				if len(v.Entries) < purgeListMax {
					v.Entries = append(v.Entries, NewDeadLetterView(d))
				}
			} else if !errors.Is(err, ringwal.ErrNotFound) {
				h.failPage(w, r, err)
				return
			}
		}
		v.Count = len(v.IDs)
	} else {
		n, through, err := h.e.CountDeadLetters(b.q)
		if err != nil {
			h.failPage(w, r, err)
			return
		}
		first := b.q
		first.Limit, first.Through = purgeListMax, through
		ds, err := h.e.DeadLetters(first)
		if err != nil {
			h.failPage(w, r, err)
			return
		}
		v.Count, v.Through, v.All, v.Entries = n, through, emptyQuery(b.q), NewDeadLetterViews(ds)
		v.Filters = filterHeaders(DeadLetterQueryValues(b.q))
	}
	h.render(w, r, http.StatusOK, "bulk", page{Title: words.Title, Nav: "dead-letters", Data: v})
}

func (h *handler) bulkAction(w http.ResponseWriter, r *http.Request) {
	b, err := h.readBulk(r.PostForm)
	if err != nil {
		h.errorPage(w, r, http.StatusBadRequest, err.Error())
		return
	}
	note := r.PostForm.Get("note")
	expect, err := strconv.Atoi(r.PostForm.Get("expect"))
	if err != nil || expect < 0 {
		h.errorPage(w, r, http.StatusBadRequest, "The form lacks the count it confirmed; start again from the dead letters.")
		return
	}
	var n int
	if b.ids != nil {
		n, err = h.bulkSelected(b, expect, note)
	} else {
		n, err = h.bulkMatching(b, r.PostForm.Get("through"), expect, note)
	}
	var changed errCountChanged
	switch {
	case errors.As(err, &changed):
		h.confirmBulk(w, r, b, expect, note)
		return
	case errors.Is(err, errNoMark):
		h.errorPage(w, r, http.StatusBadRequest, "The form lacks the mark of its count; start again from the dead letters.")
		return
	case err != nil:
		h.failPage(w, r, fmt.Errorf("%s %d, then: %w", bulkVerbs[b.action].Done, n, err))
		return
	}
	words := bulkVerbs[b.action]
	h.opts.Logger.Info("ringwal: admin console bulk "+b.action, "count", n, "selected", b.ids != nil)
	h.render(w, r, http.StatusOK, "bulkdone", page{Title: words.Done, Nav: "dead-letters",
		Data: bulkView{Action: b.action, Done: words.Done, Count: n, Back: template.URL(b.back.Encode())}})
}

// errCountChanged: the set is no longer the one confirmed.
type errCountChanged struct{}

func (errCountChanged) Error() string { return "the count changed" }

var errNoMark = errors.New("the form lacks the mark of its count") // each page says where to start again

// bulkSelected acts on the selected dead letters, if as many are still
// dead as were confirmed, one at a time as the engine's single verbs.
func (h *handler) bulkSelected(b bulkRequest, expect int, note string) (int, error) {
	return actOnSelected(b.ids, expect, h.isDeadLetter, func(id ringwal.ID) error {
		switch b.action {
		case "redrive":
			return h.e.Redrive(id)
		case "purge":
			return h.e.PurgeDeadLetter(id)
		}
		return h.e.MarkReviewed(id, note)
	})
}

// isDeadLetter reports whether id is a dead letter.
func (h *handler) isDeadLetter(id ringwal.ID) (bool, error) {
	_, err := h.e.DeadLetter(id)
	if errors.Is(err, ringwal.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// bulkMatching acts on what b.q matched at the confirmation's count (its
// mark), if that is still the count confirmed.
func (h *handler) bulkMatching(b bulkRequest, mark string, expect int, note string) (int, error) {
	q := b.q
	return actOnCounted(mark, expect, func(through uint64) (int, error) {
		q.Through = through
		n, _, err := h.e.CountDeadLetters(q)
		return n, err
	}, func() (int, error) {
		switch b.action {
		case "redrive":
			return h.e.RedriveMatching(q)
		case "review":
			return h.e.ReviewMatching(q, note)
		}
		// readBulk refuses the rest (a purge of all matching goes through
		// the purge page, by its count's mark).
		return 0, fmt.Errorf("no bulk action %q over all matching", b.action)
	})
}

// readSelection reads a counted set's form: the selected rows (an id
// field each, what names them in its errors), or all matching
// (all=true), never both.
func readSelection(vals url.Values, what string) (ids []ringwal.ID, all bool, err error) {
	for _, s := range vals["id"] {
		id, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return nil, false, fmt.Errorf("%s %q is not an ID", what, s)
		}
		ids = append(ids, id)
	}
	switch all = vals.Get("all") == "true"; {
	case !all && len(ids) == 0:
		return nil, false, fmt.Errorf("no %s selected: tick some rows, or take all matching", what)
	case all && len(ids) > 0:
		return nil, true, errors.New("either selected rows or all matching, not both")
	}
	return ids, all, nil
}

// actOnSelected is every "the N selected" action's last step, as
// actOnCounted is all matching's: if as many of ids are still there
// (live says which) as the confirmation counted, act on each in turn.
// One that left meanwhile (act fails with ErrNotFound) is not counted
// done; any other error stops the action, with how many were done.
func actOnSelected(ids []ringwal.ID, expect int, live func(ringwal.ID) (bool, error), act func(ringwal.ID) error) (int, error) {
	n := 0
	for _, id := range ids {
		ok, err := live(id)
		if err != nil {
			return 0, err
		}
		if ok {
			n++
		}
	}
	if n != expect {
		return 0, errCountChanged{}
	}
	n = 0
	for _, id := range ids {
		err := act(id)
		switch {
		case errors.Is(err, ringwal.ErrNotFound): // gone meanwhile
		case err != nil:
			return n, err
		default:
			n++
		}
	}
	return n, nil
}

// actOnCounted is every "all N matching" action's last step. The set is
// what a confirmation counted, bounded by the count's mark: a dead
// letter's store mark, or a message ID. actOnCounted recounts the set with
// count, which sets the bound. If it is still the count confirmed, it
// acts on it. A mark of 0 means nothing was there to count.
func actOnCounted(mark string, expect int, count func(through uint64) (int, error), act func() (int, error)) (int, error) {
	through, err := strconv.ParseUint(mark, 10, 64)
	if err != nil {
		return 0, errNoMark
	}
	if through == 0 {
		return 0, nil
	}
	n, err := count(through)
	if err != nil {
		return 0, err
	}
	if n != expect {
		return 0, errCountChanged{}
	}
	return act()
}
