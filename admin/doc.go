// Package admin is the operator's side of a ringwal engine over HTTP: the
// JSON admin API and the web console (both served by NewHandler), the
// API's Go client (NewClient), and the one vocabulary all of them share
// with cmd/ringwal.
//
// Its exported names, by group, and why each is public:
//
//   - NewHandler, Options, Protect, ReadAuthStats, AuthStats: serving the
//     API and console in your own server, and putting other endpoints
//     (/metrics) behind the same token and throttle.
//   - NewClient, Client, ClientOption (WithToken, WithHTTPClient), Error,
//     ErrUnauthorized, ErrConflict, ErrThrottled: calling the API from Go.
//   - The views (StatsView, InfoView, MessageView, DeadLetterView,
//     DeadLetterPage, MessagePage, KeyView, QueueView, ScheduleView, the
//     action, count and result views) and their constructors (NewStatsView,
//     NewDeadLetterViews, NewQueueViews, ...): what the API answers and the
//     Client returns; the constructors build the same views from an engine
//     in process, as cmd/ringwal does for a stopped directory, so that both
//     print alike. FindKey, FindQueue and FindSchedule pick one out of a
//     list the Client returned.
//   - The request bodies and query grammar (PurgeRequest, PauseRequest,
//     ReviewRequest, MessageQuery, ParseDeadLetterQuery,
//     DeadLetterQueryValues, ParseMessageQuery, ParseCursor, ParseMark,
//     Cursor, Strings, QueryParams, MessageQueryParams): what a request
//     carries, and turning a page's next or a count's through (strings in
//     JSON) back into a cursor or a mark for the next call;
//     MessageQuery.Filter gives a message query to the engine.
//   - Names and paths (DefaultQueue, AdminQueueName, EngineQueueName,
//     KeyPath, QueuePath, SchedulePath) and the limits and enumerations of
//     the format (MaxBody, MaxQuery, MaxForm, MaxLimit, DefaultLimit,
//     PayloadText, PayloadBase64, the overlap and catch-up names).
//
// What only the console and the CLI need (number formatting, the parsers
// of form values) is in internal/adminfmt, not here.
//
// It owns the routes, the request and answer formats, the console's pages
// (html/template, a stylesheet and a small script, embedded in the
// binary: no CDN, no build step), authentication by bearer token and
// console sessions, and the CSRF defence. It owns no engine state: every
// answer and page is built from the root package's public API (the
// console's charts and rates come from the engine's history; only the
// rates of the queues it keeps no history of come from a small ring of
// Stats samples the handler keeps). It does not listen, mount Prometheus metrics
// (package prom) or add authentication beyond the token; the caller
// mounts the handler in its own server, on an internal listener.
//
// # Routes
//
// The JSON API lives under /api/, relative to where the handler is
// mounted; everything else is the web console (see Console below). Under a
// prefix, strip it:
//
//	mux.Handle("/admin/", http.StripPrefix("/admin", admin.NewHandler(e, admin.Options{Token: tok})))
//
// The endpoints (read endpoints are GET, HEAD too; mutating ones POST
// only; anything else is 405 with Allow):
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
// A {key} in a path is one path segment, escaped (KeyPath): "slack:#ops/eu"
// is slack:%23ops%2Feu. GET /api/messages takes the parameters of
// ParseMessageQuery: queue, key, state (pending, delayed, leased, held;
// repeatable or comma-separated), after (the next cursor of the previous
// page: a message ID) and limit (1 to MaxLimit, default DefaultLimit); it
// stops walking the engine once it has the page. Each entry's "waiting"
// names why a pending message waits on its key (ordered, in-flight, rate,
// paused), absent when it does not.
//
// GET /api/dead-letters takes the parameters of ParseDeadLetterQuery:
// queue, category (repeatable or comma-separated), key, since and until
// (RFC 3339, or a duration such as 24h meaning that long ago; since ≤
// dead_at < until), reviewed (true or false), after (the next cursor of the previous
// page), limit (1 to MaxLimit, default DefaultLimit) and through (only
// those added up to a count's mark, see below). The answer's next
// is present when there may be more: pass it as after. Unknown or repeated
// parameters are refused.
//
// The purge body has the same fields as JSON (PurgeRequest): {"queue":
// "emails", "category": ["poison"], "key": "...", "since": "...",
// "until": "...", "reviewed": true, "after": "...", "limit": n} (limit 0 or absent: no limit). A query
// without any filter would purge every dead letter, so it is refused
// unless it also says "all": true.
//
// The bulk routes act on exactly what a count counted: count first (GET
// .../count with the filters), then pass the answer's through with the
// same filters to the acting route (a missing through is 400; "0", the
// mark of a count that found nothing ever added, acts on nothing). A dead
// letter or message that arrived after the count is never touched; one
// removed since is skipped. Dead-letter routes take the list's parameters
// (limit bounds the work, after starts at a cursor); message routes take
// queue, key and state (after and limit are refused). The default queue
// alone (queue=_default) is refused, as for a purge. A route that fails
// part-way answers the error with "count", how many it did.
//
// # Queues
//
// The admin API names the default queue (the engine's "") DefaultQueue,
// "_default", wherever a queue is named: a {queue} path segment, a queue
// parameter or body field, QueueView.name. The engine reserves names that
// start with "_", so no named queue is called that. A {queue} is one path
// segment, escaped as a {key} is (QueuePath). The queue routes act on
// declared queues only: a pause or resume of an unknown name is 404, not
// a new queue (Queue.Pause would declare it). Deleting the default queue
// is 400, an unknown one 404, one that still holds messages 409 (the
// Client's error wraps ErrConflict and ringwal.ErrInvalid).
//
// GET /api/messages, GET /api/dead-letters and the purge body take a queue
// filter: absent, every queue; a name, that queue; _default, the default
// queue only. Message and dead-letter views carry "queue", the engine's
// name, absent for the default queue. The engine's dead-letter queries
// cannot select the default queue alone (dlq.Query.Queue "" is every
// queue), so a page of ?queue=_default is found by reading every queue's
// dead letters, at most 10·MaxLimit of them a page: it may hold fewer
// than its limit, even none, and still carry a next (NewDeadLetterPage);
// and a purge of {"queue": "_default"} is refused (400).
//
// # Schedules
//
// A {schedule} is the schedule's name, one path segment escaped as a
// {key} is (SchedulePath); an unknown name is 404 on every schedule route.
// A ScheduleView names its queue by admin name (DefaultQueue for the
// default queue), its overlap ("allow", "skip") and catch-up ("skip",
// "one", "all") by name, and its last tick's outcome by last_id (the last
// run, a trigger's included) and last_error (why the last tick did not
// run; absent after a run). Schedules are added and changed by the
// application (Engine.AddSchedule), not through the API.
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
// bearer token when Options.Token is set, 409 for a queue's deletion
// refused while it holds messages and for a schedule's trigger its
// message's DedupID refuses, 403 for a cross-origin POST or
// a Host not allowed (see Security), 404 for an unknown ID or path
// (ringwal.ErrNotFound), 405 for a wrong method, 429 with Retry-After a
// moment after a wrong token from the same address (see Security), 413
// for a body over MaxBody, 503 once the engine is closed
// (ringwal.ErrClosed) or, with Retry-After, when it is full
// (ringwal.ErrFull), and 500 otherwise (a panic included; its stack goes
// to Options.Logger). The Client turns them back into errors wrapping the
// same sentinels (see Error).
//
// A query string longer than MaxQuery is answered 414 (API and console).
//
// # Console
//
// Every path outside /api/ is the web console, server-rendered HTML that
// works without JavaScript (a script only refreshes the overview in
// place; without it the overview reloads itself). All links and redirects
// are relative, so it works under any prefix. Pages:
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
//	                                purge (selected rows only) the selected rows, or redrive or review all matching
//	POST /bulk                      acts if the count is still the one confirmed (else confirms again)
//	GET  /login, POST /login, POST /logout   (only with Options.Token; sign-out revokes the session)
//	GET  any page?token=TOKEN       a sign-in URL: signs in, then redirects to the page without the token
//	GET  /static/{file}             the stylesheet and the script
//
// Console errors are HTML pages with the same statuses as the API's
// errors (never a stack); the API's are JSON.
//
// # Security
//
// With Options.Token set, every API request needs "Authorization: Bearer
// <token>". The console accepts that header too; a browser signs in once,
// on the login page (the token in a form) or with a sign-in URL (any
// console page with ?token=<token>, as ringwal serve prints: it sets the
// session and redirects to the same page without the token), which sets a
// session cookie (ringwal_session: HttpOnly, SameSite=Strict, Secure over
// TLS; an expiry and a nonce signed with HMAC-SHA256 by a key the handler
// draws at random, so sessions last 12 hours, until sign-out, which
// revokes the session on the server, or until the process restarts). The
// session cookie opens the console only, never /api/. A wrong token (a
// bearer header, a sign-in) puts its client's address (an IPv6 one's /64)
// in a penalty, 100ms doubling with each further failure up to 2s, during
// which its tokens are answered 429 with Retry-After without being
// checked; at most 4096 addresses are tracked. ReadAuthStats counts the
// failures, the throttled requests and the refused Hosts; Protect puts
// another endpoint (/metrics, say) behind the same token and throttle.
//
// Without a token the handler has no authentication: anyone who can reach
// it can read payloads, redrive, requeue and purge, so mount it behind
// authentication of your own. It then answers only requests whose Host
// header names a loopback host (localhost, *.localhost, 127.0.0.0/8,
// [::1]) or one of Options.AllowedHosts, and refuses others with 403:
// this stops DNS rebinding, where a web page the operator visits points
// its own name at the handler's address and, being same-origin in the
// browser's eyes, reads and acts through it.
//
// The CSRF defence is always on. A POST whose Origin header names another
// host than the request's Host (or, without an Origin, whose
// Sec-Fetch-Site is cross-site) is refused with 403, so a web page
// elsewhere cannot drive the API or the console through an operator's
// browser; a client that sends no Origin (curl, Client) is allowed on the
// API. The console also changes state only by POST of a URL-encoded form
// (at most MaxForm bytes) carrying a CSRF token: the first page sets a
// random nonce in the cookie ringwal_csrf (HttpOnly, SameSite=Strict) and
// every form carries the nonce's HMAC in a hidden field (signed double
// submit); a POST without the field, or with one that does not match its
// cookie, is refused with 403. Console answers carry a Content Security
// Policy that allows only the console's own script, style and forms, and
// refuse framing.
//
// Operator actions (requeue, redrive, review, purge, pause, resume,
// cancel, a queue's pause, resume and deletion, a schedule's pause,
// resume, trigger and removal), from the API or the console, are logged at Info on Options.Logger. The handler is safe for
// concurrent use.
package admin
