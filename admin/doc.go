// Package admin is the operator's side of a ringwal engine over HTTP. It
// holds the JSON admin API and the web console, both served by
// NewHandler. It holds the API's Go client, NewClient. It also holds the
// one vocabulary that all of them share with cmd/ringwal.
//
// Its exported names fall into groups, each public for a reason.
//
// NewHandler, Options, Protect, ReadAuthStats and AuthStats serve the API
// and console in your own server. They also put other endpoints, such as
// /metrics, behind the same token and throttle.
//
// NewClient, Client, ClientOption (WithToken, WithHTTPClient), Error,
// ErrUnauthorized, ErrConflict and ErrThrottled call the API from Go.
//
// The views are what the API answers and the Client returns: StatsView,
// InfoView, MessageView, DeadLetterView, DeadLetterPage, MessagePage,
// KeyView, QueueView, ScheduleView, and the action, count and result
// views. Their constructors (NewStatsView, NewDeadLetterViews,
// NewQueueViews, ...) build the same views from an engine in process.
// cmd/ringwal does so for a stopped directory, so that both print alike.
// FindKey, FindQueue and FindSchedule pick one view out of a list the
// Client returned.
//
// The request bodies and the query grammar say what a request carries:
// PurgeRequest, PauseRequest, ReviewRequest, MessageQuery,
// ParseDeadLetterQuery, DeadLetterQueryValues, ParseMessageQuery,
// ParseCursor, ParseMark, Cursor, Strings, QueryParams and
// MessageQueryParams. A page's next and a count's through are strings in
// JSON. Some of these names turn them back into a cursor or a mark for
// the next call. MessageQuery.Filter gives a message query to the engine.
//
// The names and paths are DefaultQueue, AdminQueueName, EngineQueueName,
// KeyPath, QueuePath and SchedulePath. The limits and enumerations of the
// format are MaxBody, MaxQuery, MaxForm, MaxLimit, DefaultLimit,
// PayloadText, PayloadBase64, and the overlap and catch-up names.
//
// What only the console and the CLI need is in internal/adminfmt, not
// here: number formatting and the parsers of form values.
//
// The package owns the routes, the request and answer formats and the
// console's pages. It owns authentication by bearer token and console
// sessions, and the CSRF defence. The console's pages are html/template,
// a stylesheet and a small script, embedded in the binary: no CDN, no
// build step. The package owns no engine state. Every answer and page is
// built from the root package's public API. The console's charts and
// rates come from the engine's history. Only the rates of the queues the
// engine keeps no history of come from a small ring of Stats samples the
// handler keeps. The package does not listen, mount Prometheus metrics
// (package prom) or add authentication beyond the token. The caller
// mounts the handler in its own server, on an internal listener.
//
// # Routes
//
// The JSON API lives under /api/, relative to where the handler is
// mounted. Everything else is the web console (see Console below). Under
// a prefix, strip it:
//
//	mux.Handle("/admin/", http.StripPrefix("/admin", admin.NewHandler(e, admin.Options{Token: tok})))
//
// The endpoints follow. Read endpoints are GET, and HEAD too. Mutating
// ones are POST only. Any other method is 405 with Allow.
//
//	GET  /api/stats                      Engine.Stats as a StatsView
//	GET  /api/history                    Engine.History as a HistoryView: samples oldest first
//	GET  /api/next?n=N                   Engine.Peek: the next n (default 10, at most MaxLimit) in scheduling order, as InfoViews
//	GET  /api/messages/{id}              Engine.Get as an InfoView; a dead message also carries its dead letter
//	POST /api/messages/{id}/requeue      Engine.Requeue; answers an ActionView
//	GET  /api/dead-letters               Engine.DeadLetters, paged: a DeadLetterPage {"entries": [...], "next": "cursor"}
//	POST /api/dead-letters/{id}/redrive  Engine.Redrive; answers an ActionView
//	POST /api/dead-letters/{id}/purge    Engine.PurgeDeadLetter (one, for good); answers ActionView
//	POST /api/dead-letters/{id}/review   Engine.MarkReviewed; body ReviewRequest {"note": "..."} (optional)
//	POST /api/dead-letters/purge         Engine.PurgeDeadLetters; body PurgeRequest; answers PurgeResult {"purged": n}
//	GET  /api/dead-letters/count         Engine.CountDeadLetters of the list's query: a CountView {"count": n, "through": "mark"}
//	POST /api/dead-letters/redrive       Engine.RedriveMatching of the list's query and through (required); answers
//	                                     BulkResult {"count": n}
//	POST /api/dead-letters/review        Engine.ReviewMatching likewise; body ReviewRequest {"note": "..."} (optional)
//	GET  /api/dead-letters/keys          Engine.DeadLetterKeys: the dead letters per key, {"key": n}
//	GET  /api/keys                       every key (NewKeyViews): pause, live, in flight, waiting, held, throttled, at cap, breaker
//	POST /api/keys/{key}/pause           Engine.PauseKey; body PauseRequest {"until": "1h" | RFC 3339} (optional); answers a PauseView
//	POST /api/keys/{key}/resume          Engine.ResumeKey; answers a PauseView
//	POST /api/pause                      Engine.Pause (all delivery); body PauseRequest (optional); answers a PauseView
//	POST /api/resume                     Engine.Resume; answers a PauseView
//	POST /api/messages/{id}/cancel       Engine.Cancel; answers an ActionView
//	GET  /api/messages                   Engine.Messages, paged: a MessagePage {"entries": [...], "next": "cursor"}
//	GET  /api/messages/count             Engine.CountMessages of queue, key and state: a CountView
//	POST /api/messages/cancel            Engine.CancelMatching of queue, key, state and through (required); answers a BulkResult
//	GET  /api/queues                     every declared queue (NewQueueViews): options, pause and counts, the default first
//	GET  /api/queues/{queue}             one queue's QueueView
//	GET  /api/queues/{queue}/history     Engine.QueueHistory as a HistoryView (followed false: none kept)
//	POST /api/queues/{queue}/pause       Queue.Pause; body PauseRequest (optional); answers a QueueActionView
//	POST /api/queues/{queue}/resume      Queue.Resume; answers a QueueActionView
//	POST /api/queues/{queue}/delete      Engine.DeleteQueue; answers a QueueActionView; 409 with the counts while
//	                                     the queue holds live messages or dead letters
//	GET  /api/schedules                  every schedule (NewScheduleViews), by name: spec, queue, message, overlap,
//	                                     catch-up, jitter, pause, next and last tick, last run, runs, skipped, last error
//	GET  /api/schedules/{schedule}       one schedule's ScheduleView
//	POST /api/schedules/{schedule}/pause    Engine.PauseSchedule; answers a ScheduleActionView
//	POST /api/schedules/{schedule}/resume   Engine.ResumeSchedule; answers a ScheduleActionView
//	POST /api/schedules/{schedule}/trigger  Engine.TriggerSchedule; answers a ScheduleActionView with the run's "id";
//	                                        503 with Retry-After when the queue is full, 409 when the message's
//	                                        DedupID refuses the run
//	POST /api/schedules/{schedule}/remove   Engine.RemoveSchedule; answers a ScheduleActionView
//	GET  /api/backup                     Engine.Backup streamed as application/x-tar (Client.Backup; ringwal.Restore
//	                                     reads it); 400 for a memory-only engine; a failure midway aborts the connection
//
// A {key} in a path is one path segment, escaped (KeyPath):
// "slack:#ops/eu" is slack:%23ops%2Feu.
//
// GET /api/messages takes the parameters of ParseMessageQuery: queue,
// key, state, after and limit. A state is pending, delayed, leased or
// held. The state parameter is repeatable or comma-separated. After is
// the next cursor of the previous page: a message ID. Limit is 1 to
// MaxLimit, default DefaultLimit. The route stops walking the engine once
// it has the page. Each entry's "waiting" names why a pending message
// waits on its key: ordered, in-flight, rate or paused. It is absent when
// the message does not wait.
//
// GET /api/dead-letters takes the parameters of ParseDeadLetterQuery:
// queue, category, key, since, until, reviewed, after, limit and through.
// The category parameter is repeatable or comma-separated. Since and
// until are RFC 3339 times, or a duration such as 24h meaning that long
// ago. They select since ≤ dead_at < until. Reviewed is true or false.
// After is the next cursor of the previous page. Limit is 1 to MaxLimit,
// default DefaultLimit. Through keeps only those added up to a count's
// mark (see below). The answer's next is present when there may be more:
// pass it as after. Unknown or repeated parameters are refused.
//
// The purge body (PurgeRequest) has the same fields, as JSON: {"queue":
// "emails", "category": ["poison"], "key": "...", "since": "...",
// "until": "...", "reviewed": true, "after": "...", "limit": n}. A limit
// of 0, or none, means no limit. A query without any filter would purge
// every dead letter. So it is refused unless it also says "all": true.
//
// The bulk routes act on exactly what a count counted. Count first: GET
// .../count with the filters. Then pass the answer's through, with the
// same filters, to the acting route. A missing through is 400. A through
// of "0" is the mark of a count that found nothing ever added; it acts
// on nothing. A dead letter or message that arrived after the count is
// never touched. One removed since is skipped. Dead-letter routes take
// the list's parameters: limit bounds the work, and after starts at a
// cursor. Message routes take queue, key and state; after and limit are
// refused. The default queue alone (queue=_default) is refused, as for a
// purge. A route that fails part-way answers the error with "count", how
// many it did.
//
// # Queues
//
// The engine names the default queue "". The admin API names it
// DefaultQueue, "_default", wherever a queue is named: a {queue} path
// segment, a queue parameter or body field, QueueView.name. The engine
// reserves names that start with "_", so no named queue is called that.
// A {queue} is one path segment, escaped as a {key} is (QueuePath). The
// queue routes act on declared queues only. A pause or resume of an
// unknown name is 404, not a new queue; Queue.Pause would declare it.
// Deleting the default queue is 400, and deleting an unknown one 404.
// Deleting one that still holds messages is 409. The Client's error then
// wraps ErrConflict and ringwal.ErrInvalid.
//
// GET /api/messages, GET /api/dead-letters and the purge body take a
// queue filter. An absent queue selects every queue. A name selects that
// queue. _default selects the default queue only. Message and
// dead-letter views carry "queue", the engine's name, absent for the
// default queue. The engine's dead-letter queries cannot select the
// default queue alone: dlq.Query.Queue "" is every queue. So a page of
// ?queue=_default is found by reading every queue's dead letters, at most
// 10·MaxLimit of them a page. Such a page may hold fewer than its limit,
// even none, and still carry a next (NewDeadLetterPage). And a purge of
// {"queue": "_default"} is refused (400).
//
// # Schedules
//
// A {schedule} is the schedule's name, one path segment escaped as a
// {key} is (SchedulePath). An unknown name is 404 on every schedule
// route. A ScheduleView names its queue by admin name: DefaultQueue for
// the default queue. It names its overlap ("allow", "skip") and catch-up
// ("skip", "one", "all") by name. It gives its last tick's outcome by
// last_id and last_error. Its last_id is the last run, a trigger's
// included. Its last_error says why the last tick did not run; it is
// absent after a run. Schedules are added and changed by the application
// (Engine.AddSchedule), not through the API.
//
// # Formats
//
// Requests and answers are JSON. Unknown fields in a request body are
// refused. Bodies are bounded by MaxBody, 413 past it. Field names are
// snake_case. IDs are JSON numbers. A payload is text when it is valid
// UTF-8, base64 otherwise. Its "payload_encoding" says which: "text" or
// "base64". Times are RFC 3339 strings, omitted when zero. Durations are
// float seconds, in fields whose names end in _seconds. Priorities,
// states and categories are their lower-case names.
//
// # Errors
//
// Every error is answered {"error": "..."}, never a stack. Bad input is
// 400: malformed JSON, a bad ID, bad query parameters. A request without
// the bearer token is 401 when Options.Token is set. A cross-origin POST,
// or a Host not allowed, is 403 (see Security). An unknown ID or path is
// 404 (ringwal.ErrNotFound). A wrong method is 405. A queue's deletion
// refused while it holds messages is 409. So is a schedule's trigger that
// its message's DedupID refuses. A body over MaxBody is 413. A request a
// moment after a wrong token from the same address is 429 with
// Retry-After (see Security). Once the engine is closed, a request is 503
// (ringwal.ErrClosed). When the engine is full, it is 503 with
// Retry-After (ringwal.ErrFull). Anything else is 500, a panic included;
// a panic's stack goes to Options.Logger. The Client turns these answers
// back into errors wrapping the same sentinels (see Error).
//
// A query string longer than MaxQuery is answered 414, on the API and the
// console.
//
// # Console
//
// Every path outside /api/ is the web console: server-rendered HTML that
// works without JavaScript. A script only refreshes the overview in
// place. Without it, the overview reloads itself. All links and redirects
// are relative, so the console works under any prefix. Its pages:
//
//	GET  /?window=1h                overview: counts by state and priority tier, oldest pending,
//	                                charts of the engine's history (window 15m, 1h, 6h or 24h),
//	                                rates over the last minute, dead letters by category, totals,
//	                                latency, breakers, the write-ahead log since open; refreshes
//	GET  /queues                    every queue: counts, rates over the last minute, options, pause;
//	                                links to its messages, dead letters and page
//	GET  /queue?queue=&window=      one queue: counts and charts of its history
//	POST /queues/pause              form fields queue (its admin name: _default for the default queue), until (optional)
//	POST /queues/resume             form field queue
//	POST /queues/delete             form field queue; without confirm=yes: the confirmation page; 409 with the
//	                                counts while the queue holds messages
//	GET  /schedules                 every schedule: spec, queue, pause, next and last run, last outcome,
//	                                runs and skipped, options
//	POST /schedules/pause           form field schedule
//	POST /schedules/resume          form field schedule
//	POST /schedules/trigger         form field schedule: one run now
//	POST /schedules/remove          form field schedule; without confirm=yes: the confirmation page
//	GET  /keys                      keys and breakers: pause, waiting, held, throttled, at cap, breaker, dead letters
//	POST /keys/pause                form fields key, until (optional: 1h, RFC 3339; empty: until resumed)
//	POST /keys/resume               form field key
//	POST /pause, POST /resume       all delivery (pause: form field until, optional)
//	GET  /messages?queue=&key=&state=&after=   live messages, paged, with why each waits
//	POST /messages/{id}/cancel      without confirm=yes: the confirmation page; with it: Engine.Cancel
//	GET  /cancel-messages?id=..|all=true&filters   the bulk cancel's confirmation: how many of the selected
//	                                rows are live, or how many live messages the filters match (with the mark)
//	POST /cancel-messages           cancels them if the count is still the one confirmed (else confirms again)
//	GET  /dead-letters              dead letters, filtered by ParseDeadLetterQuery's parameters (queue among them)
//	GET  /dead-letters/{id}         one message: payload, headers, failure history, review and redrive forms
//	POST /dead-letters/{id}/review  form field note
//	POST /dead-letters/{id}/redrive
//	GET  /purge?filters             the confirmation: how many dead letters the filters match, and the first
//	POST /purge                     purges if the count is still the one confirmed (else confirms again)
//	GET  /bulk?action=A&id=..|all=true&filters   the dead letters' bulk confirmation: redrive, review or
//	                                purge the selected rows, or redrive or review (not purge) all matching
//	POST /bulk                      acts if the count is still the one confirmed (else confirms again)
//	GET  /login, POST /login, POST /logout   (only with Options.Token; sign-out revokes the session)
//	GET  any page?token=TOKEN       a sign-in URL: signs in, then redirects to the page without the token
//	GET  /static/{file}             the stylesheet and the script
//
// Console errors are HTML pages with the same statuses as the API's
// errors, never a stack. The API's errors are JSON.
//
// # Security
//
// With Options.Token set, every API request needs "Authorization: Bearer
// <token>". The console accepts that header too. A browser signs in once,
// in one of two ways. One is the login page, with the token in a form.
// The other is a sign-in URL: any console page with ?token=<token>, as
// ringwal serve prints. A sign-in URL sets the session and redirects to
// the same page without the token. Either way sets a session cookie,
// ringwal_session: HttpOnly, SameSite=Strict, Secure over TLS. The cookie
// is an expiry and a nonce, signed with HMAC-SHA256 by a key the handler
// draws at random. So a session lasts 12 hours, until sign-out, or until
// the process restarts. Sign-out revokes the session on the server. The
// session cookie opens the console only, never /api/.
//
// A wrong token, in a bearer header or a sign-in, puts its client's
// address in a penalty. An IPv6 client's address is its /64. The penalty
// is 100ms, doubling with each further failure up to 2s. During it, the
// client's tokens are answered 429 with Retry-After, without being
// checked. At most 4096 addresses are tracked. ReadAuthStats counts the
// failures, the throttled requests and the refused Hosts. Protect puts
// another endpoint (/metrics, say) behind the same token and throttle.
//
// Without a token the handler has no authentication. Anyone who can reach
// it can read payloads, redrive, requeue and purge. So mount it behind
// authentication of your own. It then answers only requests whose Host
// header names a loopback host or one of Options.AllowedHosts. The
// loopback hosts are localhost, *.localhost, 127.0.0.0/8 and [::1]. It
// refuses other Hosts with 403. This stops DNS rebinding: a web page the
// operator visits points its own name at the handler's address. Being
// same-origin in the browser's eyes, the page could then read and act
// through the handler.
//
// The CSRF defence is always on. A POST whose Origin header names another
// host than the request's Host is refused with 403. Without an Origin, a
// POST whose Sec-Fetch-Site is cross-site is refused with 403. So a web
// page elsewhere cannot drive the API or the console through an
// operator's browser. A client that sends no Origin (curl, Client) is
// allowed on the API. The console also changes state only by POST of a
// URL-encoded form carrying a CSRF token. The form is at most MaxForm
// bytes. The token is a signed double submit. The first page sets a
// random nonce in the cookie ringwal_csrf (HttpOnly, SameSite=Strict).
// Every form carries the nonce's HMAC in a hidden field. A POST without
// the field, or with one that does not match its cookie, is refused with
// 403. Console answers carry a Content Security Policy that allows only
// the console's own script, style and forms. Console answers also refuse
// framing.
//
// Operator actions from the API or the console are logged at Info on
// Options.Logger. They are requeue, redrive, review, purge, pause, resume
// and cancel; a queue's pause, resume and deletion; and a schedule's
// pause, resume, trigger and removal. The handler is safe for concurrent
// use.
package admin
