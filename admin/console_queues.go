package admin

// The console's queue pages and actions: the queues with their counts,
// rates, pauses and options; one queue with its charts; pausing, resuming
// and deleting one (after a confirmation). Queue names travel in query strings and form fields,
// never in the path, as keys do; the default queue is DefaultQueue.

import (
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"time"

	"github.com/ringwal/ringwal"
)

// queueRow is one queue of the queues page.
type queueRow struct {
	QueueView
	Rate        *queueRate   // nil: no rate yet (or past maxRateQueues)
	History     template.URL // its page with charts
	Messages    template.URL // its live messages
	DeadLetters template.URL // its dead letters
}

// queuesView is the queues page's data.
type queuesView struct {
	Queues         []queueRow
	RateSpan       time.Duration // of the rates not from the engine's history
	Sampled        bool          // some rates are not from the engine's history
	DeliveryPaused bool
	Now            time.Time
}

// queueLinks returns the queries of a queue's messages and of its dead
// letters (the same filter today; two fields so that pages can differ).
func queueLinks(name string) (messages, dead template.URL) {
	q := template.URL(url.Values{"queue": {name}}.Encode())
	return q, q
}

func (h *handler) queuesPage(w http.ResponseWriter, r *http.Request) {
	infos := h.e.Queues()
	s, ok := h.pageStats(w, r)
	if !ok {
		return
	}
	now := h.now()
	h.con.rates.addQueues(now, s)
	v := queuesView{DeliveryPaused: s.DeliveryPaused, Now: now}
	var rates map[string]queueRate
	rates, v.RateSpan, _ = h.con.rates.queueRates()
	for _, q := range NewQueueViews(infos, s) {
		row := queueRow{QueueView: q}
		if hist := h.e.QueueHistory(q.EngineName()); hist != nil {
			// The engine's history: the last minute of its samples.
			if len(hist) > 0 {
				last := hist[len(hist)-1]
				if rs, span := lastMinute(hist, last.Start.Add(last.Length), false); span > 0 {
					row.Rate = &queueRate{Enqueued: rs[0].PerSecond, Acked: rs[1].PerSecond, DeadLettered: rs[2].PerSecond}
				}
			}
		} else if rt, ok := rates[q.EngineName()]; ok {
			row.Rate = &rt
			v.Sampled = true
		}
		row.Messages, row.DeadLetters = queueLinks(q.Name)
		row.History = template.URL(url.Values{"queue": {q.Name}}.Encode())
		v.Queues = append(v.Queues, row)
	}
	h.render(w, r, http.StatusOK, "queues", page{Title: "Queues", Nav: "queues",
		Flash: flashes[r.URL.Query().Get("done")], Data: v})
}

// queueView is a queue's page: its counts and charts.
type queueView struct {
	Q        queueRow
	Charts   chartsView
	Followed bool // the engine keeps its history
	Now      time.Time
}

// queuePage shows one queue (queue= its admin name) with its charts: its
// rates and counts by state from the engine's history. 404 for an
// undeclared queue.
func (h *handler) queuePage(w http.ResponseWriter, r *http.Request) {
	in, ok := h.consoleQueue(w, r, r.URL.Query().Get("queue"))
	if !ok {
		return
	}
	v := queueView{Q: queueRow{QueueView: NewQueueView(in, h.e.Queue(in.Name).Stats())}, Now: h.now()}
	v.Q.Messages, v.Q.DeadLetters = queueLinks(v.Q.Name)
	hist := h.e.QueueHistory(in.Name)
	v.Followed = hist != nil
	window, links := pickWindow(r)
	v.Charts = newCharts(hist, window, links, "queue", false)
	h.render(w, r, http.StatusOK, "queue", page{Title: "Queue " + v.Q.Name, Nav: "queues", Data: v})
}

// formQueue reads the form's queue (its admin name) and returns the
// declared queue it names; false when it answered the request (400 for
// none, 404 for an unknown one: a console action declares nothing).
func (h *handler) formQueue(w http.ResponseWriter, r *http.Request) (ringwal.QueueInfo, bool) {
	name := r.PostForm.Get("queue")
	if name == "" {
		h.errorPage(w, r, http.StatusBadRequest, "The form names no queue.")
		return ringwal.QueueInfo{}, false
	}
	return h.consoleQueue(w, r, name)
}

