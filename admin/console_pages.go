package admin

// The console's pages and form actions, each built from the engine's
// public API and the same views as the JSON API.

import (
	"cmp"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
	"github.com/ringwal/ringwal/internal/adminfmt"
)

// Console paging: a dead-letter page's default size, and how many entries
// the purge confirmation lists.
const (
	consolePage  = 50
	purgeListMax = 20
	refreshEvery = 5 // seconds between refreshes of the overview
)

// stats returns the engine's Stats, or false (answered 503) once it is
// closed.
func (h *handler) pageStats(w http.ResponseWriter, r *http.Request) (ringwal.Stats, bool) {
	s := h.e.Stats()
	if s.Closed {
		h.failPage(w, r, ringwal.ErrClosed)
		return s, false
	}
	return s, true
}

// stateRow is one line of the overview's state table.
type stateRow struct {
	State      string
	Total      int
	ByPriority []int // in priorities order
}

// countRow is a name, a count and the dead-letter query that lists them.
type countRow struct {
	Name  string
	Count int
	Query template.URL
}

// overviewView is the overview's data.
type overviewView struct {
	S           StatsView
	Priorities  []string
	States      []stateRow
	TierPercent []float64 // in priorities order
	Dead        []countRow
	History     chartsView
	Open        int // breakers not closed
	PausedKeys  int
	Waiting     []countRow // by reason
	Queues      []queueRow // the first overviewQueues
	MoreQueues  int        // declared queues not listed
	PausedQs    int        // paused queues, listed or not
	Now         time.Time
}

// overviewQueues is how many queues the overview lists (the default
// first, then by name); the queues page lists them all.
const overviewQueues = 12

func (h *handler) overviewPage(w http.ResponseWriter, r *http.Request) {
	infos := h.e.Queues()
	s, ok := h.pageStats(w, r)
	if !ok {
		return
	}
	now := h.now()
	h.con.rates.addQueues(now, s) // the queues page's rates of queues without history
	v := overviewView{S: NewStatsView(s), Now: now}
	window, links := pickWindow(r)
	v.History = newCharts(h.e.History(), window, links, "overview", true)
	for i, q := range NewQueueViews(infos, s) {
		if q.Paused {
			v.PausedQs++
		}
		if i >= overviewQueues {
			v.MoreQueues++
			continue
		}
		row := queueRow{QueueView: q}
		row.Messages, row.DeadLetters = queueLinks(q.Name)
		v.Queues = append(v.Queues, row)
	}
	for _, p := range priorities {
		v.Priorities = append(v.Priorities, p.String())
		v.TierPercent = append(v.TierPercent, 100*v.S.TierUtilization[p.String()])
	}
	for _, st := range []ringwal.State{ringwal.Pending, ringwal.Delayed, ringwal.Leased, ringwal.Held} {
		row := stateRow{State: st.String()}
		for _, p := range v.Priorities {
			n := v.S.ByPriority[st.String()][p]
			row.ByPriority = append(row.ByPriority, n)
			row.Total += n
		}
		v.States = append(v.States, row)
	}
	for _, c := range classify.Categories() {
		if n := s.DeadByCategory[c]; n > 0 {
			v.Dead = append(v.Dead, countRow{Name: c.String(), Count: n,
				Query: template.URL(url.Values{"category": {c.String()}}.Encode())})
		}
	}
	for _, b := range s.Breakers {
		if b.State.String() != "closed" {
			v.Open++
		}
	}
	for _, k := range s.Keys {
		if k.Paused {
			v.PausedKeys++
		}
	}
	for _, w := range adminfmt.WaitReasons {
		v.Waiting = append(v.Waiting, countRow{Name: w.String(), Count: s.WaitingByReason[w]})
	}
	h.render(w, r, http.StatusOK, "overview", page{Title: "Overview", Nav: "overview", Refresh: refreshEvery,
		Flash: flashes[r.URL.Query().Get("done")], Data: v})
}

// categoryOption is a category checkbox of the filter form.
type categoryOption struct {
	Name    string
	Checked bool
}

