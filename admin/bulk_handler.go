package admin

// The bulk routes: count what a query matches (and a mark), then act on
// exactly what was counted. Each acting route requires the count's mark
// as through, so that a request made from a count (the console's
// confirmation, a script's) never touches a dead letter or message that
// arrived after it.

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/dlq"
)

// CountView answers GET /api/dead-letters/count and GET
// /api/messages/count: how many the query matches, and the mark to pass
// as through to the matching bulk route so that it acts on exactly those.
// Through is a decimal string, as cursors are; "0" means nothing was ever
// there to count (a bulk route given it acts on nothing).
type CountView struct {
	Count   int    `json:"count"`
	Through string `json:"through"`
}

// BulkResult answers a bulk route: how many it redrove, reviewed or
// cancelled. A bulk route that fails part-way answers the error with
// "count", the number done before it failed.
type BulkResult struct {
	Count int `json:"count"`
}

// registerBulk adds the bulk routes to the API's mux.
func (h *handler) registerBulk() {
	h.mux.HandleFunc("GET /api/dead-letters/count", h.countDeadLetters)
	h.mux.HandleFunc("POST /api/dead-letters/redrive", h.redriveMatching)
	h.mux.HandleFunc("POST /api/dead-letters/review", h.reviewMatching)
	h.mux.HandleFunc("GET /api/messages/count", h.countMessages)
	h.mux.HandleFunc("POST /api/messages/cancel", h.cancelMatching)
	// A GET of it would be GET /api/messages/{id} of the ID "cancel":
	// answer it as the wrong method it is.
	h.mux.HandleFunc("GET /api/messages/cancel", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Allow", http.MethodPost)
		replyError(w, http.StatusMethodNotAllowed, http.StatusText(http.StatusMethodNotAllowed))
	})
}

var errDefaultQueueBulk = errors.New("queue " + DefaultQueue + ": the default queue's dead letters or messages cannot be selected apart in bulk; name a queue, or none for every queue")

// splitThrough takes the through parameter out of v (a copy): the rest
// is the list route's grammar. required says whether it must be there.
func splitThrough(v url.Values, required bool) (url.Values, uint64, error) {
	rest := url.Values{}
	for name, vals := range v {
		if name != "through" {
			rest[name] = vals
		}
	}
	vals, ok := v["through"]
	switch {
	case !ok && required:
		return rest, 0, errNoThrough
	case !ok:
		return rest, 0, nil
	case len(vals) > 1:
		return rest, 0, fmt.Errorf("query parameter %q given %d times", "through", len(vals))
	}
	n, err := strconv.ParseUint(vals[0], 10, 64)
	if err != nil {
		return rest, 0, fmt.Errorf("through %q is not a mark (a count route's through)", vals[0])
	}
	return rest, n, nil
}

// deadLetterBulkQuery reads a bulk dead-letter route's query: the
// parameters of ParseDeadLetterQuery and through (required when
// requireThrough), as a dlq.Query with Through set. DefaultQueue is
// refused: the engine cannot select the default queue's dead letters
// apart. It answers 400 itself and returns false when the query is bad.
func (h *handler) deadLetterBulkQuery(w http.ResponseWriter, r *http.Request, requireThrough bool) (dlq.Query, bool) {
	v := r.URL.Query()
	q, err := ParseDeadLetterQuery(v, h.now())
	switch {
	case err != nil:
	case requireThrough && !v.Has("through"):
		err = errNoThrough
	case q.Queue == DefaultQueue:
		err = errDefaultQueueBulk
	default:
		return q, true
	}
	badRequest(w, "%v", err)
	return dlq.Query{}, false
}

var errNoThrough = errors.New("through is required: the mark a count route answered, so that only what was counted is acted on")

