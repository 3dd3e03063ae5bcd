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

// ErrRateLimited is matched, with errors.Is, by the error of an attempt
// that a RateLimit refused because its wait for a token could not end
// before the deadline it runs under (the attempt's, the call's or the
// caller's), or that such a deadline ended. It is found through the
// *url.Error that http.Client wraps around it. Retry does not retry it,
// and a Breaker counts it as neither a success nor a failure: it is local
// back-pressure, not a backend failure (see Classify).
var ErrRateLimited = errors.New("rate limit exceeded")

// RateLimitOptions are the code-only options of NewRateLimit. The zero
// value emits no events. NewRateLimit copies it.
type RateLimitOptions struct {
	// Events receives EventRateLimitWaited at slog.LevelDebug after every
	// attempt that waited for a token; nil means no events.
	Events *Events
}

// RateLimit paces the attempts of a client with a token bucket, a
// golang.org/x/time/rate.Limiter: the bucket holds up to Burst tokens,
// refills at RequestsPerSecond, and every attempt takes one, waiting for it
// when the bucket is empty. It sits inside Retry, so retries are paced too.
// Waits are the limiter's reservations: an attempt whose wait ends early
// (its context ended) cancels its reservation, which gives back only the
// tokens that no later reservation has consumed, so a cancelled waiter
// never lets a later one through sooner than the rate allows.
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
	// lim is the bucket; nil while unlimited. Update retunes it in place
	// and replaces it only when a finite rate follows an unlimited spell.
	lim atomic.Pointer[rate.Limiter]
	mu  sync.Mutex // serializes Update
}

// NewRateLimit returns a RateLimit with the settings s, its bucket full; the
// zero RateLimitSettings make it unlimited. The RateLimit is safe for
// concurrent use.
func NewRateLimit(s RateLimitSettings, o RateLimitOptions) *RateLimit {
	l := &RateLimit{ev: o.Events}
	l.Update(s)
	return l
}

// Update retunes the limiter in place with SetLimitAt and SetBurstAt: the
// tokens in the bucket are kept (capped at the new Burst) and refill at
// the new rate from now on. Attempts already waiting keep the wait they
// were given. Setting RequestsPerSecond to zero makes the layer unlimited
// at once; a finite rate set after that starts with a full bucket, as the
// unlimited layer had, in effect, any number of tokens. It is safe for
// concurrent use.
func (l *RateLimit) Update(s RateLimitSettings) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s.RequestsPerSecond <= 0 {
		l.lim.Store(nil)
		return
	}
	r, burst := rate.Limit(s.RequestsPerSecond), max(s.Burst, 1)
	lim := l.lim.Load()
	if lim == nil {
		l.lim.Store(rate.NewLimiter(r, burst))
		return
	}
	now := time.Now()
	lim.SetBurstAt(now, burst)
	lim.SetLimitAt(now, r)
}

// Tokens returns how many tokens the bucket holds now (Limiter.TokensAt),
// +Inf when the layer is unlimited. It is negative while attempts wait for
// tokens they have reserved. It is safe for concurrent use.
func (l *RateLimit) Tokens() float64 {
	lim := l.lim.Load()
	if lim == nil {
		return math.Inf(1)
	}
	return lim.TokensAt(time.Now())
}

// Middleware returns the rate limit layer: every attempt takes a token, so it
// sits inside Retry. Every RoundTripper it returns shares l's bucket and is
// safe for concurrent use.
//
// A wait that cannot end before the request context's deadline is not
// started: RoundTrip cancels the reservation and returns at once an error
// matching ErrRateLimited. A wait ends early when the request context ends,
// and cancels its reservation: ended by a deadline, with an error matching
// both ErrRateLimited and context.DeadlineExceeded (no token came in time:
// a local rejection); cancelled, with an error matching the context's
// error alone (errors.Is(err, context.Canceled): the caller is gone). After a wait the layer
// emits EventRateLimitWaited with the wait as Delay; an attempt that did
// not wait emits nothing.
//
// It keeps the RoundTripper contract: it passes the caller's request on
// unchanged and closes the request body when it returns an error without
// passing the request on.
func (l *RateLimit) Middleware() Middleware { return l.MiddlewareFor(l.ev) }