// consoleQueue returns the declared queue name (its admin name) names;
// false when it answered the request: 404 for an unknown queue (the
// console declares nothing), or the closed engine's page.
func (h *handler) consoleQueue(w http.ResponseWriter, r *http.Request, name string) (ringwal.QueueInfo, bool) {
	in, ok := queueInfo(h.e, EngineQueueName(name))
	if !ok {
		if engineClosed(h.e) {
			h.failPage(w, r, ringwal.ErrClosed)
			return in, false
		}
		h.errorPage(w, r, http.StatusNotFound, "No queue "+quoteQueue(EngineQueueName(name))+".")
		return in, false
	}
	return in, true
}

func (h *handler) pauseQueueAction(w http.ResponseWriter, r *http.Request) {
	in, ok := h.formQueue(w, r)
	if !ok {
		return
	}
	until, ok := h.formUntil(w, r)
	if !ok {
		return
	}
	if err := h.e.Queue(in.Name).Pause(until); err != nil {
		h.failPage(w, r, err)
		return
	}
	h.opts.Logger.Info("ringwal: admin console paused a queue", "queue", AdminQueueName(in.Name), "until", until)
	seeOther(w, r, "queues?done=queue-paused")
}

func (h *handler) resumeQueueAction(w http.ResponseWriter, r *http.Request) {
	in, ok := h.formQueue(w, r)
	if !ok {
		return
	}
	if err := h.e.Queue(in.Name).Resume(); err != nil {
		h.failPage(w, r, err)
		return
	}
	h.opts.Logger.Info("ringwal: admin console resumed a queue", "queue", AdminQueueName(in.Name))
	seeOther(w, r, "queues?done=queue-resumed")
}

// deleteQueueAction deletes a queue once confirmed: without confirm=yes
// it answers the confirmation page, whose form posts again with it. A
// queue that holds messages is refused with 409 and the counts.
func (h *handler) deleteQueueAction(w http.ResponseWriter, r *http.Request) {
	in, ok := h.formQueue(w, r)
	if !ok {
		return
	}
	if in.Name == "" { // no confirmation page for what the engine refuses
		h.errorPage(w, r, http.StatusBadRequest, "The default queue cannot be deleted.")
		return
	}
	if r.PostForm.Get("confirm") != "yes" {
		v := NewQueueView(in, h.e.Queue(in.Name).Stats())
		h.render(w, r, http.StatusOK, "queuedelete", page{Title: "Delete queue " + v.Name, Nav: "queues", Data: v})
		return
	}
	if err := h.e.DeleteQueue(in.Name); err != nil {
		if isRefusal(in.Name, err) {
			h.errorPage(w, r, http.StatusConflict, err.Error()+": cancel, drain or purge them first.")
			return
		}
		if errors.Is(err, ringwal.ErrNotFound) {
			h.errorPage(w, r, http.StatusNotFound, err.Error())
			return
		}
		h.failPage(w, r, err)
		return
	}
	h.opts.Logger.Info("ringwal: admin console deleted a queue", "queue", in.Name)
	seeOther(w, r, "queues?done=queue-deleted")
}

// queueOption is an entry of a page's queue selector.
type queueOption struct {
	Name     string // the admin name
	Selected bool
}

// maxQueueOptions bounds a queue selector's list: with more queues the
// selector is a text field.
const maxQueueOptions = 200

// queueSelector is the queue filter of the messages and dead-letter
// pages: a list of the declared queues, or a text field when there are
// more than maxQueueOptions.
type queueSelector struct {
	Selected string // the admin name; "" every queue
	Options  []queueOption
	Text     bool // too many queues for a list
}

// newQueueSelector returns the selector with selected chosen.
func (h *handler) newQueueSelector(selected string) queueSelector {
	sel := queueSelector{Selected: selected}
	infos := h.e.Queues()
	if len(infos) > maxQueueOptions {
		sel.Text = true
		return sel
	}
	found := selected == ""
	for _, name := range queueNames(infos) {
		sel.Options = append(sel.Options, queueOption{Name: name, Selected: name == selected})
		found = found || name == selected
	}
	if !found { // a queue deleted since, or a typo: keep it selected
		sel.Options = append(sel.Options, queueOption{Name: selected, Selected: true})
	}
	return sel
}
