package wal

import (
	"encoding/hex"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The queue fields' exact encoding (design note §2.1 and §2.3): the queue
// number a uvarint behind presence bit 16, the copies behind bit 17 as a
// count, then per copy its queue and its ID's distance from the one
// before (the first from the record's ID). Part of the on-disk format.
func TestQueueFieldsEncoding(t *testing.T) {
	for _, tt := range []struct {
		name string
		r    Record
		hex  string
	}{
		{"enqueue into queue 3", Record{Kind: KindEnqueue, ID: 5, Queue: 3},
			// length 6, kind 1, mask fID|fQueue = 0x10001 (three bytes), ID 5, queue 3
			"06" + "01" + "818004" + "05" + "03"},
		{"queue 300", Record{Kind: KindEnqueue, Queue: 300},
			// length 6, kind 1, mask fQueue = 0x10000, queue 300 (two bytes)
			"06" + "01" + "808004" + "ac02"},
		{"declare", Record{Kind: KindQueue, Queue: 1, Key: "q", Text: "{}"},
			// length 10, kind 17, mask fKey|fText|fQueue = 0x14008, key "q", text "{}", queue 1
			"0a" + "11" + "888005" + "0171" + "027b7d" + "01"},
		{"publish", Record{Kind: KindPublish, ID: 10, Payload: []byte("p"),
			Copies: []Copy{{Queue: 0, ID: 10}, {Queue: 7, ID: 11}, {Queue: 300, ID: 15}}},
			// length 15, kind 21, mask fID|fPayload|fCopies = 0x20041, ID 10,
			// payload "p", 3 copies: (0, +0), (7, +1), (300, +4)
			"0f" + "15" + "c18008" + "0a" + "0170" + "03" + "0000" + "0701" + "ac0204"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			enc := AppendRecord(nil, &tt.r)
			assert.Equal(t, tt.hex, hex.EncodeToString(enc))
			var got Record
			n, err := DecodeRecord(enc, &got)
			require.NoError(t, err)
			assert.Equal(t, len(enc), n)
			assert.Equal(t, tt.r, got)
		})
	}
}

// Queue 0, the default queue, is not encoded at all: a default-queue
// record is the record of before queues (see also
// TestRecordEncodingBeforeQueuesIsUnchanged), and an empty Copies is
// absent too.
func TestDefaultQueueIsNotEncoded(t *testing.T) {
	for _, r := range recordsBeforeQueues() {
		with := r
		with.Queue, with.Copies = 0, []Copy{}
		assert.Equal(t, AppendRecord(nil, &r), AppendRecord(nil, &with), "%s", r.Kind)
	}
}

// The decoder refuses queue fields no writer produces, with ErrCorrupt and
// what was wrong, without allocating for a bogus count.
func TestDecodeRecordRefusesBadQueueFields(t *testing.T) {
	body := func(mask uint32, fields ...[]byte) []byte {
		b := []byte{byte(KindPublish)}
		b = appendUvarint(b, uint64(mask))
		for _, f := range fields {
			b = append(b, f...)
		}
		return append(appendUvarint(nil, uint64(len(b))), b...)
	}
	uv := func(vs ...uint64) []byte {
		var b []byte
		for _, v := range vs {
			b = appendUvarint(b, v)
		}
		return b
	}
	for _, tt := range []struct {
		name, want string
		b          []byte
	}{
		{"queue above 65535", "queue 65536 above 65535", body(fQueue, uv(1<<16))},
		{"queue above 32 bits", "queue 4294967296 above 65535", body(fQueue, uv(1<<32))},
		{"copy count beyond the bytes left", "copy count 3 exceeds", body(fCopies, uv(3, 0, 0, 1, 1))},
		{"huge copy count", "copy count 1000000000 exceeds", body(fCopies, uv(1e9, 0, 0))},
		{"copy queue above 65535", "copy 1: queue 65536 above 65535", body(fID|fCopies, uv(5, 2, 1, 0, 1<<16, 1))},
		{"copy ID overflows", "copy 1: ID 18446744073709551614 + 2 overflows",
			body(fID|fCopies, uv(math.MaxUint64-1, 2, 1, 0, 2, 2))},
		{"copy ID overflows from the record's ID", "copy 0: ID 18446744073709551615 + 1 overflows",
			body(fID|fCopies, uv(math.MaxUint64, 1, 1, 1))},
		{"truncated copy", "bad varint", body(fCopies, uv(2, 1, 0, 1), []byte{0x80})},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var r Record
			_, err := DecodeRecord(tt.b, &r)
			require.ErrorIs(t, err, ErrCorrupt)
			assert.Contains(t, err.Error(), tt.want)
			assert.Contains(t, err.Error(), "publish record")
		})
	}
}

