package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const t0 = int64(1_750_000_000_123_456_789)

// sampleRecords has one record of every kind with the fields the engine
// uses for it, plus edge values.
func sampleRecords() []Record {
	return []Record{
		{Kind: KindEnqueue, ID: 1, Time: t0, Priority: -2, Key: "slack", DedupID: "order-17",
			Headers: []string{"trace", "abc", "tenant", "t1"}, Payload: []byte("hello"),
			NotBefore: t0 + 5e9, Deadline: t0 + 60e9, ExpiresAt: t0 + 3600e9, MaxAttempts: 5},
		{Kind: KindEnqueue, ID: math.MaxUint64, Time: math.MinInt64, Priority: 2, Payload: make([]byte, 70000),
			NotBefore: math.MaxInt64, Deadline: math.MinInt64 + 1, ExpiresAt: -1, MaxAttempts: math.MaxInt32,
			Attempt: math.MinInt32, Until: math.MaxInt64, Crashes: math.MaxInt32},
		{Kind: KindEnqueue, ID: 3, Time: t0, Attempt: 2, Until: t0 + 1e9, Key: "ключ", Headers: []string{"", "v"}},
		{Kind: KindLease, ID: 4, Time: t0, Attempt: 1, Until: t0 + 30e9},
		{Kind: KindExtend, ID: 4, Time: t0, Until: t0 + 60e9},
		{Kind: KindAck, ID: 4, Time: t0},
		{Kind: KindNack, ID: 5, Time: t0, Attempt: 3, Category: 2, Text: "connection refused", Until: t0 + 2e9},
		{Kind: KindDeadLetter, ID: 6, Time: t0, Category: 5, Text: "400 bad request", Attempt: 1},
		{Kind: KindRedrive, ID: 6, Time: t0},
		{Kind: KindReview, ID: 6, Time: t0, Text: "looked at it"},
		{Kind: KindPurge, ID: 6},
		{Kind: KindRequeue, ID: 7, Time: t0, Crashes: 2},
		{Kind: KindFailure, ID: 8, Time: t0 - 1, Category: 255, Text: "timeout"},
		{Kind: KindDedup, ID: 9, DedupID: "x", Time: t0},
		{Kind: KindCheckpoint, ID: 1000, Time: t0},
		{Kind: KindAck}, // everything zero but the kind
		// Named queues:
		{Kind: KindEnqueue, ID: 11, Time: t0, Queue: 1, Key: "k", Payload: []byte("q")},
		{Kind: KindEnqueue, ID: 12, Time: t0, Queue: MaxQueue, Priority: 1, Until: t0 + 1, Crashes: 1},
		{Kind: KindQueue, Queue: 7, Key: "emails", Time: t0, Text: `{"max":100,"strict":true}`},
		{Kind: KindQueue, Time: t0, Text: `{"lease":30000000000}`}, // the default queue
		{Kind: KindQueuePause, Queue: 7, Key: "emails", Time: t0, Until: t0 + 60e9},
		{Kind: KindQueuePause, Queue: 7, Key: "emails", Time: t0}, // until resumed
		{Kind: KindQueueResume, Queue: 7, Key: "emails", Time: t0 + 1},
		{Kind: KindQueueDelete, Queue: 7, Key: "emails", Time: t0 + 2},
		{Kind: KindPublish, ID: 20, Time: t0, Priority: -1, Key: "k", DedupID: "d", Headers: []string{"h", "v"},
			Payload: []byte("fan out"), ExpiresAt: t0 + 1e9, MaxAttempts: 3,
			Copies: []Copy{{Queue: 0, ID: 20}, {Queue: 7, ID: 21}, {Queue: MaxQueue, ID: 1 << 40}}},
		{Kind: KindPublish, ID: math.MaxUint64 - 1, Payload: []byte("x"),
			Copies: []Copy{{Queue: 1, ID: math.MaxUint64 - 1}, {Queue: 2, ID: math.MaxUint64}, {Queue: 3, ID: math.MaxUint64}}},
		// Schedules:
		{Kind: KindSchedule, Key: "nightly", Time: t0, Text: `{"spec":"@daily"}`},
		{Kind: KindScheduleRemove, Key: "nightly", Time: t0 + 1},
		{Kind: KindScheduleTick, ID: 30, Queue: 7, Time: t0, Text: "nightly", Until: t0 - 5, Payload: []byte("report")},
		{Kind: KindScheduleTick, Time: t0, Text: "nightly", Until: t0, Attempt: 12}, // 12 ticks skipped
		// Uniqueness modes:
		{Kind: KindEnqueue, ID: 30, Time: t0, DedupID: "import-7", Payload: []byte("u"), Unique: 2},
		{Kind: KindEnqueue, ID: 31, Time: t0, Queue: 3, DedupID: "reindex-42", NotBefore: t0 + 5e9, Until: t0 + 9e9, Unique: 1},
		{Kind: KindPublish, ID: 32, Time: t0, DedupID: "d", Unique: 255, Copies: []Copy{{Queue: 1, ID: 32}}},
	}
}