// deadLettersView is the dead-letter list's data.
type deadLettersView struct {
	Queue                       queueSelector
	NoPurge                     bool // the default queue alone: the engine cannot purge it apart
	Categories                  []categoryOption
	Key, Since, Until, Reviewed string
	Text                        string // the search (dlq.Query.Text)
	Limit                       int
	Filtered                    bool
	Entries                     []DeadLetterView
	Next                        template.URL // the next page's query; "" on the last page
	First                       template.URL // the first page's query, when this is not it
	PurgeQuery                  template.URL // the filters, for the purge confirmation
	Back                        template.URL // this page's query, for the selected rows' confirmation
	Matching                    int          // how many the filters match (every page), for "all N matching"
	Err                         string
	Total                       int // dead letters, every filter aside
	Max                         int // the store's bound (Stats.MaxDeadLetters)
	Evicted                     uint64
}

// formValues returns v without empty values: an HTML form sends its
// empty fields, which ParseDeadLetterQuery would read as filters.
func formValues(v url.Values, skip ...string) url.Values {
	out := url.Values{}
	for k, vals := range v {
		if slices.Contains(skip, k) {
			continue
		}
		for _, s := range vals {
			if s != "" {
				out.Add(k, s)
			}
		}
	}
	return out
}

func (h *handler) deadLettersPage(w http.ResponseWriter, r *http.Request) {
	s, ok := h.pageStats(w, r)
	if !ok {
		return
	}
	vals := formValues(r.URL.Query())
	v := deadLettersView{Queue: h.newQueueSelector(vals.Get("queue")), Key: vals.Get("key"), Since: vals.Get("since"), Until: vals.Get("until"),
		Reviewed: vals.Get("reviewed"), Text: vals.Get("text"), Total: s.Dead, Max: s.MaxDeadLetters, Evicted: s.DeadLettersEvicted}
	checked := map[string]bool{}
	for _, c := range vals["category"] {
		checked[c] = true
	}
	for _, c := range classify.Categories() {
		v.Categories = append(v.Categories, categoryOption{Name: c.String(), Checked: checked[c.String()]})
	}
	q, err := ParseDeadLetterQuery(vals, h.now())
	if err == nil && q.Limit > MaxLimit {
		err = fmt.Errorf("limit %d: want a number from 1 to %d", q.Limit, MaxLimit)
	}
	if err != nil {
		v.Err = err.Error()
		h.render(w, r, http.StatusBadRequest, "deadletters", page{Title: "Dead letters", Nav: "dead-letters", Data: v})
		return
	}
	v.Limit = cmp.Or(q.Limit, consolePage)
	filters := q
	filters.After, filters.Limit = 0, 0
	v.Filtered = !emptyQuery(filters)
	v.PurgeQuery = template.URL(DeadLetterQueryValues(filters).Encode())
	if q.After != 0 {
		v.First = v.PurgeQuery
	}
	v.NoPurge = q.Queue == DefaultQueue
	v.Back = template.URL(vals.Encode())
	if !v.NoPurge {
		// A count, not a copy: O(c) from the kept counts for the plain
		// filters, a walk of the matching ones otherwise.
		if v.Matching, _, err = h.e.CountDeadLetters(filters); err != nil {
			h.failPage(w, r, err)
			return
		}
	}
	q.Limit = v.Limit
	p, err := NewDeadLetterPage(h.e, q)
	if err != nil {
		h.failPage(w, r, err)
		return
	}
	if p.Next != "" {
		next := DeadLetterQueryValues(filters)
		next.Set("after", p.Next)
		if v.Limit != consolePage {
			next.Set("limit", strconv.Itoa(v.Limit))
		}
		v.Next = template.URL(next.Encode())
	}
	v.Entries = p.Entries
	h.render(w, r, http.StatusOK, "deadletters", page{Title: "Dead letters", Nav: "dead-letters", Data: v})
}

// emptyQuery reports whether q has no filter (it matches every dead
// letter).
func emptyQuery(q dlq.Query) bool {
	return q.Queue == "" && len(q.Categories) == 0 && q.Key == "" && q.Since.IsZero() && q.Until.IsZero() &&
		q.Reviewed == dlq.Any && q.After == 0 && q.Limit == 0 && q.Text == ""
}

// header is one message header, or one query parameter.
type header struct{ Name, Value string }

// filterHeaders lists vals (a confirmation's filters) by name, for the
// page to state them in words and for its form to carry them back as
// hidden fields.
func filterHeaders(vals url.Values) []header {
	var hs []header
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		for _, s := range vals[k] {
			hs = append(hs, header{k, s})
		}
	}
	return hs
}

