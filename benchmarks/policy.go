package benchmarks

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"
)

// The one policy every stack is configured to, as far as each library can
// express it (the README's Performance section lists where they differ).
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