// cloneRecord copies r's slices, which decoding reuses.
func cloneRecord(r *Record) Record {
	c := *r
	c.Payload = append([]byte(nil), r.Payload...)
	if len(r.Payload) == 0 {
		c.Payload = nil
	}
	c.Headers = append([]string(nil), r.Headers...)
	if len(r.Headers) == 0 {
		c.Headers = nil
	}
	c.Copies = append([]Copy(nil), r.Copies...)
	if len(r.Copies) == 0 {
		c.Copies = nil
	}
	return c
}

func TestRecordRoundTrip(t *testing.T) {
	for _, want := range sampleRecords() {
		t.Run(want.Kind.String(), func(t *testing.T) {
			buf := AppendRecord([]byte("prefix"), &want)
			require.Equal(t, "prefix", string(buf[:6]))
			var got Record
			n, err := DecodeRecord(buf[6:], &got)
			require.NoError(t, err)
			assert.Equal(t, len(buf)-6, n)
			assert.Equal(t, want, got)
		})
	}
}

func TestRecordDecodeSequenceReusesRecord(t *testing.T) {
	var buf []byte
	recs := sampleRecords()
	for i := range recs {
		buf = AppendRecord(buf, &recs[i])
	}
	var r Record
	for i := range recs {
		n, err := DecodeRecord(buf, &r)
		require.NoError(t, err)
		assert.Equal(t, recs[i], r, "record %d", i)
		buf = buf[n:]
	}
	assert.Empty(t, buf)
}

func TestAppendRecordDoesNotAllocate(t *testing.T) {
	r := sampleRecords()[0]
	buf := make([]byte, 0, 4096)
	allocs := testing.AllocsPerRun(1000, func() { buf = AppendRecord(buf[:0], &r) })
	assert.Zero(t, allocs)
}

func TestDecodeRecordReplayDoesNotAllocate(t *testing.T) {
	// Replaying many records of one key: the key string is reused.
	r0 := Record{Kind: KindEnqueue, ID: 1, Time: t0, Key: "smtp", Payload: make([]byte, 128)}
	buf := AppendRecord(nil, &r0)
	var r Record
	_, err := DecodeRecord(buf, &r)
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(1000, func() { _, _ = DecodeRecord(buf, &r) })
	assert.Zero(t, allocs)
}

func TestDecodeRecordRejectsEveryTruncation(t *testing.T) {
	for _, rec := range sampleRecords() {
		buf := AppendRecord(nil, &rec)
		for cut := 0; cut < len(buf); cut++ {
			var r Record
			_, err := DecodeRecord(buf[:cut], &r)
			require.Error(t, err, "%s cut at %d", rec.Kind, cut)
			require.ErrorIs(t, err, ErrCorrupt)
		}
	}
}

func TestDecodeRecordErrors(t *testing.T) {
	valid := AppendRecord(nil, &Record{Kind: KindAck, ID: 7})
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"overlong varint", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
		{"length past end", []byte{5, byte(KindAck), 0}},
		{"kind zero", []byte{2, 0, 0}},
		{"unknown kind", []byte{2, byte(kindMax + 1), 0}},
		{"unknown field bit", append([]byte{4, byte(KindAck)}, appendUvarint(nil, uint64(fAll)+1)...)},
		{"trailing bytes", append([]byte{byte(len(valid))}, append(valid[1:], 0)...)},
		{"string past end", []byte{4, byte(KindAck), byte(fKey), 9, 'a'}},
		{"header count too big", []byte{4, byte(KindAck), byte(fHeaders), 100, 0}},
		{"int32 out of range", append([]byte{8, byte(KindAck), 0x80, 0x10}, appendVarint(nil, math.MaxInt32+1)...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Record
			_, err := DecodeRecord(tt.b, &r)
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrCorrupt), "%v", err)
		})
	}
}