// deadLetterView is the detail page's data: the message, and its dead
// letter while it is one.
type deadLetterView struct {
	Info       InfoView
	Dead       *DeadLetterView
	Headers    []header
	PurgeQuery template.URL // a query that matches this dead letter
	QueueQuery template.URL // the live messages of its queue
}

// flashes are the messages a form action leaves for the page it
// redirects to (?done=...).
var flashes = map[string]string{
	"reviewed":           "Marked reviewed.",
	"redriven":           "Redriven: the message is pending again, with its attempts reset.",
	"paused":             "Paused: the key's messages wait, spending no attempts.",
	"resumed":            "Resumed: the key's messages go again.",
	"paused-all":         "All delivery is paused: enqueues continue, nothing is handed out.",
	"resumed-all":        "All delivery resumed.",
	"cancelled":          "Cancelled: the message is gone for good.",
	"queue-paused":       "Paused: the queue's consumers get nothing while its messages wait; other queues go on.",
	"queue-resumed":      "Resumed: the queue delivers again.",
	"queue-deleted":      "Deleted: the queue's declaration, options and counts are gone; a message sent to its name declares it afresh.",
	"schedule-paused":    "Paused: the schedule's ticks do not run, not even once it is resumed.",
	"schedule-resumed":   "Resumed: the schedule ticks again from now.",
	"schedule-removed":   "Removed: the schedule ticks no more; runs already enqueued stay.",
	"schedule-triggered": "Triggered: one run is enqueued; the schedule's next tick is unchanged.",
}

func (h *handler) deadLetterPage(w http.ResponseWriter, r *http.Request) {
	id, ok := h.pagePathID(w, r)
	if !ok {
		return
	}
	info, err := h.e.Get(id)
	if err != nil {
		h.failPage(w, r, err)
		return
	}
	v := deadLetterView{Info: NewInfoView(info),
		QueueQuery: template.URL(url.Values{"queue": {AdminQueueName(info.Message.Queue)}}.Encode())}
	for _, k := range slices.Sorted(maps.Keys(info.Message.Headers)) {
		v.Headers = append(v.Headers, header{k, info.Message.Headers[k]})
	}
	if info.State == ringwal.Dead {
		if d, err := h.e.DeadLetter(id); err == nil {
			dv := NewDeadLetterView(d)
			v.Dead = &dv
			one := dlq.Query{Queue: d.Queue, Categories: []classify.Category{d.Category}, Key: d.Key, Since: d.DeadAt, Until: d.DeadAt.Add(time.Nanosecond)}
			v.PurgeQuery = template.URL(DeadLetterQueryValues(one).Encode())
		}
	}
	h.render(w, r, http.StatusOK, "deadletter", page{Title: fmt.Sprintf("Message %d", id), Nav: "dead-letters",
		Flash: flashes[r.URL.Query().Get("done")], Data: v})
}

// pagePathID parses the {id} path segment; false (answered 400) if
// malformed.
func (h *handler) pagePathID(w http.ResponseWriter, r *http.Request) (ringwal.ID, bool) {
	s := r.PathValue("id")
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		h.errorPage(w, r, http.StatusBadRequest, fmt.Sprintf("Message ID %q is not a decimal number.", s))
		return 0, false
	}
	return id, true
}

func (h *handler) reviewAction(w http.ResponseWriter, r *http.Request) {
	id, ok := h.pagePathID(w, r)
	if !ok {
		return
	}
	if err := h.e.MarkReviewed(id, r.PostForm.Get("note")); err != nil {
		h.failPage(w, r, err)
		return
	}
	h.opts.Logger.Info("ringwal: admin console reviewed a dead letter", "id", id)
	seeOther(w, r, fmt.Sprintf("dead-letters/%d?done=reviewed", id))
}

func (h *handler) redriveAction(w http.ResponseWriter, r *http.Request) {
	id, ok := h.pagePathID(w, r)
	if !ok {
		return
	}
	if err := h.e.Redrive(id); err != nil {
		h.failPage(w, r, err)
		return
	}
	h.opts.Logger.Info("ringwal: admin console redrove a dead letter", "id", id)
	seeOther(w, r, fmt.Sprintf("dead-letters/%d?done=redriven", id))
}

