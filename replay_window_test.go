package ringwal

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/internal/wal"
)

// A checkpoint's cut is taken before its snapshot walks the slab, so a
// record appended in between lands after the cut and is replayed on top
// of a snapshot that may already hold its effect. A failure such a record
// logged is then in the snapshot's history and in the tail: replay must
// list it once. Each case does its verbs inside the snapshot function,
// after the cut and before the walk, which is exactly that window; the
// message then fails for good after a reopen, and its dead letter must
// list every failure once, in order.
func TestFailureLoggedBesideACheckpointIsListedOnce(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	// Retried at once, and the fake clock never moves: the failures
	// differ by their texts alone.
	policy := classify.RetryPolicy{MaxAttempts: 10}
	ctx := context.Background()
	fail := func(text string) error { return classify.Mark(errors.New(text), classify.Transient) }

	type env struct {
		t     *testing.T
		e     *Engine
		id    ID
		lease Lease // taken before the cut, settled in the window
	}
	// dequeue waits for the message (a retry is due at once, but the
	// housekeeper makes it pending).
	dequeue := func(t *testing.T, e *Engine) Delivery {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		d, err := e.Dequeue(ctx)
		require.NoError(t, err)
		return d
	}
	nack := func(v *env, text string) {
		d := dequeue(v.t, v.e)
		require.Equal(v.t, v.id, d.ID)
		require.NoError(v.t, v.e.Nack(d.Lease, fail(text)))
	}
	for _, tc := range []struct {
		name string
		// before runs before the checkpoint; during in its window.
		before, during func(v *env)
		want           []string // the dead letter's failures, the last one "gone"
	}{
		{
			name:   "a nack in the window",
			before: func(v *env) {},
			during: func(v *env) { nack(v, "one") },
			want:   []string{"one", "gone"},
		},
		{
			name: "a nack in the window, its lease before the cut",
			before: func(v *env) {
				nack(v, "one")
				v.lease = dequeue(v.t, v.e).Lease
			},
			during: func(v *env) {
				require.NoError(v.t, v.e.Nack(v.lease, fail("two")))
			},
			want: []string{"one", "two", "gone"},
		},
		{
			name:   "two nacks and a lease in the window, the snapshot sees the lease",
			before: func(v *env) { nack(v, "one") },
			during: func(v *env) {
				nack(v, "two")
				dequeue(v.t, v.e) // leased at the walk; Close gives it back
			},
			want: []string{"one", "two", "gone"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fake := clock.NewFake(start)
			o := Options{Clock: fake, Policies: map[classify.Category]classify.RetryPolicy{classify.Transient: policy}}
			e, err := Open(dir, o)
			require.NoError(t, err)
			id, err := e.Enqueue(ctx, Message{Payload: []byte("x")})
			require.NoError(t, err)
			v := &env{t: t, e: e, id: id}
			tc.before(v)
			_, err = e.log.Checkpoint(func(emit func(*wal.Record) error) error {
				tc.during(v)
				return e.snapshot(emit)
			})
			require.NoError(t, err)
			require.NoError(t, e.Close())

			e, err = Open(dir, o)
			require.NoError(t, err)
			defer e.Close()
			d := dequeue(t, e)
			require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("gone"), classify.Permanent)))
			dl, err := e.DeadLetter(id)
			require.NoError(t, err)
			var got []string
			for _, f := range dl.Failures {
				got = append(got, f.Error)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// Logs and snapshots written before failure records said their attempt
// (every failure record then had none) replay as they did: each failure
// record and each nack adds its failure.
func TestFailureRecordsOfNoAttemptReplayAsBefore(t *testing.T) {
	const id = 7
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixNano()
	fail := func(kind wal.Kind, attempt int32, text string) wal.Record {
		r := wal.Record{Kind: kind, ID: id, Time: at, Category: uint8(classify.Transient), Text: text}
		if kind == wal.KindNack {
			r.Attempt, r.Until = attempt, at
		}
		return r
	}
	for _, tc := range []struct {
		name       string
		snap, tail []wal.Record
		want       []string
	}{
		{
			name: "a snapshot's history, then a nack",
			snap: []wal.Record{
				wal.CheckpointRecord(id+1, at, 0),
				{Kind: wal.KindEnqueue, ID: id, Time: at, Attempt: 2, Until: at},
				fail(wal.KindFailure, 0, "one"), fail(wal.KindFailure, 0, "two"),
			},
			tail: []wal.Record{
				{Kind: wal.KindLease, ID: id, Time: at, Attempt: 3, Until: at + 1},
				fail(wal.KindNack, 3, "three"),
			},
			want: []string{"one", "two", "three", "gone"},
		},
		{
			name: "nacks, then a TTL's failure record and verdict",
			tail: []wal.Record{
				{Kind: wal.KindEnqueue, ID: id, Time: at},
				{Kind: wal.KindLease, ID: id, Time: at, Attempt: 1, Until: at + 1},
				fail(wal.KindNack, 1, "one"),
				{Kind: wal.KindLease, ID: id, Time: at, Attempt: 2, Until: at + 1},
				fail(wal.KindFailure, 0, "two"),
				{Kind: wal.KindDeadLetter, ID: id, Time: at, Attempt: 2, Category: uint8(classify.Expired), Text: "gone"},
			},
			want: []string{"one", "two", "gone"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeLog(t, dir, tc.snap, tc.tail)
			e := openEngine(t, dir, Options{Clock: clock.NewFake(time.Unix(0, at))})
			if _, err := e.DeadLetter(id); err != nil {
				d, err := e.Dequeue(context.Background())
				require.NoError(t, err)
				require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("gone"), classify.Permanent)))
			}
			dl, err := e.DeadLetter(id)
			require.NoError(t, err)
			var got []string
			for _, f := range dl.Failures {
				got = append(got, f.Error)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// writeLog writes a data directory whose snapshot holds snap (none if
// empty) and whose log holds tail after it, through the wal package, as
// an engine would (format version 2).
func writeLog(t testing.TB, dir string, snap, tail []wal.Record) {
	t.Helper()
	l, err := wal.Open(dir, wal.Options{})
	require.NoError(t, err)
	_, err = l.Replay(func(*wal.Record) error { return nil })
	require.NoError(t, err)
	require.NoError(t, l.RequireFormat(2))
	if len(snap) > 0 {
		_, err = l.Checkpoint(func(emit func(*wal.Record) error) error {
			for i := range snap {
				if err := emit(&snap[i]); err != nil {
					return err
				}
			}
			return nil
		})
		require.NoError(t, err)
	}
	for i := range tail {
		require.NoError(t, l.Append(&tail[i]))
	}
	require.NoError(t, l.Close())
}
