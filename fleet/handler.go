package fleet

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/ringwal/ringwal"
)

// Handler returns the routes members call each other on (and clients may
// call to enqueue through any member), under /fleet/v1/, behind the
// bearer Token:
//
//	POST /fleet/v1/enqueue                       wireEnqueue -> wireEnqueued
//	GET  /fleet/v1/messages/{shard}/{id}         ringwal.Info
//	POST /fleet/v1/messages/{shard}/{id}/cancel
//	POST /fleet/v1/schedules/{shard}             ringwal.Schedule
//	GET  /fleet/v1/members                       []MemberInfo
//	GET  /fleet/v1/status                        this member's Stats and Owned
//
// The caller mounts it.
func (m *Member) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /fleet/v1/enqueue", m.handleEnqueue)
	mux.HandleFunc("GET /fleet/v1/messages/{shard}/{id}", m.handleGet)
	mux.HandleFunc("POST /fleet/v1/messages/{shard}/{id}/cancel", m.handleCancel)
	mux.HandleFunc("POST /fleet/v1/schedules/{shard}", m.handleSchedule)
	mux.HandleFunc("GET /fleet/v1/members", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, m.Members())
	})
	mux.HandleFunc("GET /fleet/v1/status", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, struct {
			Node  string `json:"node"`
			Owned []int  `json:"owned"`
			Stats Stats  `json:"stats"`
		}{m.o.Node, m.Owned(), m.Stats()})
	})
	return m.auth(mux)
}

func (m *Member) auth(h http.Handler) http.Handler {
	want := []byte("Bearer " + m.o.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m.o.Token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			writeJSON(w, http.StatusUnauthorized, wireError{Code: "unauthorized", Error: "fleet: bad or missing bearer token"})
			return
		}
		h.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, ringwal.ErrInvalid):
		status = http.StatusBadRequest
	case errors.Is(err, ringwal.ErrNotFound):
		status = http.StatusNotFound
	case retryable(err):
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, wireError{Code: errCode(err), Error: err.Error()})
}

func (m *Member) handleEnqueue(w http.ResponseWriter, r *http.Request) {
	var req wireEnqueue
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 256<<20)).Decode(&req); err != nil {
		writeErr(w, invalidf("enqueue: %v", err))
		return
	}
	resp := wireEnqueued{Groups: make([][]wireResult, len(req.Groups))}
	done := make(chan struct{}, len(req.Groups))
	for i, g := range req.Groups {
		go func() {
			defer func() { done <- struct{}{} }()
			var rs []result
			if g.Shard < -1 || g.Shard >= m.shards {
				rs = make([]result, len(g.Messages))
				for j := range rs {
					rs[j].Err = invalidf("enqueue: shard %d outside 0 to %d", g.Shard, m.shards-1)
				}
			} else {
				rs = m.enqueueAll(r.Context(), g.Messages, g.Shard)
			}
			out := make([]wireResult, len(rs))
			for j, x := range rs {
				out[j] = toWire(x)
			}
			resp.Groups[i] = out
		}()
	}
	for range req.Groups {
		<-done
	}
	writeJSON(w, http.StatusOK, resp)
}

// pathID reads {shard}/{id} from r's path.
func pathID(r *http.Request) (ID, error) {
	return ParseID(r.PathValue("shard") + "/" + r.PathValue("id"))
}

func (m *Member) handleGet(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err == nil {
		var info ringwal.Info
		if info, err = m.servedHere(id.Shard, func(e *ringwal.Engine) (ringwal.Info, error) { return e.Get(id.ID) }); err == nil {
			writeJSON(w, http.StatusOK, info)
			return
		}
	}
	writeErr(w, err)
}

func (m *Member) handleCancel(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err == nil {
		if _, err = m.servedHere(id.Shard, func(e *ringwal.Engine) (ringwal.Info, error) { return ringwal.Info{}, e.Cancel(id.ID) }); err == nil {
			writeJSON(w, http.StatusOK, struct{}{})
			return
		}
	}
	writeErr(w, err)
}

func (m *Member) handleSchedule(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(r.PathValue("shard"))
	if err != nil {
		writeErr(w, invalidf("schedule: shard %q", r.PathValue("shard")))
		return
	}
	var s ringwal.Schedule
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&s); err != nil {
		writeErr(w, invalidf("schedule: %v", err))
		return
	}
	if _, err := m.servedHere(n, func(e *ringwal.Engine) (ringwal.Info, error) { return ringwal.Info{}, e.AddSchedule(s) }); err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}

// servedHere runs fn on shard n's engine if n serves here, else refuses
// with ErrNotOwner: a forwarded call is never forwarded again.
func (m *Member) servedHere(n int, fn func(*ringwal.Engine) (ringwal.Info, error)) (ringwal.Info, error) {
	if n < 0 || n >= m.shards {
		return ringwal.Info{}, invalidf("shard %d outside 0 to %d", n, m.shards-1)
	}
	_, e, ok := m.localShard(n)
	if !ok {
		return ringwal.Info{}, notServed(n, m.o.Node)
	}
	return fn(e)
}

func notServed(n int, node string) error {
	return fmt.Errorf("%w: fleet: shard %d is not served by %s", ringwal.ErrNotOwner, n, node)
}
