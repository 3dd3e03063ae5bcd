package middleware

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// RateLimit paces the attempts of a client with a token bucket
// (golang.org/x/time/rate): the bucket holds up to Burst tokens, refills at
// RequestsPerSecond, and every attempt takes one, waiting for it when the
// bucket is empty. It sits inside Retry, so retries are paced too.
//
// A RequestsPerSecond of zero (or less) means unlimited: the layer passes
// requests through at the cost of one atomic load. A Burst below 1 with a
// finite rate is taken as 1.
//
// The settings can be retuned with Update while requests are in flight; the
// tokens in the bucket are kept. A RateLimit is created with NewRateLimit
// (the zero value is not usable) and is safe for concurrent use.
type RateLimit struct {
	ev *Events
	// lim is the bucket; nil while unlimited. A finite limiter is retuned in
	// place; it is never set to rate.Inf, whose bookkeeping would lose the
	// token count.
	lim atomic.Pointer[rate.Limiter]
	mu  sync.Mutex // serializes Update
}

// NewRateLimit returns a RateLimit with the settings s, its bucket full; the
// zero RateLimitSettings make it unlimited. Waits are emitted as
// EventRateLimitWaited at slog.LevelDebug to ev; a nil ev emits nothing.
// The RateLimit is safe for concurrent use.
func NewRateLimit(s RateLimitSettings, ev *Events) *RateLimit {
	l := &RateLimit{ev: ev}
	l.Update(s)
	return l
}

// Update retunes the limiter in place: the tokens in the bucket are kept
// (capped at the new Burst) and refill at the new rate from now on.
// Attempts already waiting keep the wait they were given. Setting
// RequestsPerSecond to zero makes the layer unlimited at once; a finite rate
// set after that starts with a full bucket, as the unlimited layer had, in
// effect, any number of tokens. It is safe for concurrent use.
func (l *RateLimit) Update(s RateLimitSettings) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s.RequestsPerSecond <= 0 {
		l.lim.Store(nil)
		return
	}
	limit, burst := rate.Limit(s.RequestsPerSecond), max(s.Burst, 1)
	lim := l.lim.Load()
	if lim == nil {
		l.lim.Store(rate.NewLimiter(limit, burst))
		return
	}
	now := time.Now()
	lim.SetLimitAt(now, limit)
	lim.SetBurstAt(now, burst)
}

// Tokens returns how many tokens the bucket holds now, +Inf when the layer
// is unlimited. It is negative while attempts wait for tokens they have
// reserved. It is safe for concurrent use.
func (l *RateLimit) Tokens() float64 {
	lim := l.lim.Load()
	if lim == nil {
		return math.Inf(1)
	}
	return lim.Tokens()
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
	if lim := t.l.lim.Load(); lim != nil {
		if err := t.l.wait(lim, req); err != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, err
		}
	}
	return t.next.RoundTrip(req)
}

// wait takes a token from lim for req, waiting for it if need be.
func (l *RateLimit) wait(lim *rate.Limiter, req *http.Request) error {
	now := time.Now()
	// AllowN does not allocate; ReserveN does, so it is kept for the wait.
	if lim.AllowN(now, 1) {
		return nil
	}
	r := lim.ReserveN(now, 1)
	if !r.OK() { // cannot happen with burst >= 1; kept for safety
		return errors.New("switchboard: rate limiter cannot grant a token")
	}
	d := r.DelayFrom(now)
	if d <= 0 {
		return nil
	}
	ctx := req.Context()
	if dl, ok := ctx.Deadline(); ok && d > dl.Sub(now) {
		r.CancelAt(now)
		return fmt.Errorf("switchboard: rate limit wait of %v would pass the context deadline: %w", d, context.DeadlineExceeded)
	}
	timer := time.NewTimer(d)
	select {
	case <-timer.C:
	case <-ctx.Done():
		timer.Stop()
		r.Cancel()
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
