package main

// Where the operator commands (inspect, dlq, keys, queues, schedules,
// messages, cancel, pause, resume) read and act: a data
// directory that no process holds (the engine is opened here), or a
// running application's admin handler (--addr, through admin.Client).
// Both answer in admin's views, so the output is the same either way.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/dlq"
)

// Environment variables of the operator commands.
const (
	envAddr  = "RINGWAL_ADDR"
	envToken = "RINGWAL_TOKEN"
)

// source is a stopped engine's directory or a live engine's admin API.
type source interface {
	// where names it for humans: a directory, or the API's URL.
	where() string
	stats(ctx context.Context) (admin.StatsView, error)
	// next is the next n messages in scheduling order.
	next(ctx context.Context, n int) ([]admin.InfoView, error)
	// deadLetters returns every dead letter q matches (q.Limit honoured).
	deadLetters(ctx context.Context, q dlq.Query) ([]admin.DeadLetterView, error)
	redrive(ctx context.Context, id ringwal.ID) error
	review(ctx context.Context, id ringwal.ID, note string) error
	purge(ctx context.Context, q dlq.Query) (int, error)
	purgeOne(ctx context.Context, id ringwal.ID) error
	// countDeadLetters counts what q matches, with the store's mark;
	// redriveMatching and reviewMatching act on what q matches up to
	// q.Through (the engine's bulk verbs, locally or through the API's
	// bulk routes), returning how many they did.
	countDeadLetters(ctx context.Context, q dlq.Query) (int, uint64, error)
	redriveMatching(ctx context.Context, q dlq.Query) (int, error)
	reviewMatching(ctx context.Context, q dlq.Query, note string) (int, error)
	keySource
	queueSource
	scheduleSource
	close() error
}

// target holds the flags that choose a live engine.
type target struct{ addr, token string }

// add registers --addr and --token on cmd.
func (t *target) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&t.addr, "addr", "", "a running engine's admin API: the base URL where the application mounts admin.NewHandler (default $"+envAddr+")")
	cmd.Flags().StringVar(&t.token, "token", "", "the admin API's bearer token (default $"+envToken+"; the environment keeps it out of ps)")
}

// isID reports whether s reads as a message ID (so it is not a directory).
func isID(s string) bool {
	n, err := strconv.ParseUint(s, 10, 64)
	return err == nil && n > 0
}

// open returns the source args name and the arguments after it. A first
// argument that is not a message ID is a data directory; without one, the
// source is --addr or $RINGWAL_ADDR. A directory and --addr together are a
// usage error; a directory wins over $RINGWAL_ADDR.
func (t *target) open(args []string) (source, []string, error) {
	if len(args) > 0 && !isID(args[0]) {
		if t.addr != "" {
			return nil, nil, usagef("give a data directory or --addr, not both (a directory named like a number: ./%s)", args[0])
		}
		e, err := openDataDir(args[0])
		if err != nil {
			return nil, nil, err
		}
		return &localSource{dir: args[0], e: e}, args[1:], nil
	}
	addr := cmp.Or(t.addr, os.Getenv(envAddr))
	if addr == "" {
		return nil, nil, usagef("name a data directory (a stopped engine), or a running engine's admin API with --addr URL or $%s", envAddr)
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, nil, usagef("--addr %q: want an http or https URL such as http://127.0.0.1:9464", addr)
	}
	token := cmp.Or(t.token, os.Getenv(envToken))
	return &remoteSource{addr: addr, c: admin.NewClient(addr, admin.WithToken(token))}, args, nil
}

// localSource is an engine opened over a data directory.
type localSource struct {
	dir string
	e   *ringwal.Engine
}

func (l *localSource) where() string { return l.dir }

func (l *localSource) stats(context.Context) (admin.StatsView, error) {
	return admin.NewStatsView(l.e.Stats()), nil
}

func (l *localSource) next(_ context.Context, n int) ([]admin.InfoView, error) {
	out := []admin.InfoView{}
	// No more than are pending: Peek sizes its answer by what it is asked.
	for _, in := range l.e.Peek(min(n, l.e.Stats().Pending)) {
		out = append(out, admin.NewInfoView(in))
	}
	return out, nil
}

// deadLetters reads q.Queue as an admin name: the default queue's dead
// letters, which the engine's query cannot pick apart (its "" is every
// queue), are read through admin's pages, as the admin API reads them.
func (l *localSource) deadLetters(ctx context.Context, q dlq.Query) ([]admin.DeadLetterView, error) {
	if q.Queue == admin.DefaultQueue {
		return pageDeadLetters(ctx, q, func(_ context.Context, q dlq.Query) (admin.DeadLetterPage, error) {
			return admin.NewDeadLetterPage(l.e, q)
		})
	}
	ds, err := l.e.DeadLetters(q)
	if err != nil {
		return nil, fmt.Errorf("listing dead letters: %w", err)
	}
	return admin.NewDeadLetterViews(ds), nil
}

func (l *localSource) redrive(_ context.Context, id ringwal.ID) error { return l.e.Redrive(id) }

func (l *localSource) purgeOne(_ context.Context, id ringwal.ID) error {
	return l.e.PurgeDeadLetter(id)
}

func (l *localSource) review(_ context.Context, id ringwal.ID, note string) error {
	return l.e.MarkReviewed(id, note)
}

