package admin

// The JSON API of the key controls: keys, pauses (of a key or of all
// delivery), cancel, and the live messages of a key.

import (
	"net/http"
	"time"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/internal/adminfmt"
)

// keys answers GET /api/keys: NewKeyViews of the engine's Stats.
func (h *handler) keys(w http.ResponseWriter, r *http.Request) {
	s := h.e.Stats()
	if s.Closed {
		h.fail(w, r, ringwal.ErrClosed)
		return
	}
	h.reply(w, http.StatusOK, NewKeyViews(s))
}

// deadLetterKeys answers GET /api/dead-letters/keys: how many dead
// letters each key has (Engine.DeadLetterKeys: the store's kept counts,
// not a walk), so that a key that only has dead letters is listed too.
func (h *handler) deadLetterKeys(w http.ResponseWriter, r *http.Request) {
	byKey, err := h.e.DeadLetterKeys()
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.reply(w, http.StatusOK, byKey)
}

// pauseUntil reads the optional PauseRequest body; false when it answered
// the request itself (400 or 413).
func (h *handler) pauseUntil(w http.ResponseWriter, r *http.Request) (time.Time, bool) {
	var req PauseRequest
	if _, ok := readBody(w, r, &req); !ok {
		return time.Time{}, false
	}
	until, err := adminfmt.ParseUntil(req.Until, h.now())
	if err != nil {
		badRequest(w, "%v", err)
		return time.Time{}, false
	}
	return until, true
}

// keyState answers a key's pause or resume with the key's pause after it,
// read in O(1) (Engine.KeyPause), not from a Stats.
func (h *handler) keyState(w http.ResponseWriter, key, status string) {
	v := PauseView{Key: key, Status: status}
	var until time.Time
	if v.Paused, until = h.e.KeyPause(key); v.Paused && !until.IsZero() {
		v.PausedUntil = &until
	}
	h.reply(w, http.StatusOK, v)
}

func (h *handler) pauseKey(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	until, ok := h.pauseUntil(w, r)
	if !ok {
		return
	}
	if err := h.e.PauseKey(key, until); err != nil {
		h.fail(w, r, err)
		return
	}
	h.opts.Logger.Info("ringwal: admin paused a key", "key", key, "until", until)
	h.keyState(w, key, "paused")
}

func (h *handler) resumeKey(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	if err := h.e.ResumeKey(key); err != nil {
		h.fail(w, r, err)
		return
	}
	h.opts.Logger.Info("ringwal: admin resumed a key", "key", key)
	h.keyState(w, key, "resumed")
}

func (h *handler) pauseAll(w http.ResponseWriter, r *http.Request) {
	until, ok := h.pauseUntil(w, r)
	if !ok {
		return
	}
	if err := h.e.Pause(until); err != nil {
		h.fail(w, r, err)
		return
	}
	h.opts.Logger.Info("ringwal: admin paused all delivery", "until", until)
	v := PauseView{Status: "paused", Paused: true}
	if !until.IsZero() {
		v.PausedUntil = &until
	}
	h.reply(w, http.StatusOK, v)
}

func (h *handler) resumeAll(w http.ResponseWriter, r *http.Request) {
	if err := h.e.Resume(); err != nil {
		h.fail(w, r, err)
		return
	}
	h.opts.Logger.Info("ringwal: admin resumed all delivery")
	paused, _ := h.e.KeyPause("") // O(1), not a Stats
	h.reply(w, http.StatusOK, PauseView{Status: "resumed", Paused: paused})
}

func (h *handler) cancel(w http.ResponseWriter, r *http.Request) {
	h.act(w, r, h.e.Cancel, "cancelled a message", "cancelled")
}

// messages answers GET /api/messages: one MessagePage of the live
// messages that ParseMessageQuery's parameters select.
func (h *handler) messages(w http.ResponseWriter, r *http.Request) {
	q, err := ParseMessageQuery(r.URL.Query())
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	if engineClosed(h.e) {
		h.fail(w, r, ringwal.ErrClosed)
		return
	}
	h.reply(w, http.StatusOK, NewMessagePage(h.e, q))
}
