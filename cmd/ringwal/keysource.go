package main

// The key controls of a source: keys, pauses, cancel and live messages,
// on a stopped engine's directory (the engine opened here; pauses and
// cancels are logged, so they hold at its next start) or a live engine's
// admin API. Both answer in admin's views.

import (
	"context"
	"fmt"
	"time"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
)

// keySource is the key controls a source offers.
type keySource interface {
	keys(ctx context.Context) ([]admin.KeyView, error)
	// deadLetterKeys is how many dead letters each key has (keys
	// without any are absent; dead letters without a key are not
	// counted).
	deadLetterKeys(ctx context.Context) (map[string]int, error)
	pauseKey(ctx context.Context, key string, until time.Time) (admin.PauseView, error)
	resumeKey(ctx context.Context, key string) (admin.PauseView, error)
	pause(ctx context.Context, until time.Time) (admin.PauseView, error)
	resume(ctx context.Context) (admin.PauseView, error)
	cancel(ctx context.Context, id ringwal.ID) error
	// countMessages counts the live messages q matches, with the mark
	// for cancelMatching, which cancels exactly those counted (the
	// engine's CountMessages and CancelMatching, or the API's bulk
	// routes).
	countMessages(ctx context.Context, q admin.MessageQuery) (int, uint64, error)
	cancelMatching(ctx context.Context, q admin.MessageQuery, through uint64) (int, error)
	// messages is one page of live messages (admin.NewMessagePage).
	messages(ctx context.Context, q admin.MessageQuery) (admin.MessagePage, error)
}

func (l *localSource) keys(context.Context) ([]admin.KeyView, error) {
	return admin.NewKeyViews(l.e.Stats()), nil
}

func (l *localSource) deadLetterKeys(context.Context) (map[string]int, error) {
	return l.e.DeadLetterKeys()
}

// keyState is key's pause after an action, as the admin API answers it.
func (l *localSource) keyState(key, status string) admin.PauseView {
	k, _ := admin.FindKey(admin.NewKeyViews(l.e.Stats()), key)
	return admin.PauseView{Key: key, Status: status, Paused: k.Paused, PausedUntil: k.PausedUntil}
}

func (l *localSource) pauseKey(_ context.Context, key string, until time.Time) (admin.PauseView, error) {
	if err := l.e.PauseKey(key, until); err != nil {
		return admin.PauseView{}, fmt.Errorf("pausing %q: %w", key, err)
	}
	return l.keyState(key, "paused"), nil
}

func (l *localSource) resumeKey(_ context.Context, key string) (admin.PauseView, error) {
	if err := l.e.ResumeKey(key); err != nil {
		return admin.PauseView{}, fmt.Errorf("resuming %q: %w", key, err)
	}
	return l.keyState(key, "resumed"), nil
}

func (l *localSource) pause(_ context.Context, until time.Time) (admin.PauseView, error) {
	if err := l.e.Pause(until); err != nil {
		return admin.PauseView{}, fmt.Errorf("pausing delivery: %w", err)
	}
	v := admin.PauseView{Status: "paused", Paused: true}
	if !until.IsZero() {
		v.PausedUntil = &until
	}
	return v, nil
}

func (l *localSource) resume(context.Context) (admin.PauseView, error) {
	if err := l.e.Resume(); err != nil {
		return admin.PauseView{}, fmt.Errorf("resuming delivery: %w", err)
	}
	return admin.PauseView{Status: "resumed", Paused: l.e.Stats().DeliveryPaused}, nil
}

func (l *localSource) cancel(_ context.Context, id ringwal.ID) error { return l.e.Cancel(id) }

func (l *localSource) messages(_ context.Context, q admin.MessageQuery) (admin.MessagePage, error) {
	return admin.NewMessagePage(l.e, q), nil
}

func (r *remoteSource) keys(ctx context.Context) ([]admin.KeyView, error) {
	v, err := r.c.Keys(ctx)
	return v, r.explain(err)
}

// deadLetterKeys reads the engine's kept per-key counts of dead letters
// (Engine.DeadLetterKeys, as the console's keys page does).
func (r *remoteSource) deadLetterKeys(ctx context.Context) (map[string]int, error) {
	v, err := r.c.DeadLetterKeys(ctx)
	return v, r.explain(err)
}

func (r *remoteSource) pauseKey(ctx context.Context, key string, until time.Time) (admin.PauseView, error) {
	v, err := r.c.PauseKey(ctx, key, until)
	if err != nil {
		return v, fmt.Errorf("pausing %q: %w", key, r.explain(err))
	}
	return v, nil
}

func (r *remoteSource) resumeKey(ctx context.Context, key string) (admin.PauseView, error) {
	v, err := r.c.ResumeKey(ctx, key)
	if err != nil {
		return v, fmt.Errorf("resuming %q: %w", key, r.explain(err))
	}
	return v, nil
}

func (r *remoteSource) pause(ctx context.Context, until time.Time) (admin.PauseView, error) {
	v, err := r.c.Pause(ctx, until)
	if err != nil {
		return v, fmt.Errorf("pausing delivery: %w", r.explain(err))
	}
	return v, nil
}

func (r *remoteSource) resume(ctx context.Context) (admin.PauseView, error) {
	v, err := r.c.Resume(ctx)
	if err != nil {
		return v, fmt.Errorf("resuming delivery: %w", r.explain(err))
	}
	return v, nil
}

func (r *remoteSource) cancel(ctx context.Context, id ringwal.ID) error {
	_, err := r.c.Cancel(ctx, id)
	return r.explain(err)
}

func (r *remoteSource) messages(ctx context.Context, q admin.MessageQuery) (admin.MessagePage, error) {
	v, err := r.c.Messages(ctx, q)
	return v, r.explain(err)
}

// openKeyed opens the source of a command whose arguments after the
// source are exactly n (a key, say, which may look like anything): n+1
// arguments start with a data directory, n name none (then --addr or
// $RINGWAL_ADDR).
func (t *target) openKeyed(args []string, n int, what string) (source, []string, error) {
	switch len(args) {
	case n + 1:
		if t.addr != "" {
			return nil, nil, usagef("give a data directory or --addr, not both")
		}
		e, err := openDataDir(args[0])
		if err != nil {
			return nil, nil, err
		}
		return &localSource{dir: args[0], e: e}, args[1:], nil
	case n:
		src, _, err := t.open(nil)
		return src, args, err
	}
	return nil, nil, usagef("want [DIR] %s", what)
}
