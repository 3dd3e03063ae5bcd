package middleware

import (
	"math"
	"slices"
	"sync"
	"time"
)

// latencySamples is how many recent latencies a Latencies keeps.
const latencySamples = 256

// Latencies keeps the latencies of a client's most recent answered attempts
// (the last 256), for the hedging layer's delay_percentile. It is a
// component of its own so that every hedging layer of a client (its routes
// included) shares one, and a reload keeps it. The zero value is ready to
// use and knows no latency; a nil *Latencies records nothing. It is safe
// for concurrent use: each method holds its mutex briefly.
type Latencies struct {
	mu   sync.Mutex
	ring [latencySamples]time.Duration // guarded by mu
	n    int                           // samples held, at most latencySamples
	next int                           // where the next sample goes
}

// NewLatencies returns an empty Latencies.
func NewLatencies() *Latencies { return new(Latencies) }

// Observe records the latency of one answered attempt.
func (l *Latencies) Observe(d time.Duration) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.ring[l.next] = d
	l.next = (l.next + 1) % latencySamples
	l.n = min(l.n+1, latencySamples)
	l.mu.Unlock()
}

// Percentile returns the p-quantile (p in (0, 1]) of the recorded
// latencies by the nearest-rank method, and false when none is recorded or
// p is out of range.
func (l *Latencies) Percentile(p float64) (time.Duration, bool) {
	if l == nil || !(p > 0 && p <= 1) {
		return 0, false
	}
	var buf [latencySamples]time.Duration // on the stack: no allocation
	l.mu.Lock()
	n := l.n
	copy(buf[:], l.ring[:n])
	l.mu.Unlock()
	if n == 0 {
		return 0, false
	}
	s := buf[:n]
	slices.Sort(s)
	rank := int(math.Ceil(p*float64(n))) - 1
	return s[min(max(rank, 0), n-1)], true
}
