package admin

// The console's key pages and actions: the keys with their pauses,
// waiting and held messages and breakers; pausing and resuming a key or
// all delivery; a key's live messages, and cancelling one after a
// confirmation. Keys travel in query strings and form fields, never in
// the path, so that a key with '/' in it needs no care.

import (
	"cmp"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/internal/adminfmt"
)

// keyRow is one key of the keys page.
type keyRow struct {
	KeyView
	Breaker     *BreakerView // nil: the key has no breaker now (never delivered, or evicted)
	DeadLetters int
	Query       template.URL // its dead letters
	Messages    template.URL // its live messages
}

// keysView is the keys page's data.
type keysView struct {
	Keys           []keyRow
	Held, Waiting  int // every key
	DeliveryPaused bool
	Now            time.Time
}

func (h *handler) keysPage(w http.ResponseWriter, r *http.Request) {
	s, ok := h.pageStats(w, r)
	if !ok {
		return
	}
	// Kept per key by the store: counts, not a copy of every dead letter.
	byKey, err := h.e.DeadLetterKeys()
	if err != nil {
		h.failPage(w, r, err)
		return
	}
	rows := map[string]*keyRow{}
	row := func(k string) *keyRow {
		if rows[k] == nil {
			rows[k] = &keyRow{KeyView: KeyView{Key: k}, Query: template.URL(url.Values{"key": {k}}.Encode()),
				Messages: template.URL(MessageQuery{Key: k}.Values().Encode())}
		}
		return rows[k]
	}
	for _, k := range NewKeyViews(s) {
		row(k.Key).KeyView = k
	}
	for _, b := range NewStatsView(s).Breakers {
		row(b.Key).Breaker = &b
	}
	for k, n := range byKey {
		row(k).DeadLetters = n
	}
	v := keysView{Held: s.Held, Waiting: s.Waiting, DeliveryPaused: s.DeliveryPaused, Now: h.now()}
	for _, k := range slices.Sorted(maps.Keys(rows)) {
		v.Keys = append(v.Keys, *rows[k])
	}
	h.render(w, r, http.StatusOK, "keys", page{Title: "Keys and breakers", Nav: "keys",
		Flash: flashes[r.URL.Query().Get("done")], Data: v})
}

// formUntil reads the form's optional until; false when it answered the
// request (400).
func (h *handler) formUntil(w http.ResponseWriter, r *http.Request) (time.Time, bool) {
	until, err := adminfmt.ParseUntil(r.PostForm.Get("until"), h.now())
	if err != nil {
		h.errorPage(w, r, http.StatusBadRequest, err.Error())
		return time.Time{}, false
	}
	return until, true
}

// formKey reads the form's key; false when it answered the request (400).
func (h *handler) formKey(w http.ResponseWriter, r *http.Request) (string, bool) {
	key := r.PostForm.Get("key")
	if key == "" {
		h.errorPage(w, r, http.StatusBadRequest, "The form names no key.")
		return "", false
	}
	return key, true
}

func (h *handler) pauseKeyAction(w http.ResponseWriter, r *http.Request) {
	key, ok := h.formKey(w, r)
	if !ok {
		return
	}
	until, ok := h.formUntil(w, r)
	if !ok {
		return
	}
	if err := h.e.PauseKey(key, until); err != nil {
		h.failPage(w, r, err)
		return
	}
	h.opts.Logger.Info("ringwal: admin console paused a key", "key", key, "until", until)
	seeOther(w, r, "keys?done=paused")
}

func (h *handler) resumeKeyAction(w http.ResponseWriter, r *http.Request) {
	key, ok := h.formKey(w, r)
	if !ok {
		return
	}
	if err := h.e.ResumeKey(key); err != nil {
		h.failPage(w, r, err)
		return
	}
	h.opts.Logger.Info("ringwal: admin console resumed a key", "key", key)
	seeOther(w, r, "keys?done=resumed")
}

func (h *handler) pauseAllAction(w http.ResponseWriter, r *http.Request) {
	until, ok := h.formUntil(w, r)
	if !ok {
		return
	}
	if err := h.e.Pause(until); err != nil {
		h.failPage(w, r, err)
		return
	}
	h.opts.Logger.Info("ringwal: admin console paused all delivery", "until", until)
	seeOther(w, r, "?done=paused-all")
}

func (h *handler) resumeAllAction(w http.ResponseWriter, r *http.Request) {
	if err := h.e.Resume(); err != nil {
		h.failPage(w, r, err)
		return
	}
	h.opts.Logger.Info("ringwal: admin console resumed all delivery")
	seeOther(w, r, "?done=resumed-all")
}

