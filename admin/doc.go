// Package admin is the operator's side of a ringwal engine over HTTP: the
// JSON admin API (NewHandler), its Go client (NewClient), and the one
// vocabulary both share with cmd/ringwal: the JSON views of the engine's
// types (StatsView, InfoView, DeadLetterView, ...) and the grammar of
// dead-letter queries (ParseDeadLetterQuery).
//
// It owns the routes, the request and answer formats, authentication by
// bearer token and the CSRF defence. It owns no engine state: every answer
// is built from the root package's public API. It does not listen, mount
// Prometheus metrics (package prom) or add authentication beyond the
// token; the caller mounts the handler in its own server, on an internal
// listener.
//
// # Routes
//
// The JSON API lives under /api/, relative to where the handler is
// mounted, so that the rest of its space (the root "/" in particular) is
// free for a web console. Under a prefix, strip it:
//
//	mux.Handle("/admin/", http.StripPrefix("/admin", admin.NewHandler(e, admin.Options{Token: tok})))
//
// The endpoints (read endpoints are GET, HEAD too; mutating ones POST
// only; anything else is 405 with Allow):
//
//	GET  /api/stats                      Engine.Stats as a StatsView
//	GET  /api/messages/{id}              Engine.Get as an InfoView; a dead message also carries its dead letter
//	POST /api/messages/{id}/requeue      Engine.Requeue; answers an ActionView
//	GET  /api/dead-letters               Engine.DeadLetters, paged: a DeadLetterPage {"entries": [...], "next": "cursor"}
//	POST /api/dead-letters/{id}/redrive  Engine.Redrive; answers an ActionView
//	POST /api/dead-letters/{id}/review   Engine.MarkReviewed; body ReviewRequest {"note": "..."} (optional)
//	POST /api/dead-letters/purge         Engine.PurgeDeadLetters; body PurgeRequest; answers PurgeResult {"purged": n}
//
// GET /api/dead-letters takes the parameters of ParseDeadLetterQuery:
// category (repeatable or comma-separated), key, since and until (RFC 3339,
// or a duration such as 24h meaning that long ago; since ≤ dead_at <
// until), reviewed (true or false), after (the next cursor of the previous
// page) and limit (1 to MaxLimit, default DefaultLimit). The answer's next
// is present when there may be more: pass it as after. Unknown or repeated
// parameters are refused.
//
// The purge body has the same fields as JSON (PurgeRequest): {"category":
// ["poison"], "key": "...", "since": "...", "until": "...", "reviewed":
// true, "after": "...", "limit": n} (limit 0 or absent: no limit). A query
// without any filter would purge every dead letter, so it is refused
// unless it also says "all": true.
//
// # Formats
//
// Requests and answers are JSON (unknown fields in a request body are
// refused; bodies are bounded by MaxBody, 413 past it). Field names are
// snake_case; IDs are JSON numbers; a payload is text when it is valid
// UTF-8, base64 otherwise, with "payload_encoding" saying which ("text"
// or "base64"); times are RFC 3339 strings, omitted when zero; durations
// are float seconds in fields whose names end in _seconds; priorities,
// states and categories are their lower-case names.
//
// # Errors
//
// Every error is answered {"error": "..."}, never a stack: 400 for bad
// input (malformed JSON, a bad ID, bad query parameters), 401 without the
// bearer token when Options.Token is set, 403 for a cross-origin POST, 404
// for an unknown ID or path (ringwal.ErrNotFound), 405 for a wrong method,
// 413 for a body over MaxBody, 503 once the engine is closed
// (ringwal.ErrClosed) or, with Retry-After, when it is full
// (ringwal.ErrFull), and 500 otherwise (a panic included; its stack goes
// to Options.Logger). The Client turns them back into errors wrapping the
// same sentinels (see Error).
//
// # Security
//
// With Options.Token set, every request needs "Authorization: Bearer
// <token>". Without it the handler has no authentication: anyone who can
// reach it can read payloads, redrive, requeue and purge, so mount it
// behind authentication of your own. The CSRF defence is always on: a
// POST whose Origin header names another host than the request's Host
// (or, without an Origin, whose Sec-Fetch-Site is cross-site) is refused
// with 403, so a web page elsewhere cannot drive the API through an
// operator's browser. A client that sends no Origin (curl, Client) is
// allowed.
//
// Operator actions (requeue, redrive, review, purge) are logged at Info on
// Options.Logger. The handler is safe for concurrent use.
package admin
