package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/middleware"
)

// TestBulkheadFullLeavesBreakerClosed guards the review's finding: two
// ErrBulkheadFull rejections opened a threshold-2 breaker in front of a
// healthy backend for a whole cooldown. They count as neither success nor
// failure: the breaker stays closed, and a real failure before them is
// still counted after them.
func TestBulkheadFullLeavesBreakerClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newBk(bkSettings(func(s *middleware.BreakerSettings) { s.FailureThreshold = 2 }), middleware.BreakerOptions{})
		bh := middleware.NewBulkhead(middleware.BulkheadSettings{MaxConcurrent: 1}, middleware.BulkheadOptions{})
		h.rt = middleware.Chain(h.b.Middleware(), bh.Middleware())(h.f)

		h.calls(t, 1, 500) // one real failure: the count is 1 of 2
		gate := h.f.block()
		held := make(chan error)
		go func() { held <- h.do(t, context.Background(), "http://svc.test/") }()
		synctest.Wait() // the slot is taken
		for i := range 2 {
			if err := h.do(t, context.Background(), "http://svc.test/"); !errors.Is(err, middleware.ErrBulkheadFull) {
				t.Fatalf("call %d: got %v, want an error matching ErrBulkheadFull", i+1, err)
			}
		}
		h.wantState(t, middleware.BreakerClosed) // not failures
		close(gate)
		h.f.unblock()
		h.f.set(500)
		if err := <-held; err != nil {
			t.Fatal(err)
		}
		h.wantState(t, middleware.BreakerOpen) // nor successes: the held call's 500 is the second in a row
	})
}

// TestRateLimitedCallsLeaveBreakerClosed: refusals of the rate limit
// (ErrRateLimited) under the caller's deadline leave a threshold-2 breaker
// closed and are not retried.
func TestRateLimitedCallsLeaveBreakerClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newBk(bkSettings(func(s *middleware.BreakerSettings) { s.FailureThreshold = 2 }), middleware.BreakerOptions{})
		lim := middleware.NewRateLimit(middleware.RateLimitSettings{RequestsPerSecond: 1, Burst: 1}, middleware.RateLimitOptions{})
		h.rt = middleware.Chain(
			h.b.Middleware(),
			middleware.Retry(fixedSettings(), middleware.RetryOptions{}),
			lim.Middleware(),
		)(h.f)
		if err := h.call(t, 200); err != nil { // takes the one token
			t.Fatal(err)
		}
		for i := range 3 {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			start := time.Now()
			err := h.do(t, ctx, "http://svc.test/")
			cancel()
			if !errors.Is(err, middleware.ErrRateLimited) {
				t.Fatalf("call %d: got %v, want an error matching ErrRateLimited", i+1, err)
			}
			if took := time.Since(start); took != 0 {
				t.Errorf("call %d took %v, want 0: refused at once, not retried after a backoff", i+1, took)
			}
		}
		if got := h.f.count(); got != 1 {
			t.Errorf("backend saw %d calls, want 1", got)
		}
		h.wantState(t, middleware.BreakerClosed)
	})
}