// stateOption is a state checkbox of the messages filter.
type stateOption struct {
	Name    string
	Checked bool
}

// messagesView is the live messages page's data.
type messagesView struct {
	Queue   queueSelector
	Key     string
	States  []stateOption
	Entries []InfoView
	Next    template.URL // the next page's query; "" on the last page
	First   template.URL // the first page's query, when this is not it
	Back    template.URL // this page's query, for the cancel forms
	// Matching is how many live messages the filters match, for "cancel all
	// N matching" (CountMessages); BulkQuery is the filters without the
	// page's place. NoBulk: the default queue alone cannot be taken in bulk.
	Matching  int
	BulkQuery template.URL
	NoBulk    bool
	Err       string
}

func (h *handler) messagesPage(w http.ResponseWriter, r *http.Request) {
	vals := formValues(r.URL.Query(), "done")
	v := messagesView{Key: vals.Get("key"), Queue: h.newQueueSelector(vals.Get("queue"))}
	checked := map[string]bool{}
	for _, st := range vals["state"] {
		checked[st] = true
	}
	for _, st := range []ringwal.State{ringwal.Pending, ringwal.Delayed, ringwal.Leased, ringwal.Held} {
		v.States = append(v.States, stateOption{Name: st.String(), Checked: checked[st.String()]})
	}
	q, err := ParseMessageQuery(vals)
	if err != nil {
		v.Err = err.Error()
		h.render(w, r, http.StatusBadRequest, "messages", page{Title: "Live messages", Nav: "keys", Data: v})
		return
	}
	if engineClosed(h.e) {
		h.failPage(w, r, ringwal.ErrClosed)
		return
	}
	q.Limit = cmp.Or(q.Limit, consolePage)
	p := NewMessagePage(h.e, q)
	v.Entries = p.Entries
	first := q
	first.After, first.Limit = 0, 0
	if q.After != 0 {
		v.First = template.URL(first.Values().Encode())
	}
	v.Back = template.URL(q.Values().Encode())
	v.NoBulk = q.Queue == DefaultQueue
	if len(v.Entries) > 0 && !v.NoBulk {
		// A first page with no next one holds every match: no second walk
		// of the live messages to count them.
		n := len(v.Entries)
		if q.After != 0 || p.Next != "" {
			var err error
			if n, _, err = h.e.CountMessages(q.Filter(0)); err != nil {
				h.failPage(w, r, err)
				return
			}
		}
		v.Matching, v.BulkQuery = n, template.URL(first.Values().Encode())
	}
	if p.Next != "" {
		next := q
		next.After = v.Entries[len(v.Entries)-1].ID
		if next.Limit == consolePage {
			next.Limit = 0
		}
		v.Next = template.URL(next.Values().Encode())
	}
	title := "Live messages"
	if q.Key != "" {
		title = "Live messages of " + q.Key
	}
	if q.Queue != "" {
		title += " in queue " + q.Queue
	}
	h.render(w, r, http.StatusOK, "messages", page{Title: title, Nav: "keys",
		Flash: flashes[r.URL.Query().Get("done")], Data: v})
}

// cancelView is the cancel confirmation's data.
type cancelView struct {
	Info InfoView
	Back template.URL // the messages page's query to return to
}

// cancelAction cancels a message once confirmed: a POST without
// confirm=yes answers the confirmation page (whose form posts again with
// it), so that a cancel takes two deliberate clicks with or without
// JavaScript.
func (h *handler) cancelAction(w http.ResponseWriter, r *http.Request) {
	id, ok := h.pagePathID(w, r)
	if !ok {
		return
	}
	// back is the messages page's query, re-encoded: only its parameters
	// go back into a link.
	back, err := url.ParseQuery(r.PostForm.Get("back"))
	if err != nil {
		back = url.Values{}
	}
	back = formValues(back, "done", "csrf", "confirm")
	if r.PostForm.Get("confirm") != "yes" {
		info, err := h.e.Get(id)
		if err != nil {
			h.failPage(w, r, err)
			return
		}
		h.render(w, r, http.StatusOK, "cancel", page{Title: fmt.Sprintf("Cancel message %d", id), Nav: "keys",
			Data: cancelView{Info: NewInfoView(info), Back: template.URL(back.Encode())}})
		return
	}
	if err := h.e.Cancel(id); err != nil {
		h.failPage(w, r, err)
		return
	}
	h.opts.Logger.Info("ringwal: admin console cancelled a message", "id", id)
	back.Set("done", "cancelled")
	seeOther(w, r, "messages?"+back.Encode())
}
