package ringwal

import (
	"strconv"
	"testing"
	"time"
)

// BenchmarkUniqueEnqueue is the cost of an enqueue with a DedupID under
// each uniqueness mode, against the window's (the dedup that came
// before): each op enqueues a message with a DedupID not seen before,
// dequeues and acks it. window keeps its entries for the hour's window
// (the map grows with the run, as it does for its users); queued and live
// judge the DedupID against the index, and their entries go with the ack.
// unchecked is the floor: the DedupID travels with the message, and with
// a negative DedupWindow nothing checks it. queued and live run with the
// default window (2m), which they ignore. Memory-only and Write mode (a log on
// disk, no fsync).
func BenchmarkUniqueEnqueue(b *testing.B) {
	modes := []struct {
		name string
		u    Unique
	}{{"unchecked", UniqueWindow}, {"window", UniqueWindow}, {"queued", UniqueQueued}, {"live", UniqueLive}}
	for _, store := range []string{"memory", "write"} {
		for _, mode := range modes {
			b.Run(store+"/"+mode.name, func(b *testing.B) {
				dir := ""
				if store == "write" {
					dir = b.TempDir()
				}
				o := Options{TierCapacity: 1 << 16, MaxMessages: 1 << 17}
				switch mode.name {
				case "window":
					o.DedupWindow = time.Hour
				case "unchecked":
					o.DedupWindow = -1
				}
				e, err := Open(dir, o)
				if err != nil {
					b.Fatal(err)
				}
				defer e.Close()
				ids := make([]string, b.N)
				for i := range ids {
					ids[i] = "job-" + strconv.Itoa(i)
				}
				payload := make([]byte, 128)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := e.TryEnqueue(Message{Payload: payload, DedupID: ids[i], Unique: mode.u}); err != nil {
						b.Fatal(err)
					}
					d, ok := e.TryDequeue()
					if !ok {
						b.Fatal("nothing to dequeue")
					}
					if err := e.Ack(d.Lease); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
