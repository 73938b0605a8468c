package admin

// The console's bulk cancel on the live messages page. It cancels the
// selected rows, or all that the page's filters match, behind a
// confirmation that states the count. The dead letters' bulk actions work
// the same way (console_bulk.go). The confirmation carries what it
// counted: the selected IDs still live, or the engine's mark at the count,
// which bounds the IDs taken. So the cancel takes exactly that set, never
// a message enqueued after the count. When the count changed meanwhile,
// it confirms again instead of acting.

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"

	"github.com/ringwal/ringwal"
)

// cancelBulkView is the confirmation's (and the result's) data.
type cancelBulkView struct {
	Selected bool         // the rows picked on the list, else all matching
	IDs      []ringwal.ID // the selected ones still live, carried by the form
	Filters  []header     // all matching: the filters, in words and as the form's hidden fields
	All      bool         // all matching, no filter: every live message
	Count    int          // how many the cancel takes (or, once Finished, took)
	Through  ringwal.ID   // all matching: the engine's mark at the count
	Entries  []InfoView   // the first purgeListMax
	Changed  bool         // the count changed since the confirmation
	Was      int
	Finished bool         // the result page
	Back     template.URL // the messages page's query
}

// cancelBulkRequest is a bulk cancel form, from a GET's query or a POST's
// form.
type cancelBulkRequest struct {
	ids  []ringwal.ID   // selected rows; nil for all matching
	q    MessageQuery   // all matching: the filters
	f    ringwal.Filter // all matching: q as the engine's filter
	back url.Values
}

func readCancelBulk(vals url.Values) (cancelBulkRequest, error) {
	var b cancelBulkRequest
	ids, all, err := readSelection(vals, "message")
	if err != nil {
		return b, err
	}
	if !all {
		b.ids = ids
		back, err := url.ParseQuery(vals.Get("back"))
		if err != nil {
			back = url.Values{}
		}
		b.back = formValues(back, "done", "csrf")
		return b, nil
	}
	q, err := ParseMessageQuery(formValues(vals, "all", "csrf", "expect", "through", "back", "after", "limit"))
	if err == nil && q.Queue == DefaultQueue {
		err = errDefaultQueueBulk
	}
	b.q, b.back = q, q.Values()
	b.f = q.Filter(0)
	return b, err
}

// liveMessage returns id's message if it is live (not a dead letter,
// acked, purged or cancelled).
func (h *handler) liveMessage(id ringwal.ID) (ringwal.Info, bool, error) {
	info, err := h.e.Get(id)
	switch {
	case errors.Is(err, ringwal.ErrNotFound):
		return info, false, nil
	case err != nil:
		return info, false, err
	}
	return info, info.State != ringwal.Dead, nil
}

func (h *handler) cancelBulkPage(w http.ResponseWriter, r *http.Request) {
	b, err := readCancelBulk(formValues(r.URL.Query()))
	if err != nil {
		h.errorPage(w, r, http.StatusBadRequest, err.Error())
		return
	}
	h.confirmCancelBulk(w, r, b, -1)
}

// confirmCancelBulk counts b's set (the selected rows still live, or what
// b.f matches, with the engine's mark) and answers the confirmation; was
// is the count a previous confirmation showed (-1 for none).
func (h *handler) confirmCancelBulk(w http.ResponseWriter, r *http.Request, b cancelBulkRequest, was int) {
	v := cancelBulkView{Selected: b.ids != nil, Changed: was >= 0, Was: was, Back: template.URL(b.back.Encode())}
	if b.ids != nil {
		for _, id := range b.ids {
			info, live, err := h.liveMessage(id)
			if err != nil {
				h.failPage(w, r, err)
				return
			}
			if live {
				v.IDs = append(v.IDs, id)
				if len(v.Entries) < purgeListMax {
					v.Entries = append(v.Entries, NewInfoView(info))
				}
			}
		}
		v.Count = len(v.IDs)
	} else {
		n, through, err := h.e.CountMessages(b.f)
		if err != nil {
			h.failPage(w, r, err)
			return
		}
		f := b.f
		f.Through = through
		if through != 0 {
			for in := range h.e.Messages(f) {
				if len(v.Entries) == purgeListMax {
					break
				}
				v.Entries = append(v.Entries, NewInfoView(in))
			}
		}
		v.Count, v.Through = n, through
		v.All = b.q.Queue == "" && b.q.Key == "" && len(b.q.States) == 0
		v.Filters = filterHeaders(b.q.Values())
	}
	h.render(w, r, http.StatusOK, "cancelmessages", page{Title: "Cancel messages", Nav: "keys", Data: v})
}

func (h *handler) cancelBulkAction(w http.ResponseWriter, r *http.Request) {
	b, err := readCancelBulk(r.PostForm)
	if err != nil {
		h.errorPage(w, r, http.StatusBadRequest, err.Error())
		return
	}
	expect, err := strconv.Atoi(r.PostForm.Get("expect"))
	if err != nil || expect < 0 {
		h.errorPage(w, r, http.StatusBadRequest, "The form lacks the count it confirmed; start again from the live messages.")
		return
	}
	var n int
	if b.ids != nil {
		n, err = h.cancelSelected(b, expect)
	} else {
		n, err = h.cancelAllMatching(b, r.PostForm.Get("through"), expect)
	}
	var changed errCountChanged
	switch {
	case errors.As(err, &changed):
		h.confirmCancelBulk(w, r, b, expect)
		return
	case errors.Is(err, errNoMark):
		h.errorPage(w, r, http.StatusBadRequest, "The form lacks the mark of its count; start again from the live messages.")
		return
	case err != nil:
		h.failPage(w, r, fmt.Errorf("cancelled %d, then: %w", n, err))
		return
	}
	h.opts.Logger.Info("ringwal: admin console bulk cancel", "count", n, "selected", b.ids != nil)
	h.render(w, r, http.StatusOK, "cancelmessages", page{Title: "Cancelled messages", Nav: "keys",
		Data: cancelBulkView{Finished: true, Count: n, Back: template.URL(b.back.Encode())}})
}

// cancelSelected cancels the selected messages, if as many are still live
// as were confirmed, one at a time with the engine's Cancel; one that left
// meanwhile (acked, dead-lettered, cancelled by another) is skipped.
func (h *handler) cancelSelected(b cancelBulkRequest, expect int) (int, error) {
	return actOnSelected(b.ids, expect, func(id ringwal.ID) (bool, error) {
		_, live, err := h.liveMessage(id)
		return live, err
	}, func(id ringwal.ID) error {
		err := h.e.Cancel(id)
		if errors.Is(err, ringwal.ErrInvalid) { // dead meanwhile: no longer a live message
			return ringwal.ErrNotFound
		}
		return err
	})
}

// cancelAllMatching cancels what b.f matched at the confirmation's count (its
// mark bounds the IDs), if that is still the count confirmed.
func (h *handler) cancelAllMatching(b cancelBulkRequest, mark string, expect int) (int, error) {
	f := b.f
	return actOnCounted(mark, expect, func(through uint64) (int, error) {
		f.Through = ringwal.ID(through)
		n, _, err := h.e.CountMessages(f)
		return n, err
	}, func() (int, error) { return h.e.CancelMatching(f) })
}