// MiddlewareFor is Middleware for one of several clients that share the
// limiter (a rate_limit.group): the layer's events go to ev, which names
// the client and the group, instead of the limiter's own. Its tokens are
// the limiter's, shared by every layer made from it. A nil ev emits
// nothing.
func (l *RateLimit) MiddlewareFor(ev *Events) Middleware {
	return func(next http.RoundTripper) http.RoundTripper {
		return &rateLimitRT{l: l, next: next, ev: ev}
	}
}

// rateLimitRT is the RoundTripper of RateLimit.Middleware.
type rateLimitRT struct {
	l    *RateLimit
	next http.RoundTripper
	ev   *Events
}

func (t *rateLimitRT) RoundTrip(req *http.Request) (*http.Response, error) {
	if lim := t.l.lim.Load(); lim != nil {
		if err := t.l.wait(lim, req, t.ev); err != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, err
		}
	}
	return t.next.RoundTrip(req)
}

// wait takes a token of lim for req, waiting for it if need be.
func (l *RateLimit) wait(lim *rate.Limiter, req *http.Request, ev *Events) error {
	now := time.Now()
	// AllowN takes a free token without allocating; ReserveN (one
	// allocation, the *Reservation) only when the attempt must wait.
	if lim.AllowN(now, 1) {
		return nil
	}
	ctx := req.Context()
	if ctx.Err() != nil {
		return l.cut(ctx, lim, 0)
	}
	r := lim.ReserveN(now, 1)
	d := r.DelayFrom(now)
	dl, hasDeadline := ctx.Deadline()
	if !r.OK() || d == rate.InfDuration || hasDeadline && !now.Add(d).Before(dl) {
		r.CancelAt(now) // gives back the token: no later reservation exists yet
		return refused(lim, d, dl.Sub(now), hasDeadline)
	}
	if d <= 0 {
		return nil // a token came between AllowN and ReserveN
	}
	timer := time.NewTimer(d)
	select {
	case <-timer.C:
	case <-ctx.Done():
		timer.Stop()
		r.CancelAt(time.Now())
		return l.cut(ctx, lim, d)
	}
	if ev.on(ctx, slog.LevelDebug) {
		ev.Emit(ctx, slog.LevelDebug, Event{
			Name:   EventRateLimitWaited,
			Method: req.Method,
			URL:    RedactURL(req.URL),
			Host:   hostOf(req),
			Delay:  d,
		})
	}
	return nil
}

// cut returns the error of a wait of d for a token of lim that ctx ended
// (before it began, for d 0): one matching both ErrRateLimited and
// context.DeadlineExceeded when a deadline ended it, as when the wait is
// refused up front (a local rejection, whoever set the deadline), and the
// context's error alone when a cancellation did (the caller is gone).
func (l *RateLimit) cut(ctx context.Context, lim *rate.Limiter, d time.Duration) error {
	if waitRejected(ctx) {
		why := "the deadline had passed when the attempt came for a token"
		if d > 0 {
			why = fmt.Sprintf("a deadline ended the wait of %v for a token", d)
		}
		return fmt.Errorf("switchboard: %w: %s (requests_per_second %g, burst %d): %w",
			ErrRateLimited, why, float64(lim.Limit()), lim.Burst(), ctx.Err())
	}
	return fmt.Errorf("switchboard: waiting for the rate limiter: %w", ctx.Err())
}

// refused builds the ErrRateLimited error of a wait of d that was not
// started because it would have ended at or after the deadline, left away.
func refused(lim *rate.Limiter, d, left time.Duration, hasDeadline bool) error {
	why := "no token can come within any wait"
	if d != rate.InfDuration && hasDeadline {
		why = fmt.Sprintf("the next token is %v away, the deadline %v", d, max(left, 0))
	}
	return fmt.Errorf("switchboard: %w: %s (requests_per_second %g, burst %d)",
		ErrRateLimited, why, float64(lim.Limit()), lim.Burst())
}
