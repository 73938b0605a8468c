package ringwal

// Power loss through the public API: a real engine's log (Enqueue, Dequeue,
// Ack in Fsync mode) is copied after each call that waits for an fsync;
// between two such copies the bytes written are exactly what a power loss
// before the second fsync could lose, tear, or keep page by page (the
// lease batch of a Dequeue, then the Ack's batch). Each image built from
// the first copy plus some of those bytes must open with the default
// recovery mode, report what it cut, and hold every message whose Enqueue
// returned and whose Ack had not, while every returned Ack stays done.
// (wal's own TestPowerLossImages does the same from a trace of every
// write and fsync; this one needs no hook into the engine.)

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/internal/wal"
)

// dirFiles reads every file under dir (relative path -> content).
func dirFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	require.NoError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, err := os.ReadFile(p)
		out[rel] = b
		return err
	}))
	return out
}

// lossImage writes durable plus some of what written adds to each file:
// kind 0 none, 1 all, 2 a prefix torn at any byte, 3 4 KiB pages kept or
// zeroed independently (a hole before later bytes).
func lossImage(t *testing.T, dst string, durable, written map[string][]byte, kind int, rng *rand.Rand) {
	t.Helper()
	require.NoError(t, os.RemoveAll(dst))
	for rel, c := range written {
		d, ok := durable[rel]
		data := c
		if !ok || len(c) < len(d) || !bytes.Equal(c[:len(d)], d) {
			if ok {
				data = d // not an append: the fsynced version (new files keep all)
			}
		} else {
			switch kind {
			case 0:
				data = d
			case 2:
				data = c[:len(d)+rng.IntN(len(c)-len(d)+1)]
			case 3:
				data = bytes.Clone(c)
				end := len(d)
				for p := len(d) / 4096 * 4096; p < len(c); p += 4096 {
					lo, hi := max(p, len(d)), min(p+4096, len(c))
					if rng.IntN(2) == 0 {
						clear(data[lo:hi])
					} else {
						end = hi
					}
				}
				data = data[:end]
			}
		}
		p := filepath.Join(dst, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, data, 0o640))
	}
}

func TestEnginePowerLossImages(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e, err := Open(dir, Options{Durability: Fsync})
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(5, 6))

	type moment struct {
		files       map[string][]byte
		live, acked []ID
	}
	var moments []moment
	var live, acked []ID
	snap := func() {
		moments = append(moments, moment{files: dirFiles(t, dir),
			live: append([]ID(nil), live...), acked: append([]ID(nil), acked...)})
	}
	snap()
	for i := 0; i < 16; i++ {
		id, err := e.Enqueue(ctx, Message{Key: "k", Payload: bytes.Repeat([]byte{byte(i)}, 1500+rng.IntN(3000))})
		require.NoError(t, err)
		live = append(live, id)
		snap() // Fsync mode: the Enqueue's batch and all before it are on disk
		if i%2 == 1 {
			d, err := e.Dequeue(ctx) // its lease batch is written without an fsync
			require.NoError(t, err)
			require.NoError(t, e.Ack(d.Lease))
			for j, l := range live {
				if l == d.ID {
					live = append(live[:j], live[j+1:]...)
					break
				}
			}
			acked = append(acked, d.ID)
			snap()
		}
	}
	require.NoError(t, e.Close())

	img := filepath.Join(t.TempDir(), "img")
	var images, checked, lost, openFailures, cuts int
	for k := 0; k+1 < len(moments); k++ {
		from, to := moments[k], moments[k+1]
		for kind := 0; kind < 5; kind++ {
			lossImage(t, img, from.files, to.files, kind%4, rng)
			images++
			e, err := Open(img, Options{Durability: Fsync})
			if err != nil {
				openFailures++
				t.Errorf("moment %d, image kind %d: Open: %v", k, kind%4, err)
				continue
			}
			ackedNext := map[ID]bool{} // its Ack was on its way: either outcome is right
			for _, id := range to.acked {
				ackedNext[id] = true
			}
			for _, id := range from.live {
				if ackedNext[id] {
					continue
				}
				checked++
				if _, err := e.Get(id); err != nil {
					lost++
					t.Errorf("moment %d, image kind %d: acknowledged message %d not acked: %v", k, kind%4, id, err)
				}
			}
			for _, id := range from.acked {
				checked++
				if _, err := e.Get(id); !errors.Is(err, ErrNotFound) {
					lost++
					t.Errorf("moment %d, image kind %d: acked message %d is back", k, kind%4, id)
				}
			}
			rec := e.Stats().Recovery
			if rec.TornBytes > 0 {
				cuts++
				require.NotEmpty(t, rec.Damage)
				require.NotEmpty(t, rec.BrokenFiles)
			}
			require.Equal(t, PointInTime, rec.Mode)
			require.NoError(t, e.Close())
		}
	}
	t.Logf("%d images of an Fsync-mode engine, %d facts checked, %d lost, %d open failures, %d images cut", images, checked, lost, openFailures, cuts)
	require.Zero(t, lost)
	require.Zero(t, openFailures)
	require.Positive(t, cuts)
}

// The root recovery modes are wal's (an alias), and an unknown one is
// refused.
func TestRecoveryModeMatchesWAL(t *testing.T) {
	for _, m := range []RecoveryMode{PointInTime, AbsoluteConsistency, SkipToPointInTime} {
		require.Equal(t, m.String(), m.String())
	}
	_, err := Open(t.TempDir(), Options{Recovery: 3})
	require.ErrorIs(t, err, ErrInvalid)
}

// AbsoluteConsistency refuses a torn tail through the public API; the
// default cuts it and reports it in Stats.
func TestEngineRecoveryModesOnTornTail(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{Durability: Fsync})
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		_, err := e.Enqueue(context.Background(), Message{Payload: []byte("x")})
		require.NoError(t, err)
	}
	require.NoError(t, e.Close())
	segs, err := filepath.Glob(filepath.Join(dir, "log", "0*"))
	require.NoError(t, err)
	seg := segs[len(segs)-1]
	data, err := os.ReadFile(seg)
	require.NoError(t, err)
	// A crash in the middle of the last enqueue's write: its batch torn,
	// and no close marker after it (Close appends one of 35 bytes).
	require.NoError(t, os.WriteFile(seg, data[:len(data)-35-4], 0o640))

	_, err = Open(dir, Options{Recovery: AbsoluteConsistency})
	require.ErrorIs(t, err, wal.ErrCorrupt)
	e, err = Open(dir, Options{})
	require.NoError(t, err)
	rec := e.Stats().Recovery
	require.Contains(t, rec.Damage, "torn final batch")
	require.Len(t, rec.BrokenFiles, 1)
	require.Equal(t, 1, rec.CutBatches)
	require.Equal(t, 1, rec.CutRecords)
	require.Equal(t, 2, e.Stats().Pending)
	require.NoError(t, e.Close())
}
