package ring

import (
	"testing"
)

// FuzzRingModel drives a ring with a random sequence of operations and
// checks every result against a plain slice used as a FIFO model. Each input
// byte is one operation: its low two bits pick push, pop, push batch or pop
// batch, the rest is a batch size.
func FuzzRingModel(f *testing.F) {
	f.Add(uint8(3), []byte{0, 0, 0, 1, 1, 1, 1})
	f.Add(uint8(0), []byte{0, 1, 0, 1})
	f.Add(uint8(5), []byte{2 | 4<<2, 3 | 3<<2, 2 | 40<<2, 1, 3 | 63<<2})
	f.Add(uint8(16), []byte{0, 0, 2 | 9<<2, 3 | 2<<2, 1, 1, 0, 3 | 20<<2})
	f.Fuzz(func(t *testing.T, capacity uint8, ops []byte) {
		r := New[int](int(capacity))
		capN := r.Cap()
		var model []int
		next := 0
		buf := make([]int, 64)
		for i, op := range ops {
			size := int(op >> 2)
			switch op & 3 {
			case 0: // push
				ok := r.TryPush(next)
				if want := len(model) < capN; ok != want {
					t.Fatalf("op %d: TryPush = %v with %d of %d held", i, ok, len(model), capN)
				}
				if ok {
					model = append(model, next)
					next++
				}
			case 1: // pop
				v, ok := r.TryPop()
				if want := len(model) > 0; ok != want {
					t.Fatalf("op %d: TryPop ok = %v with %d held", i, ok, len(model))
				}
				if ok {
					if v != model[0] {
						t.Fatalf("op %d: TryPop = %d, want %d", i, v, model[0])
					}
					model = model[1:]
				}
			case 2: // push batch
				vs := buf[:size]
				for j := range vs {
					vs[j] = next + j
				}
				n := r.PushBatch(vs)
				if want := min(size, capN-len(model)); n != want {
					t.Fatalf("op %d: PushBatch(%d) = %d, want %d", i, size, n, want)
				}
				model = append(model, vs[:n]...)
				next += n
			case 3: // pop batch
				dst := buf[:size]
				n := r.PopBatch(dst)
				if want := min(size, len(model)); n != want {
					t.Fatalf("op %d: PopBatch(%d) = %d, want %d", i, size, n, want)
				}
				for j := 0; j < n; j++ {
					if dst[j] != model[j] {
						t.Fatalf("op %d: PopBatch[%d] = %d, want %d", i, j, dst[j], model[j])
					}
				}
				model = model[n:]
			}
			if r.Len() != len(model) {
				t.Fatalf("op %d: Len = %d, want %d", i, r.Len(), len(model))
			}
		}
	})
}