func TestBatchRoundTrip(t *testing.T) {
	recs := sampleRecords()
	for _, compressAbove := range []int{-1, 0, 64, 1 << 20} {
		buf := make([]byte, batchHeaderSize)
		for i := range recs {
			buf = AppendRecord(buf, &recs[i])
		}
		e, _, compressed := finishBatch(buf, len(recs), compressAbove, nil, 0)
		if compressAbove == 0 || compressAbove == 64 {
			assert.True(t, compressed, "a 70 kB zero payload compresses")
		} else {
			assert.False(t, compressed)
		}
		var got []Record
		var r Record
		_, err := decodeBatch(e, nil, &r, func(r *Record) error {
			got = append(got, cloneRecord(r))
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, recs, got)

		// Every single-byte flip is caught by a checksum.
		for i := 0; i < len(e); i += 1 + len(e)/200 {
			bad := append([]byte(nil), e...)
			bad[i] ^= 0x10
			_, err := decodeBatch(bad, nil, &r, nil)
			require.Error(t, err, "flip at %d", i)
		}
	}
}

func TestBatchHeaderNewerVersion(t *testing.T) {
	buf := AppendRecord(make([]byte, batchHeaderSize), &Record{Kind: KindAck, ID: 1})
	e, _, _ := finishBatch(buf, 1, -1, nil, 0)
	e[0] = batchVersion + 1
	refreshHeaderCRC(e)
	_, err := checkBatch(e)
	require.ErrorIs(t, err, ErrVersion)
	assert.Contains(t, err.Error(), fmt.Sprintf("version %d", batchVersion+1))
}

// A version 2 batch seen by a build that reads only version 1: its first
// 18 bytes are a version 1 header whose checksum holds, with a newer
// version, which such a build reports as ErrVersion (it checks the header
// checksum first, then the version) instead of taking it for damage.
func TestBatchV2LooksNewerToV1Readers(t *testing.T) {
	buf := AppendRecord(make([]byte, batchHeaderSize), &Record{Kind: KindAck, ID: 1})
	e, _, _ := finishBatch(buf, 1, -1, nil, 0)
	require.Equal(t, crc32.Checksum(e[:14], castagnoli), binary.LittleEndian.Uint32(e[14:18]))
	require.Greater(t, e[0], byte(1))
}

func FuzzDecodeRecord(f *testing.F) {
	for _, r := range sampleRecords() {
		f.Add(AppendRecord(nil, &r))
	}
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Record
		n, err := DecodeRecord(b, &r)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			return
		}
		if n <= 0 || n > len(b) {
			t.Fatalf("consumed %d of %d bytes", n, len(b))
		}
		// What decodes re-encodes to something that decodes the same.
		again := AppendRecord(nil, &r)
		var r2 Record
		if _, err := DecodeRecord(again, &r2); err != nil {
			t.Fatalf("re-encoding does not decode: %v", err)
		}
		if want, got := cloneRecord(&r), cloneRecord(&r2); !reflect.DeepEqual(want, got) {
			t.Fatalf("round trip changed the record:\n got %+v\nwant %+v", got, want)
		}
	})
}

func FuzzDecodeBatch(f *testing.F) {
	recs := sampleRecords()
	for _, ca := range []int{-1, 0} {
		buf := make([]byte, batchHeaderSize)
		for i := range recs[2:] {
			buf = AppendRecord(buf, &recs[2+i])
		}
		e, _, _ := finishBatch(buf, len(recs)-2, ca, nil, 0)
		f.Add(append([]byte(nil), e...))
	}
	f.Add([]byte{})
	f.Add(make([]byte, batchHeaderSize))
	f.Fuzz(func(t *testing.T, e []byte) {
		var r Record
		var scratch []byte
		// The checksums reject almost every mutation, so also try the input
		// with its checksums recomputed: that exercises the decoders.
		_, _ = decodeBatch(e, scratch, &r, nil)
		// (Skipped when the header claims a body over 1 MiB: a forged s2
		// block may then make the decoder allocate that much, which real
		// data cannot reach without passing the checksum.)
		if len(e) >= batchHeaderSize && binary.LittleEndian.Uint32(e[6:10]) <= 1<<20 {
			fixed := append([]byte(nil), e...)
			refreshBodyCRC(fixed)
			refreshHeaderCRC(fixed)
			_, err := decodeBatch(fixed, scratch, &r, nil)
			if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
				t.Fatalf("unexpected error kind: %v", err)
			}
		}
		_, _, _ = nextEntry(e)
		_ = validBatchesAfter(e, 0)
		_ = cutShort(e)
	})
}

// CheckpointRecord names the slab-size field without changing the bytes:
// its encoding must equal the record the engine wrote by hand before
// (the slab bits in Attempt), and SlabBits must read it back after a
// round trip. Other kinds report 0 whatever their Attempt.
func TestCheckpointRecordSlabBits(t *testing.T) {
	for _, bits := range []uint{0, 1, 10, 26, 64} {
		r := CheckpointRecord(1234, t0, bits)
		legacy := Record{Kind: KindCheckpoint, ID: 1234, Time: t0, Attempt: int32(bits)}
		require.Equal(t, AppendRecord(nil, &legacy), AppendRecord(nil, &r), "on-disk form changed for slabBits %d", bits)
		var got Record
		_, err := DecodeRecord(AppendRecord(nil, &r), &got)
		require.NoError(t, err)
		assert.Equal(t, bits, got.SlabBits())
		assert.Equal(t, uint64(1234), got.ID)
		assert.Equal(t, t0, got.Time)
	}
	lease := Record{Kind: KindLease, ID: 4, Attempt: 7}
	assert.Zero(t, lease.SlabBits(), "SlabBits of a non-checkpoint record")
	damaged := Record{Kind: KindCheckpoint, Attempt: -3}
	assert.Zero(t, damaged.SlabBits(), "a negative slab size reads as none")
	assert.Panics(t, func() { CheckpointRecord(1, t0, 65) })
}
