package wal

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"
)

// Replay: the newest snapshot, then the log after it, decoded on helper
// goroutines and handed to the caller in log order.

// Replay calls fn for every record of the newest snapshot, then for every
// record of the log after it, in order. fn's *Record is reused: its
// Payload and Headers are valid only during the call. An error from fn
// stops the replay and is returned (wrapped, errors.Is works). fn runs
// on the caller's goroutine; the snapshot (a chunk of records at a time)
// and the log after it (a batch at a time) are decoded on helper
// goroutines a few chunks or batches ahead, which have ended when Replay
// returns.
//
// Call it before the first Append (it returns an error after one); it may
// be called more than once. Not safe concurrently with Checkpoint.
func (l *Log) Replay(fn func(r *Record) error) (ReplayStats, error) {
	return l.ReplayPrepared(nil, fn)
}

// ReplayPrepared is Replay with a hook, so that work a record needs
// before fn applies it runs alongside fn rather than in it: every record
// is passed to a prepare function before fn, on the goroutine that
// decoded it (one of the helpers). newPrepare (if not nil) is called once per
// such goroutine for its prepare function, which is called one record at
// a time, in log order among that goroutine's records; different
// goroutines' run at once. prepare may replace the record's Payload (with
// a copy of its own, say): fn then sees the replacement. Like fn, it must
// not keep the *Record.
func (l *Log) ReplayPrepared(newPrepare func() func(r *Record), fn func(r *Record) error) (ReplayStats, error) {
	start := time.Now()
	var st ReplayStats
	l.mu.Lock()
	closed, appended := l.closing, l.appended
	l.mu.Unlock()
	if closed {
		return st, ErrClosed
	}
	if appended {
		return st, errors.New("ringwal/wal: Replay must be called before the first Append")
	}
	var after uint64
	if l.snap != nil {
		n, err := replaySnapshot(l.snap.path, newPrepare, fn)
		st.SnapshotRecords = n
		if err != nil {
			return st, fmt.Errorf("ringwal/wal: replaying snapshot: %w", err)
		}
		st.SnapshotIndex, after = l.snap.index, l.snap.index
	}
	segs, _, err := logView(l.logDir)
	if err != nil {
		return st, err
	}
	st.Batches, st.Records, st.Bytes, err = replayLog(segs, after, l.lastIndex.Load(), nil, newPrepare, fn)
	if err != nil {
		return st, err
	}
	st.Duration = time.Since(start)
	return st, nil
}

// replayLog decodes the batches after index `after` up to `last` of the
// (already checked) segments, calling onBatch (if set) before each batch's
// records and fn for each record; newPrepare (if set) gives each decoding
// goroutine its prepare hook, called for each record it decodes.
//
// Decoding (decompressing, DecodeRecord, prepare) runs on goroutines of
// their own, a few batches ahead of fn, which runs on the caller's: on a
// large log decoding costs more than applying, so with two cores or more
// recovery takes about as long as the applying alone. One goroutine
// splits the segments into batches (cheap: it reads lengths) and hands
// them, in order, to the decoders and to fn's loop, which waits for each
// batch to be decoded in turn. fn still sees every record in log order,
// and an error (a decoder's or fn's) stops the replay where the serial
// loop would have stopped: fn is called for the records before a bad one.
func replayLog(segs []segment, after, last uint64, onBatch func(index uint64), newPrepare func() func(*Record), fn func(*Record) error) (batches, records uint64, bytes int64, err error) {
	split := func(free chan *decodedBatch, work, out chan<- *decodedBatch, stop <-chan struct{}) {
		splitLog(segs, after, last, free, work, out, stop)
	}
	return replayBatches(split, onBatch, newPrepare, fn)
}

// replaySnapshot replays the snapshot at path as replayLog replays the
// log, its chunks of records (snapChunker) decoded on the helpers, and
// returns how many records fn was called for.
func replaySnapshot(path string, newPrepare func() func(*Record), fn func(*Record) error) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	c, err := newSnapChunker(path, bufio.NewReaderSize(f, 256<<10))
	if err != nil {
		return 0, err
	}
	defer c.close()
	split := func(free chan *decodedBatch, work, out chan<- *decodedBatch, stop <-chan struct{}) {
		splitSnapshot(c, free, work, out, stop)
	}
	_, records, _, err := replayBatches(split, nil, newPrepare, fn)
	return records, err
}