// TestRateLimitedCallIsNotRetried: Retry returns ErrRateLimited at once,
// with no retry event and no budget withdrawn, although its attempts and
// the budget would allow a retry.
func TestRateLimitedCallIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev, rec := newEvents()
		budget := middleware.NewBudget(middleware.BudgetSettings{Ratio: 0, MinPerSecond: 1, TTL: 10 * time.Second}, middleware.BudgetOptions{})
		before := budget.Balance()
		lim := middleware.NewRateLimit(middleware.RateLimitSettings{RequestsPerSecond: 1, Burst: 1}, middleware.RateLimitOptions{})
		rt := fakert.New()
		pipeline := middleware.Chain(
			middleware.Timeout(500*time.Millisecond, middleware.TimeoutOptions{}),
			middleware.Retry(fixedSettings(), middleware.RetryOptions{Budget: budget, Events: ev}),
			lim.Middleware(),
		)(rt)
		resp, err := pipeline.RoundTrip(newReq(t, context.Background(), "GET", ""))
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)

		start := time.Now()
		_, err = pipeline.RoundTrip(newReq(t, context.Background(), "GET", ""))
		if !errors.Is(err, middleware.ErrRateLimited) {
			t.Fatalf("got %v, want an error matching ErrRateLimited", err)
		}
		var te *middleware.TimeoutError
		if errors.As(err, &te) {
			t.Errorf("got %v: a refusal is not the timeout's expiry", err)
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("took %v, want 0", took)
		}
		if n := len(rec.named(middleware.EventRetryAttempt)) + len(rec.named(middleware.EventRetryExhausted)); n != 0 {
			t.Errorf("got %d retry events, want none", n)
		}
		if got := budget.Balance(); got != before {
			t.Errorf("budget balance %v, want %v: nothing withdrawn", got, before)
		}
		if got := rt.Calls(); got != 1 {
			t.Errorf("backend saw %d calls, want 1", got)
		}
	})
}

// TestBulkheadFullIsNotRetried: a bulkhead below Retry (code may put one
// there) turns a call away with ErrBulkheadFull; Retry returns it at once.
func TestBulkheadFullIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		full := middleware.RoundTripperFunc(func(*http.Request) (*http.Response, error) {
			calls++
			return nil, fmt.Errorf("switchboard: %w (max_concurrent 1, waited 0s)", middleware.ErrBulkheadFull)
		})
		start := time.Now()
		_, err := middleware.Retry(fixedSettings(), middleware.RetryOptions{})(full).RoundTrip(newReq(t, context.Background(), "GET", ""))
		if !errors.Is(err, middleware.ErrBulkheadFull) {
			t.Fatalf("got %v, want an error matching ErrBulkheadFull", err)
		}
		if calls != 1 || time.Since(start) != 0 {
			t.Errorf("got %d attempts over %v, want 1 at once", calls, time.Since(start))
		}
	})
}

// A retry that the rate limit refuses (its token would come after the
// deadline) must not hide the backend's answer: the caller gets the 503
// the backend gave, with its body, and the breaker counts it, so a failing
// backend behind a tight limiter still opens the breaker. Before, the
// call ended with ErrRateLimited, which the breaker ignores.
func TestRateLimitedRetryReturnsTheBackendsAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		backend := fakert.New(fakert.Step{Status: 503, Body: "overloaded"})
		br := middleware.NewBreaker(bkSettings(func(s *middleware.BreakerSettings) { s.FailureThreshold = 2 }), middleware.BreakerOptions{})
		rl := middleware.NewRateLimit(middleware.RateLimitSettings{RequestsPerSecond: 1, Burst: 1}, middleware.RateLimitOptions{})
		retry := middleware.Retry(middleware.RetrySettings{MaxRetries: 2, RetryableStatus: []int{503}}, middleware.RetryOptions{})
		rt := middleware.Chain(middleware.Timeout(300*time.Millisecond, middleware.TimeoutOptions{}), br.Middleware(), retry, rl.Middleware())(backend)
		for i := range 2 {
			time.Sleep(2 * time.Second) // a fresh token for the first attempt of each call
			resp, err := rt.RoundTrip(newReq(t, context.Background(), http.MethodGet, ""))
			if err != nil {
				t.Fatalf("call %d: got %v, want the backend's 503", i+1, err)
			}
			body := readAll(t, resp)
			if resp.StatusCode != 503 || body != "overloaded" {
				t.Fatalf("call %d: got %d %q, want 503 \"overloaded\"", i+1, resp.StatusCode, body)
			}
		}
		if st := br.State(); st != middleware.BreakerOpen {
			t.Fatalf("breaker after two calls the backend failed: got %v, want open", st)
		}
	})
}