func (h *handler) countDeadLetters(w http.ResponseWriter, r *http.Request) {
	q, ok := h.deadLetterBulkQuery(w, r, false)
	if !ok {
		return
	}
	n, mark, err := h.e.CountDeadLetters(q)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if q.Through != 0 {
		mark = min(mark, q.Through)
	}
	h.reply(w, http.StatusOK, CountView{Count: n, Through: strconv.FormatUint(mark, 10)})
}

func (h *handler) redriveMatching(w http.ResponseWriter, r *http.Request) {
	q, ok := h.deadLetterBulkQuery(w, r, true)
	if !ok {
		return
	}
	var n int
	var err error
	if q.Through != 0 { // 0: nothing was ever dead-lettered when it was counted
		n, err = h.e.RedriveMatching(q)
	}
	h.answerBulk(w, r, n, err, "redrove dead letters", q.Through)
}

func (h *handler) reviewMatching(w http.ResponseWriter, r *http.Request) {
	q, ok := h.deadLetterBulkQuery(w, r, true)
	if !ok {
		return
	}
	var body ReviewRequest
	if _, ok := readBody(w, r, &body); !ok {
		return
	}
	var n int
	var err error
	if q.Through != 0 {
		n, err = h.e.ReviewMatching(q, body.Note)
	}
	h.answerBulk(w, r, n, err, "reviewed dead letters", q.Through)
}

// messageBulkFilter reads a bulk message route's query: queue, key and
// state as ParseMessageQuery reads them (after and limit are refused: a
// bulk cancel acts on every message counted) and through.
func (h *handler) messageBulkFilter(w http.ResponseWriter, r *http.Request, requireThrough bool) (ringwal.Filter, bool) {
	rest, through, err := splitThrough(r.URL.Query(), requireThrough)
	var mq MessageQuery
	if err == nil {
		mq, err = ParseMessageQuery(rest)
	}
	switch {
	case err != nil:
	case mq.After != 0 || mq.Limit != 0:
		err = errors.New("after and limit page a list; a bulk route acts on every message counted")
	case mq.Queue == DefaultQueue:
		err = errDefaultQueueBulk
	default:
		return mq.Filter(through), true
	}
	badRequest(w, "%v", err)
	return ringwal.Filter{}, false
}

func (h *handler) countMessages(w http.ResponseWriter, r *http.Request) {
	f, ok := h.messageBulkFilter(w, r, false)
	if !ok {
		return
	}
	n, mark, err := h.e.CountMessages(f)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.reply(w, http.StatusOK, CountView{Count: n, Through: strconv.FormatUint(mark, 10)})
}

func (h *handler) cancelMatching(w http.ResponseWriter, r *http.Request) {
	f, ok := h.messageBulkFilter(w, r, true)
	if !ok {
		return
	}
	var n int
	var err error
	if f.Through != 0 { // 0: nothing was ever enqueued when it was counted
		n, err = h.e.CancelMatching(f)
	}
	h.answerBulk(w, r, n, err, "cancelled messages", f.Through)
}

// answerBulk logs what a bulk route did and answers its count; a failure
// part-way is the error's status with the count done.
func (h *handler) answerBulk(w http.ResponseWriter, r *http.Request, n int, err error, did string, through uint64) {
	if err != nil {
		if n == 0 {
			h.fail(w, r, err)
			return
		}
		h.opts.Logger.Error("ringwal: admin "+did+", then failed", "count", n, "through", through, "err", err)
		code := http.StatusInternalServerError
		switch {
		case errors.Is(err, ringwal.ErrFull):
			code = http.StatusServiceUnavailable
			w.Header().Set("Retry-After", "1")
		case errors.Is(err, ringwal.ErrClosed):
			code = http.StatusServiceUnavailable
		}
		h.reply(w, code, errorReply{Error: err.Error(), Count: n})
		return
	}
	h.opts.Logger.Info("ringwal: admin "+did, "count", n, "through", through, "query", r.URL.RawQuery)
	h.reply(w, http.StatusOK, BulkResult{Count: n})
}