func (l *localSource) purge(_ context.Context, q dlq.Query) (int, error) {
	if q.Queue == admin.DefaultQueue {
		return 0, errDefaultQueuePurge
	}
	return l.e.PurgeDeadLetters(q)
}

func (l *localSource) countDeadLetters(_ context.Context, q dlq.Query) (int, uint64, error) {
	return l.e.CountDeadLetters(q)
}

func (l *localSource) redriveMatching(_ context.Context, q dlq.Query) (int, error) {
	return l.e.RedriveMatching(q)
}

func (l *localSource) reviewMatching(_ context.Context, q dlq.Query, note string) (int, error) {
	return l.e.ReviewMatching(q, note)
}

func (l *localSource) close() error {
	if err := l.e.Close(); err != nil {
		return fmt.Errorf("closing the engine: %w", err)
	}
	return nil
}

// remoteSource is a live engine's admin API.
type remoteSource struct {
	addr string
	c    *admin.Client
}

func (r *remoteSource) where() string { return r.addr }

// explain adds what to do about an answer the user can fix.
func (r *remoteSource) explain(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, admin.ErrUnauthorized):
		return fmt.Errorf("%w (pass the admin token with --token or $%s)", err, envToken)
	case errors.Is(err, admin.ErrProtocol):
		return fmt.Errorf("%w (is %s the base URL where the application mounts admin.NewHandler?)", err, r.addr)
	}
	return err
}

func (r *remoteSource) stats(ctx context.Context) (admin.StatsView, error) {
	v, err := r.c.Stats(ctx)
	return v, r.explain(err)
}

func (r *remoteSource) next(ctx context.Context, n int) ([]admin.InfoView, error) {
	v, err := r.c.Next(ctx, min(n, admin.MaxLimit))
	return v, r.explain(err)
}

// errDefaultQueuePurge refuses a purge of the default queue's dead
// letters alone: the engine's purge cannot pick them apart from the named
// queues' (the admin API refuses it too).
var errDefaultQueuePurge = fmt.Errorf("--queue %s: the default queue's dead letters cannot be purged apart from the named queues' (filter by category, key or time, or purge by ID): %w", admin.DefaultQueue, ringwal.ErrInvalid)

// deadLetters follows the API's pages until q is exhausted (or q.Limit
// entries are in).
func (r *remoteSource) deadLetters(ctx context.Context, q dlq.Query) ([]admin.DeadLetterView, error) {
	return pageDeadLetters(ctx, q, func(ctx context.Context, q dlq.Query) (admin.DeadLetterPage, error) {
		page, err := r.c.DeadLetters(ctx, q)
		return page, r.explain(err)
	})
}

// pageDeadLetters follows the pages read fetches until q is exhausted (or
// q.Limit entries are in).
func pageDeadLetters(ctx context.Context, q dlq.Query, read func(context.Context, dlq.Query) (admin.DeadLetterPage, error)) ([]admin.DeadLetterView, error) {
	want := q.Limit
	out := []admin.DeadLetterView{}
	for {
		q.Limit = admin.MaxLimit
		if want > 0 {
			q.Limit = min(admin.MaxLimit, want-len(out))
		}
		page, err := read(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("listing dead letters: %w", err)
		}
		out = append(out, page.Entries...)
		if page.Next == "" || (want > 0 && len(out) >= want) {
			return out, nil
		}
		if q.After, err = admin.ParseCursor(page.Next); err != nil {
			return nil, fmt.Errorf("listing dead letters: %w", err)
		}
	}
}

func (r *remoteSource) redrive(ctx context.Context, id ringwal.ID) error {
	_, err := r.c.Redrive(ctx, id)
	return r.explain(err)
}

func (r *remoteSource) purgeOne(ctx context.Context, id ringwal.ID) error {
	_, err := r.c.PurgeDeadLetter(ctx, id)
	return r.explain(err)
}

func (r *remoteSource) review(ctx context.Context, id ringwal.ID, note string) error {
	_, err := r.c.Review(ctx, id, note)
	return r.explain(err)
}

func (r *remoteSource) countDeadLetters(ctx context.Context, q dlq.Query) (int, uint64, error) {
	v, err := r.c.CountDeadLetters(ctx, q)
	if err != nil {
		return 0, 0, r.explain(err)
	}
	mark, err := admin.ParseMark(v.Through)
	return v.Count, mark, err
}

func (r *remoteSource) redriveMatching(ctx context.Context, q dlq.Query) (int, error) {
	res, err := r.c.RedriveMatching(ctx, q)
	return res.Count, r.explain(err)
}

func (r *remoteSource) reviewMatching(ctx context.Context, q dlq.Query, note string) (int, error) {
	res, err := r.c.ReviewMatching(ctx, q, note)
	return res.Count, r.explain(err)
}

// purge purges what q matches; dlq purge calls it only with its count's
// mark (q.Through), which NewPurgeRequest sends as "all" when nothing
// else filters.
func (r *remoteSource) purge(ctx context.Context, q dlq.Query) (int, error) {
	if q.Queue == admin.DefaultQueue {
		return 0, errDefaultQueuePurge
	}
	res, err := r.c.Purge(ctx, q)
	return res.Purged, r.explain(err)
}

func (r *remoteSource) close() error { return nil }

// closeSource closes s and joins its error to *errp.
func closeSource(s source, errp *error) {
	if err := s.close(); err != nil {
		*errp = errors.Join(*errp, err)
	}
}
