package admin

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// registerBackup adds GET /api/backup.
func (h *handler) registerBackup() {
	h.mux.HandleFunc("GET /api/backup", h.backup)
}

// backup answers GET /api/backup: Engine.Backup streamed as the body
// (application/x-tar), behind the token like every route. An error before
// the first byte (a memory-only engine: 400; a closed one: 503) is a JSON
// error answer; one after it aborts the connection, so that the client
// sees a cut stream, which Restore refuses (its manifest comes last). The
// server's write timeout is lifted for this answer: a backup takes as
// long as the engine's data takes to copy.
func (h *handler) backup(w http.ResponseWriter, r *http.Request) {
	if len(r.URL.Query()) > 0 {
		badRequest(w, "query: GET /api/backup takes no parameters")
		return
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	bw := &backupWriter{w: w}
	info, err := h.e.Backup(bw)
	if err != nil {
		if !bw.started {
			h.fail(w, r, err)
			return
		}
		h.opts.Logger.Error("ringwal: backup failed midway; connection aborted", "err", err)
		panic(http.ErrAbortHandler)
	}
	if !bw.started { // a backup always writes; keep the answer well-formed anyway
		bw.start()
	}
	h.opts.Logger.Info("ringwal: backup", "index", info.Index, "files", info.Files, "bytes", info.Bytes)
}

// backupWriter sends the answer's header with the first byte.
type backupWriter struct {
	w       http.ResponseWriter
	started bool
}

func (b *backupWriter) start() {
	b.started = true
	hd := b.w.Header()
	hd.Set("Content-Type", "application/x-tar")
	hd.Set("Content-Disposition", `attachment; filename="ringwal-backup.tar"`)
	hd.Set("Cache-Control", "no-store")
	b.w.WriteHeader(http.StatusOK)
}

func (b *backupWriter) Write(p []byte) (int, error) {
	if !b.started {
		b.start()
	}
	return b.w.Write(p)
}

// Backup streams a backup of the engine (GET /api/backup, Engine.Backup)
// into w and returns the bytes written. A stream the server cut midway is
// an error here (and refused by ringwal.Restore). The context bounds the
// whole transfer.
func (c *Client) Backup(ctx context.Context, w io.Writer) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/api/backup", nil)
	if err != nil {
		return 0, fmt.Errorf("admin client: %w", err)
	}
	req.Header.Set("Accept", "application/x-tar, application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("admin client: GET /api/backup: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return 0, fmt.Errorf("admin client: GET /api/backup: reading the answer: %w", err)
		}
		return 0, answerError(resp, raw)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-tar" {
		return 0, &Error{Status: resp.StatusCode, Message: "the answer is " + strconv.Quote(ct) + ", not a backup", err: ErrProtocol}
	}
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("admin client: GET /api/backup: after %d bytes: %w", n, err)
	}
	return n, nil
}
