package middleware

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// RateLimit paces the attempts of a client with a token bucket: the bucket
// holds up to Burst tokens, refills at RequestsPerSecond, and every attempt
// takes one, waiting for it when the bucket is empty. It sits inside Retry,
// so retries are paced too. Taking a token is one clock read and one
// compare-and-swap, never a lock (see bucket), so the layer costs little
// even when many goroutines share it. A rate above 1e9 per second is taken
// as 1e9, one below one token per 13 days as one per 13 days.
//
// A RequestsPerSecond of zero (or less) means unlimited: the layer passes
// requests through at the cost of one atomic load. A Burst below 1 with a
// finite rate is taken as 1.
//
// The settings can be retuned with Update while requests are in flight; the
// tokens in the bucket are kept. A RateLimit is created with NewRateLimit
// (the zero value is not usable) and is safe for concurrent use.
type RateLimit struct {
	ev    *Events
	epoch time.Time // bucket times are ns since epoch (monotonic clock)
	// b is the bucket; nil while unlimited. Update replaces it, handing
	// its tokens on to the new one.
	b  atomic.Pointer[bucket]
	mu sync.Mutex // serializes Update
}

// NewRateLimit returns a RateLimit with the settings s, its bucket full; the
// zero RateLimitSettings make it unlimited. Waits are emitted as
// EventRateLimitWaited at slog.LevelDebug to ev; a nil ev emits nothing.
// The RateLimit is safe for concurrent use.
func NewRateLimit(s RateLimitSettings, ev *Events) *RateLimit {
	l := &RateLimit{ev: ev, epoch: time.Now()}
	l.Update(s)
	return l
}

// now returns the time on the buckets' clock.
func (l *RateLimit) now() int64 { return int64(time.Since(l.epoch)) }

// Update retunes the limiter in place: the tokens in the bucket are kept
// (capped at the new Burst) and refill at the new rate from now on.
// Attempts already waiting keep the wait they were given. Setting
// RequestsPerSecond to zero makes the layer unlimited at once; a finite rate
// set after that starts with a full bucket, as the unlimited layer had, in
// effect, any number of tokens. It is safe for concurrent use.
func (l *RateLimit) Update(s RateLimitSettings) {
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.b.Load()
	if s.RequestsPerSecond <= 0 {
		l.b.Store(nil)
		if old != nil {
			old.retire()
		}
		return
	}
	now := l.now()
	nb := newBucket(s.RequestsPerSecond, s.Burst, now)
	if old != nil {
		// Attempts that find old retired wait for nb, published below.
		tokens := min(old.tokens(old.retire(), now), float64(nb.burst))
		ahead := min((float64(nb.burst)-tokens)*float64(nb.interval), float64(bucketHorizon-now))
		nb.full.Store(now + int64(math.Round(ahead)))
	}
	l.b.Store(nb)
}

// Tokens returns how many tokens the bucket holds now, +Inf when the layer
// is unlimited. It is negative while attempts wait for tokens they have
// reserved. It is safe for concurrent use.
func (l *RateLimit) Tokens() float64 {
	for {
		b := l.b.Load()
		if b == nil {
			return math.Inf(1)
		}
		if f := b.full.Load(); f != bucketRetired {
			return b.tokens(f, l.now())
		}
		runtime.Gosched() // an Update is publishing the next bucket
	}
}

// Middleware returns the rate limit layer: every attempt takes a token, so it
// sits inside Retry. Every RoundTripper it returns shares l's bucket and is
// safe for concurrent use.
//
// A wait ends early when the request context ends, with an error matching
// the context's error (errors.Is(err, context.Canceled) or
// context.DeadlineExceeded), and gives its token back. A wait that would end
// after the context's deadline is not started: RoundTrip returns at once an
// error matching context.DeadlineExceeded. After a wait the layer emits
// EventRateLimitWaited with the wait as Delay; an attempt that did not wait
// emits nothing.
//
// It keeps the RoundTripper contract: it passes the caller's request on
// unchanged and closes the request body when it returns an error without
// passing the request on.
func (l *RateLimit) Middleware() Middleware {
	return func(next http.RoundTripper) http.RoundTripper {
		return &rateLimitRT{l: l, next: next}
	}
}

// rateLimitRT is the RoundTripper of RateLimit.Middleware.
type rateLimitRT struct {
	l    *RateLimit
	next http.RoundTripper
}

func (t *rateLimitRT) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.l.b.Load() != nil {
		if err := t.l.wait(req); err != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, err
		}
	}
	return t.next.RoundTrip(req)
}

// wait takes a token for req, waiting for it if need be.
func (l *RateLimit) wait(req *http.Request) error {
	ctx := req.Context()
	// Until a wait is needed, no wait is allowed and the deadline is not
	// read: the fast path costs one clock read and one compare-and-swap.
	deadlineRead, hasDeadline := false, false
	var deadline int64 // the context's deadline on the buckets' clock
	for {
		b := l.b.Load()
		if b == nil {
			return nil // made unlimited meanwhile
		}
		now := l.now()
		limit := int64(0)
		switch {
		case !deadlineRead:
		case hasDeadline:
			limit = deadline - now
		default:
			limit = math.MaxInt64
		}
		w, taken, retired := b.reserve(now, limit)
		switch {
		case retired:
			runtime.Gosched() // an Update is publishing the next bucket
		case taken && w <= 0:
			return nil
		case taken:
			return l.sleep(ctx, req, time.Duration(w))
		case w == math.MaxInt64:
			return errors.New("switchboard: rate limit: too many attempts already wait for tokens (the wait would end in over a century)")
		case deadlineRead:
			return fmt.Errorf("switchboard: rate limit wait of %v would pass the context deadline: %w", time.Duration(w), context.DeadlineExceeded)
		default:
			deadlineRead = true
			if dl, ok := ctx.Deadline(); ok {
				hasDeadline, deadline = true, int64(dl.Sub(l.epoch))
			}
		}
	}
}

// sleep waits d for the token req reserved, or gives it back when ctx ends
// first.
func (l *RateLimit) sleep(ctx context.Context, req *http.Request, d time.Duration) error {
	timer := time.NewTimer(d)
	select {
	case <-timer.C:
	case <-ctx.Done():
		timer.Stop()
		l.giveBack()
		return fmt.Errorf("switchboard: waiting for the rate limiter: %w", ctx.Err())
	}
	if l.ev.on(ctx, slog.LevelDebug) {
		l.ev.Emit(ctx, slog.LevelDebug, Event{
			Name:   EventRateLimitWaited,
			Method: req.Method,
			URL:    RedactURL(req.URL),
			Host:   hostOf(req),
			Delay:  d,
		})
	}
	return nil
}

// giveBack returns the token of a wait that ended early to the current
// bucket (its successor, if an Update replaced the one it came from).
func (l *RateLimit) giveBack() {
	for {
		b := l.b.Load()
		if b == nil || b.giveBack() {
			return
		}
		runtime.Gosched() // an Update is publishing the next bucket
	}
}