// purgeView is the purge confirmation's data.
type purgeView struct {
	Filters []header // the filters, in words and as the form's hidden fields
	All     bool     // no filter: every dead letter
	Count   int
	Entries []DeadLetterView // the first purgeListMax
	Changed bool             // the count changed since the confirmation was shown
	Was     int
	Back    template.URL
	// Through is the dead-letter store's mark at the count: the purge
	// takes exactly the dead letters counted, never one added since.
	Through uint64
}

// purgeQuery reads the purge filters from vals (after and limit are not
// filters: a purge takes everything they match).
func (h *handler) purgeQuery(vals url.Values) (dlq.Query, error) {
	q, err := ParseDeadLetterQuery(formValues(vals, "after", "limit", "csrf", "all", "expect", "through"), h.now())
	q.After, q.Limit = 0, 0
	if err == nil && q.Queue == DefaultQueue {
		err = errDefaultQueuePurge
	}
	return q, err
}

func (h *handler) purgePage(w http.ResponseWriter, r *http.Request) {
	q, err := h.purgeQuery(r.URL.Query())
	if err != nil {
		h.errorPage(w, r, http.StatusBadRequest, err.Error())
		return
	}
	h.confirmPurge(w, r, q, -1)
}

// confirmPurge answers the confirmation page of q; was is the count the
// previous confirmation showed (-1 for none). It counts what q matches
// (without copying it) and lists the first purgeListMax; the form carries
// the store's mark at the count, so that the purge takes exactly those.
func (h *handler) confirmPurge(w http.ResponseWriter, r *http.Request, q dlq.Query, was int) {
	n, through, err := h.e.CountDeadLetters(q)
	if err != nil {
		h.failPage(w, r, err)
		return
	}
	first := q
	first.Limit, first.Through = purgeListMax, through
	ds, err := h.e.DeadLetters(first)
	if err != nil {
		h.failPage(w, r, err)
		return
	}
	vals := DeadLetterQueryValues(q)
	v := purgeView{Filters: filterHeaders(vals), All: emptyQuery(q), Count: n, Changed: was >= 0, Was: was, Back: template.URL(vals.Encode()), Through: through}
	v.Entries = NewDeadLetterViews(ds)
	h.render(w, r, http.StatusOK, "purge", page{Title: "Purge dead letters", Nav: "dead-letters", Data: v})
}

func (h *handler) purgeAction(w http.ResponseWriter, r *http.Request) {
	q, err := h.purgeQuery(r.PostForm)
	if err != nil {
		h.errorPage(w, r, http.StatusBadRequest, err.Error())
		return
	}
	if emptyQuery(q) && r.PostForm.Get("all") != "true" {
		h.errorPage(w, r, http.StatusBadRequest, "A purge without a filter deletes every dead letter; confirm it on the purge page.")
		return
	}
	expect, err := strconv.Atoi(r.PostForm.Get("expect"))
	if err != nil || expect < 0 {
		h.errorPage(w, r, http.StatusBadRequest, "The purge form lacks the count it confirmed; start again from the dead letters.")
		return
	}
	// The store's mark at the confirmation's count: what arrived since is
	// not part of what was confirmed. A form without one (an older page)
	// counts everything, as before.
	if s := r.PostForm.Get("through"); s != "" {
		if q.Through, err = strconv.ParseUint(s, 10, 64); err != nil {
			h.errorPage(w, r, http.StatusBadRequest, "The purge form's mark is not a number; start again from the dead letters.")
			return
		}
	}
	n, _, err := h.e.CountDeadLetters(q)
	if err != nil {
		h.failPage(w, r, err)
		return
	}
	if n != expect {
		// Dead letters went (or, without a mark, came) since the
		// confirmation: confirm again.
		q.Through = 0
		h.confirmPurge(w, r, q, expect)
		return
	}
	n, err = h.e.PurgeDeadLetters(q)
	if err != nil {
		if n > 0 {
			h.opts.Logger.Error("ringwal: admin console purge not logged", "purged", n, "err", err)
		}
		h.failPage(w, r, fmt.Errorf("purged %d, then: %w", n, err))
		return
	}
	h.opts.Logger.Info("ringwal: admin console purged dead letters", "purged", n)
	h.render(w, r, http.StatusOK, "purged", page{Title: "Purged", Nav: "dead-letters", Data: PurgeResult{Purged: n}})
}