// Replaying publish records into one Record reuses its Copies' storage,
// as it does Headers': no allocation per record.
func TestDecodeRecordReusesCopies(t *testing.T) {
	p := Record{Kind: KindPublish, ID: 100, Time: t0, Key: "smtp", Payload: make([]byte, 128),
		Copies: []Copy{{Queue: 1, ID: 100}, {Queue: 2, ID: 101}, {Queue: 3, ID: 102}}}
	buf := AppendRecord(nil, &p)
	var r Record
	_, err := DecodeRecord(buf, &r)
	require.NoError(t, err)
	require.Equal(t, p.Copies, r.Copies)
	allocs := testing.AllocsPerRun(1000, func() { _, _ = DecodeRecord(buf, &r) })
	assert.Zero(t, allocs)
	assert.Equal(t, p.Copies, r.Copies)

	// A record with fewer copies decodes into the same storage.
	fewer := p
	fewer.Copies = p.Copies[:1]
	_, err = DecodeRecord(AppendRecord(nil, &fewer), &r)
	require.NoError(t, err)
	assert.Equal(t, fewer.Copies, r.Copies)

	out := make([]byte, 0, 4096)
	allocs = testing.AllocsPerRun(1000, func() { out = AppendRecord(out[:0], &p) })
	assert.Zero(t, allocs, "AppendRecord with copies")
}

// checkQueues refuses what the decoder would refuse, so that a record
// that could not be read back is never written.
func TestCheckQueuesRefusesUndecodableRecords(t *testing.T) {
	for _, tt := range []struct {
		name, want string
		r          Record
	}{
		{"queue above 65535", "queue 65536 above 65535", Record{Kind: KindEnqueue, Queue: 1 << 16}},
		{"copy queue above 65535", "copy 1: queue 70000 above 65535",
			Record{Kind: KindPublish, ID: 1, Copies: []Copy{{1, 1}, {70000, 2}}}},
		{"copy ID below the record's", "copy 0: ID 4 below the one before it (5)",
			Record{Kind: KindPublish, ID: 5, Copies: []Copy{{1, 4}}}},
		{"copy ID below the copy before", "copy 2: ID 6 below the one before it (7)",
			Record{Kind: KindPublish, ID: 5, Copies: []Copy{{1, 5}, {2, 7}, {3, 6}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := checkQueues(&tt.r)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	for _, r := range sampleRecords() {
		assert.NoError(t, checkQueues(&r), "%s", r.Kind)
	}
}

func TestNewKindsHaveNames(t *testing.T) {
	want := map[Kind]string{KindQueue: "queue", KindQueuePause: "queuepause", KindQueueResume: "queueresume",
		KindQueueDelete: "queuedelete", KindPublish: "publish",
		KindSchedule: "schedule", KindScheduleRemove: "scheduleremove", KindScheduleTick: "scheduletick"}
	for k, name := range want {
		assert.True(t, k.Valid())
		assert.Equal(t, name, k.String())
	}
	// Never renumbered: the numbers are on disk.
	assert.EqualValues(t, 16, KindCancel)
	assert.EqualValues(t, 17, KindQueue)
	assert.EqualValues(t, 21, KindPublish)
	assert.EqualValues(t, 24, KindScheduleTick)
	assert.Equal(t, KindScheduleTick, kindMax)
	assert.False(t, (kindMax + 1).Valid())
	assert.Equal(t, "kind(25)", (kindMax + 1).String())
}
