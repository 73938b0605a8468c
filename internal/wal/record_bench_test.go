package wal

import "testing"

// benchEnqueue is a typical default-queue enqueue record: the codec's hot
// case (every Enqueue encodes one; replay decodes one per message).
func benchEnqueue() Record {
	return Record{Kind: KindEnqueue, ID: 123456789, Time: t0, Priority: 1, Key: "smtp", Payload: make([]byte, 128)}
}

func BenchmarkAppendRecord(b *testing.B) {
	r := benchEnqueue()
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = AppendRecord(buf[:0], &r)
	}
}

func BenchmarkDecodeRecord(b *testing.B) {
	r0 := benchEnqueue()
	buf := AppendRecord(nil, &r0)
	var r Record
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := DecodeRecord(buf, &r); err != nil {
			b.Fatal(err)
		}
	}
}
