package middleware

import (
	"math"
	"sync/atomic"
)

// bucket is a token bucket of one fixed setting, kept as a single atomic
// word so that taking a token is a compare-and-swap and never a lock (the
// generic cell rate algorithm). The bucket refills one token per interval
// up to burst tokens; full is the time (ns from the RateLimit's epoch) at
// which it will hold burst tokens again. At time now it holds
//
//	burst - max(full-now, 0)/interval
//
// tokens, negative while attempts wait for tokens they have reserved.
// Taking a token moves full one interval later (from now, if the bucket is
// full already); giving one back moves it one interval earlier.
//
// A bucket is replaced, not changed, when its setting changes: RateLimit
// retires the old one (full becomes bucketRetired, after which no take or
// give back succeeds on it) and publishes its successor, which starts with
// the tokens the old one held.
type bucket struct {
	interval int64 // ns per token, in [1, maxInterval]
	burst    int64 // at least 1
	depth    int64 // burst·interval, saturated at maxDepth
	full     atomic.Int64
}

const (
	// bucketRetired marks a bucket that has been replaced.
	bucketRetired = math.MinInt64
	// maxInterval bounds the time per token at about 13 days, maxDepth a
	// full bucket at about 36 years, and bucketHorizon full itself at about
	// 146 years from the epoch: a reservation that would push full past it
	// is refused, so no sum of them overflows however many attempts wait.
	maxInterval   = 1 << 50
	maxDepth      = 1 << 60
	bucketHorizon = 1 << 62
)

// newBucket returns a bucket of rps tokens per second (> 0) holding up to
// burst tokens (at least 1), full at time full. A rate above 1e9 per second
// is taken as 1e9 (an interval of 1 ns); one below one per maxInterval as
// one per maxInterval.
func newBucket(rps float64, burst int, full int64) *bucket {
	iv := int64(maxInterval)
	if f := math.Round(1e9 / rps); f < maxInterval {
		iv = max(int64(f), 1)
	}
	b := &bucket{interval: iv, burst: max(int64(burst), 1)}
	b.depth = maxDepth
	if b.burst <= maxDepth/iv {
		b.depth = b.burst * iv
	}
	b.full.Store(full)
	return b
}

// reserve takes a token at time now and returns how long the attempt must
// wait for it (0 or less: go now). When that wait would exceed limit, or
// push full past bucketHorizon, it takes nothing and returns the wait with
// taken false (math.MaxInt64 past the horizon). On a retired bucket it
// takes nothing and returns retired: the caller reads the current bucket
// and tries again.
func (b *bucket) reserve(now, limit int64) (wait int64, taken, retired bool) {
	for {
		f := b.full.Load()
		if f == bucketRetired {
			return 0, false, true
		}
		if max(f, now) > bucketHorizon-b.interval {
			return math.MaxInt64, false, false
		}
		next := max(f, now) + b.interval
		wait = next - now - b.depth
		if wait > limit {
			return wait, false, false
		}
		if b.full.CompareAndSwap(f, next) {
			return wait, true, false
		}
	}
}

// giveBack returns a token taken by reserve; false if the bucket has been
// retired meanwhile.
func (b *bucket) giveBack() bool {
	for {
		f := b.full.Load()
		if f == bucketRetired {
			return false
		}
		if b.full.CompareAndSwap(f, f-b.interval) {
			return true
		}
	}
}

// tokens returns how many tokens the bucket holds at now if it is full at
// full.
func (b *bucket) tokens(full, now int64) float64 {
	return float64(b.burst) - float64(max(full-now, 0))/float64(b.interval)
}

// retire marks b replaced and returns the last value of full.
func (b *bucket) retire() int64 {
	for {
		f := b.full.Load()
		if b.full.CompareAndSwap(f, bucketRetired) {
			return f
		}
	}
}
