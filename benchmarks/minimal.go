package benchmarks

import (
	"errors"
	"net/http"
	"time"

	"github.com/sony/gobreaker/v2"
)

// errServerStatus marks a response that gobreaker must count as a failure
// (gobreaker judges errors only); it never leaves RoundTrip.
var errServerStatus = errors.New("benchmarks: server error status")

// minimalRT is the baseline of the comparison: the least code that gives
// the policy, a retry loop with exponential backoff inside a consecutive-
// failure gobreaker (one outcome per logical call, as switchboard counts).
// It sends the caller's request itself on the first attempt and a shallow
// copy with a fresh body (GetBody) on each retry. Safe for concurrent use.
type minimalRT struct {
	next    http.RoundTripper
	backoff time.Duration // the first retry's delay; 0: none
	cb      *gobreaker.CircuitBreaker[*http.Response]
}

func newMinimal(next http.RoundTripper, backoff time.Duration) *minimalRT {
	return &minimalRT{next: next, backoff: backoff, cb: gobreaker.NewCircuitBreaker[*http.Response](gobreaker.Settings{
		Name:        "minimal",
		MaxRequests: 1,
		Timeout:     Cooldown,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= FailureThreshold },
	})}
}

func (m *minimalRT) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := m.cb.Execute(func() (*http.Response, error) {
		resp, err := m.retry(req)
		if err == nil && BreakerFailure(resp, nil) {
			return resp, errServerStatus
		}
		return resp, err
	})
	if err == errServerStatus {
		err = nil
	}
	return resp, err
}

func (m *minimalRT) retry(req *http.Request) (*http.Response, error) {
	ctx, r := req.Context(), req
	var timer *time.Timer
	for n := 1; ; n++ {
		resp, err := m.next.RoundTrip(r)
		replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
		if n > MaxRetries || !replayable || ctx.Err() != nil || !Retryable(resp, err) {
			return resp, err
		}
		drain(resp)
		if d := Backoff(m.backoff, n); d > 0 {
			if timer == nil {
				timer = time.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			select {
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
				return nil, ctx.Err()
			}
		}
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			r = new(http.Request)
			*r = *req
			r.Body = body
		}
	}
}