// replayBatches is replayLog's pipeline over any splitter: split sends
// batches, in order, on work (to decode) and out (to apply), taking them
// from free, until there are no more, one fails, or stop closes.
func replayBatches(split func(free chan *decodedBatch, work, out chan<- *decodedBatch, stop <-chan struct{}), onBatch func(index uint64), newPrepare func() func(*Record), fn func(*Record) error) (batches, records uint64, bytes int64, err error) {
	workers := min(runtime.GOMAXPROCS(0), maxReplayDecoders)
	ahead := 2*workers + 2 // being decoded, decoded and waiting, being applied
	free := make(chan *decodedBatch, ahead)
	for range ahead {
		free <- &decodedBatch{decoded: make(chan struct{}, 1)}
	}
	// At most `ahead` batches exist, so sending on work or out never
	// blocks.
	work, out := make(chan *decodedBatch, ahead), make(chan *decodedBatch, ahead)
	stop, done := make(chan struct{}), make(chan struct{})
	var decoders sync.WaitGroup
	for range workers {
		var prepare func(*Record)
		if newPrepare != nil {
			prepare = newPrepare()
		}
		decoders.Add(1)
		go func() {
			defer decoders.Done()
			for b := range work {
				select {
				case <-stop: // nobody will apply it
				default:
					if err := b.decode(b.entry, prepare); err != nil {
						b.err = b.wrap(err)
					}
				}
				b.entry = nil
				if b.seg != nil {
					b.seg.Done()
				}
				b.decoded <- struct{}{}
			}
		}()
	}
	go func() {
		defer close(done)
		split(free, work, out, stop)
		close(work)
		decoders.Wait()
		close(out)
	}()
	defer func() {
		close(stop)
		<-done
	}()
	for b := range out {
		<-b.decoded
		if b.err == nil && onBatch != nil {
			onBatch(b.index)
		}
		for i := range b.recs {
			if err2 := fn(&b.recs[i]); err2 != nil {
				records += uint64(i) + 1 // fn was called for it
				err = b.wrap(err2)
				return
			}
		}
		if b.err != nil {
			records += uint64(len(b.recs)) // those before the failure
			err = b.err
			return
		}
		batches++
		records += uint64(b.count)
		bytes += int64(b.n)
		free <- b
	}
	return
}

// maxReplayDecoders bounds replayLog's decoding goroutines (and so the
// batches it holds at once, two per decoder and two more).
const maxReplayDecoders = 4

// decodedBatch is one batch decoded for replayLog: its records, and the
// body they point into (owned by the batch until it goes back to the
// decoder).
type decodedBatch struct {
	path  string
	off   int
	index uint64
	n     int    // the entry's bytes in its segment
	count uint32 // records the batch holds
	// raw says body holds count records as they are, no batch framing
	// (a snapshot's chunk); off is then the number of the first.
	raw  bool
	body []byte
	recs []Record
	// err stops the replay after recs (the records before the failure);
	// it is wrapped already.
	err error
	// entry is the batch in its segment's buffer, until decoded; seg
	// counts the batches still to decode from that buffer.
	entry []byte
	seg   *sync.WaitGroup
	// decoded gets a value when the batch is decoded (or failed).
	decoded chan struct{}
}

func (b *decodedBatch) wrap(err error) error {
	if b.raw {
		return fmt.Errorf("ringwal/wal: replaying %s: %w", b.path, err)
	}
	return fmt.Errorf("ringwal/wal: replaying %s offset %d (batch %d): %w", b.path, b.off, b.index, err)
}

