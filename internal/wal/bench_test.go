package wal_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	twal "github.com/tidwall/wal"

	"github.com/ringwal/ringwal/internal/wal"
)

// benchPayload is the 128-byte payload of every benchmark record: text
// that looks like a typical JSON job body.
var benchPayload = func() []byte {
	p := []byte(`{"to":"user-000042@example.com","template":"welcome","locale":"en-GB","attempt":1,"trace":"4bf92f3577b34da6a3ce929d0e0e4736"}`)
	for len(p) < 128 {
		p = append(p, ' ')
	}
	return p[:128]
}()

func benchRecord(id uint64) wal.Record {
	return wal.Record{
		Kind:     wal.KindEnqueue,
		ID:       id,
		Time:     1_750_000_000_000_000_000 + int64(id)*1000,
		Priority: 1,
		Key:      "smtp",
		Payload:  benchPayload,
	}
}

// BenchmarkWAL measures Append throughput: P producers, each waiting as the
// mode promises, 128-byte payloads.
func BenchmarkWAL(b *testing.B) {
	for _, mode := range []wal.Mode{wal.Buffered, wal.Write, wal.Fsync} {
		for _, p := range []int{1, 8, 64} {
			name := map[wal.Mode]string{wal.Buffered: "Buffered", wal.Write: "Write", wal.Fsync: "Fsync"}[mode]
			b.Run(fmt.Sprintf("%s-%d", name, p), func(b *testing.B) {
				benchAppend(b, mode, p)
			})
		}
	}
}

func benchAppend(b *testing.B, mode wal.Mode, producers int) {
	l, err := wal.Open(b.TempDir(), wal.Options{Mode: mode})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for g := 0; g < producers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				r := benchRecord(uint64(i))
				if err := l.Append(&r); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := l.Flush(); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if err, ok := failed.Load().(error); ok {
		b.Fatal(err)
	}
	st := l.Stats()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
	if st.Batches > 0 {
		b.ReportMetric(float64(st.Records)/float64(st.Batches), "records/batch")
	}
}

// BenchmarkRawTidwall is the physical reference: tidwall/wal alone.
func BenchmarkRawTidwall(b *testing.B) {
	// Batch1000: 1000 records of the same 128 bytes per entry, NoSync.
	b.Run("Batch1000", func(b *testing.B) {
		l, err := twal.Open(b.TempDir(), &twal.Options{NoSync: true, SegmentSize: 16 << 20})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		entry := make([]byte, 0, 1000*len(benchPayload))
		for i := 0; i < 1000; i++ {
			entry = append(entry, benchPayload...)
		}
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		idx := uint64(1)
		for done := 0; done < b.N; done += 1000 {
			n := min(1000, b.N-done)
			if err := l.Write(idx, entry[:n*len(benchPayload)]); err != nil {
				b.Fatal(err)
			}
			idx++
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
	})
	// Entry1Sync: one 128-byte entry per write, fsync after each.
	b.Run("Entry1Sync", func(b *testing.B) {
		l, err := twal.Open(b.TempDir(), &twal.Options{NoSync: true, SegmentSize: 16 << 20})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			if err := l.Write(uint64(i+1), benchPayload); err != nil {
				b.Fatal(err)
			}
			if err := l.Sync(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
	})
}

// BenchmarkReplay replays 10^6 records of 128-byte payloads (written in
// Buffered mode, so in large s2-compressed batches). The timed part is
// Replay; open-ms reports the time Open took to check the log.
func BenchmarkReplay(b *testing.B) {
	const n = 1_000_000
	dir := b.TempDir()
	l, err := wal.Open(dir, wal.Options{Mode: wal.Buffered})
	if err != nil {
		b.Fatal(err)
	}
	rs := make([]wal.Record, 1000)
	for i := 0; i < n; i += len(rs) {
		for j := range rs {
			rs[j] = benchRecord(uint64(i + j + 1))
		}
		if err := l.AppendBatch(rs); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	l, err = wal.Open(dir, wal.Options{})
	if err != nil {
		b.Fatal(err)
	}
	openTime := time.Since(t0)
	defer l.Close()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		var count, sum uint64
		st, err := l.Replay(func(r *wal.Record) error {
			count++
			sum += uint64(len(r.Payload))
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		if count != n || st.Records != n {
			b.Fatalf("replayed %d records, want %d", count, n)
		}
	}
	elapsed := time.Since(start)
	b.ReportMetric(float64(n)*float64(b.N)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(openTime.Microseconds())/1000, "open-ms")
}
