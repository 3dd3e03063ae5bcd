package benchmarks

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"time"
)

// The one policy every stack is configured to, as far as each library can
// express it (docs/performance.md lists where they differ).
const (
	// MaxRetries is how many retries follow a failed first attempt.
	MaxRetries = 3
	// BaseBackoff is the delay before the first retry; each further retry
	// doubles it, up to MaxBackoff. Tiny on purpose: 503-then-200 must
	// measure the libraries, not sleeping.
	BaseBackoff = time.Microsecond
	// MaxBackoff caps every delay.
	MaxBackoff = time.Millisecond
	// FailureThreshold is how many failures in a row open a breaker.
	FailureThreshold = 5
	// Cooldown is how long an open breaker rejects calls.
	Cooldown = 30 * time.Second
	// maxDrain bounds how much of a superseded body is read before Close.
	maxDrain = 64 << 10
)

// Policy is the resilience policy a stack is configured to, as far as its
// library can express it. The benchmarks use BenchPolicy (tiny backoffs, so
// that they measure the libraries, not sleeping); the scenarios use
// switchboard's built-in retry schedule (see the scenario package).
type Policy struct {
	// MaxRetries is how many retries follow a failed first attempt.
	MaxRetries int
	// InitialBackoff caps the delay before the first retry; each further
	// retry doubles the cap, up to MaxBackoff. Zero means no delay.
	InitialBackoff, MaxBackoff time.Duration
	// FullJitter draws each delay uniformly in [0, cap] (switchboard's
	// default, "full jitter"); false waits the cap itself.
	FullJitter bool
	// FailureThreshold is how many failed logical calls in a row open a
	// breaker, where the stack has one.
	FailureThreshold int
	// Cooldown is how long an open breaker rejects calls before a probe.
	Cooldown time.Duration
}

// BenchPolicy is the benchmarks' policy with backoff as the first retry's
// delay: MaxRetries, doubling up to MaxBackoff, no jitter, a breaker of
// FailureThreshold and Cooldown.
func BenchPolicy(backoff time.Duration) Policy {
	return Policy{
		MaxRetries: MaxRetries, InitialBackoff: backoff, MaxBackoff: MaxBackoff,
		FailureThreshold: FailureThreshold, Cooldown: Cooldown,
	}
}

// Delay returns the delay before retry n (1-based) under p: its cap
// InitialBackoff·2^(n-1), at most MaxBackoff, or a uniform draw below the
// cap with FullJitter.
func (p Policy) Delay(n int) time.Duration {
	n = min(max(n, 1), 31)
	c := p.InitialBackoff
	for i := 1; i < n && c < p.MaxBackoff; i++ {
		c *= 2
	}
	c = min(c, p.MaxBackoff)
	if p.FullJitter {
		return fullJitter(c)
	}
	return c
}

// fullJitter returns a uniform draw in [0, d].
func fullJitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return rand.N(d + 1)
}

// Retryable is the shared retry decision: a transport error that is not a
// cancellation or deadline of the caller, or status 429, 502, 503 or 504.
// Exactly one of resp and err is non-nil.
func Retryable(resp *http.Response, err error) bool {
	if err != nil {
		return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// BreakerFailure is the shared breaker decision: a transport error or a
// status of 500 or more.
func BreakerFailure(resp *http.Response, err error) bool {
	return err != nil || resp == nil || resp.StatusCode >= http.StatusInternalServerError
}

// Backoff returns the delay before retry n (1-based): base·2^(n-1), at
// most MaxBackoff, without jitter. A zero base means no delay at all.
func Backoff(base time.Duration, n int) time.Duration {
	if n < 1 {
		n = 1
	}
	if n > 20 {
		return min(base<<20, MaxBackoff)
	}
	return min(base<<(n-1), MaxBackoff)
}

// drain reads a little of a superseded response's body and closes it, so
// that its connection can be reused.
func drain(resp *http.Response) {
	if resp == nil || resp.Body == nil {
		return
	}
	_, _ = io.CopyN(io.Discard, resp.Body, maxDrain)
	_ = resp.Body.Close()
}
