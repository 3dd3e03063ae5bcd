package middleware

import (
	"math"
	"testing"
)

func TestBucketRefusesPastItsHorizon(t *testing.T) {
	// At the slowest rate, a few thousand attempts waiting without a
	// deadline reach the horizon; the next is refused rather than let full
	// wrap around (which would forgive every reserved token, or read as
	// retired and make callers spin).
	for _, start := range []int64{0, 12345} {
		b := newBucket(1e-10, 1, start)
		refused := false
		for i := range 1 << 13 {
			f := b.full.Load()
			w, taken, retired := b.reserve(start, math.MaxInt64)
			if retired {
				t.Fatalf("start %d, reservation %d: a live bucket reads as retired", start, i)
			}
			if !taken {
				if w != math.MaxInt64 || b.full.Load() != f {
					t.Fatalf("start %d: refused with wait %d and full moved", start, w)
				}
				refused = true
				break
			}
			if i > 0 && w <= 0 {
				t.Fatalf("start %d, reservation %d: no wait (full %d wrapped?)", start, i, b.full.Load())
			}
		}
		if !refused {
			t.Errorf("start %d: 8192 reservations of 2^50 ns each all taken; want a refusal at the horizon", start)
		}
		if got := b.tokens(b.full.Load(), start); got > -4000 {
			t.Errorf("start %d: tokens %v, want the debt of the ~4096 reservations kept", start, got)
		}
	}
}