// splitLog is replayLog's splitting half: it sends each batch after
// `after` up to `last`, in order, on work (to be decoded) and on out (to
// be applied once decoded), taking buffers from free, until the log ends,
// it finds a bad entry (a batch sent on out alone, with its err set and
// decoded already), or stop closes. Segments are read into two buffers in
// turn; a buffer is reused once every batch in it is decoded.
func splitLog(segs []segment, after, last uint64, free chan *decodedBatch, work, out chan<- *decodedBatch, stop <-chan struct{}) {
	var bufs [2][]byte
	var pending [2]sync.WaitGroup
	take := func() *decodedBatch { return takeBatch(free, stop) }
	fail := func(err error) {
		if b := take(); b != nil {
			b.err = err
			b.decoded <- struct{}{}
			out <- b
		}
	}
	for i, sg := range segs {
		k := i % 2
		pending[k].Wait()
		var err error
		if bufs[k], err = readFileInto(sg.path, bufs[k]); err != nil {
			// Nothing of this segment was decoded: a batch with no
			// records carries the error.
			fail(err)
			return
		}
		buf := bufs[k]
		index := sg.index
		for off := 0; off < len(buf) && index <= last; index++ {
			e, n, ok := nextEntry(buf[off:])
			if !ok {
				fail(fmt.Errorf("%s offset %d (batch %d): bad entry length: %w", sg.path, off, index, ErrCorrupt))
				return
			}
			if index > after {
				b := take()
				if b == nil {
					return
				}
				b.path, b.off, b.index, b.n = sg.path, off, index, n
				b.entry, b.seg = e, &pending[k]
				pending[k].Add(1)
				work <- b
				out <- b
			}
			off += n
		}
	}
}

// takeBatch takes a batch from free, cleared of the last one's records,
// or returns nil once stop closes.
func takeBatch(free chan *decodedBatch, stop <-chan struct{}) *decodedBatch {
	select {
	case b := <-free:
		b.err, b.entry, b.seg, b.recs, b.raw = nil, nil, nil, b.recs[:0], false
		return b
	case <-stop:
		return nil
	}
}

// splitSnapshot is replaySnapshot's splitter: each batch it sends is a
// chunk of the snapshot's records (raw), read into the batch's own body;
// a chunker error goes out as a batch of no records carrying it.
func splitSnapshot(c *snapChunker, free chan *decodedBatch, work, out chan<- *decodedBatch, stop <-chan struct{}) {
	for {
		b := takeBatch(free, stop)
		if b == nil {
			return
		}
		first := c.n
		chunk, count, err := c.next(b.body)
		if err != nil {
			b.count, b.err = 0, err
			b.decoded <- struct{}{}
			out <- b
			return
		}
		if count == 0 {
			return
		}
		b.raw, b.body, b.count = true, chunk, uint32(count)
		b.path, b.off, b.index, b.n = c.path, int(first), 0, len(chunk)
		work <- b
		out <- b
	}
}

// decode checks entry e and decodes its records into b, calling prepare
// (if set) for each. The records may point into b.body, never into e: the
// segment buffer e lies in is reused while b waits to be applied.
func (b *decodedBatch) decode(e []byte, prepare func(*Record)) error {
	b.recs = b.recs[:0]
	var body []byte
	if b.raw {
		body = b.body
	} else {
		h, err := checkBatch(e)
		if err != nil {
			return err
		}
		b.count = h.count
		if h.flags&flagS2 == 0 {
			b.body = append(b.body[:0], e[h.size:]...)
			body = b.body
		} else if body, b.body, err = batchBody(e, h, b.body); err != nil {
			return err
		}
	}
	count := int(b.count)
	// Records are reused batch after batch, so that decodeRecordBody can
	// keep their strings when equal; a bogus count cannot allocate much,
	// since parseBatchHeader checked it against the body's length (and a
	// snapshot's chunker counted the records it holds).
	if cap(b.recs) < count {
		b.recs = append(b.recs[:cap(b.recs)], make([]Record, count-cap(b.recs))...)
	}
	recs := b.recs[:count]
	for i := range recs {
		n, err := DecodeRecord(body, &recs[i])
		if err != nil {
			b.recs = recs[:i]
			if b.raw { // numbered from the snapshot's first record
				return fmt.Errorf("record %d: %w", b.off+i+1, err)
			}
			return fmt.Errorf("record %d of %d: %w", i+1, count, err)
		}
		if prepare != nil {
			prepare(&recs[i])
		}
		body = body[n:]
	}
	b.recs = recs
	if len(body) != 0 {
		return corruptf("%d bytes after the batch's %d records", len(body), count)
	}
	return nil
}
