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

// TestBulkheadWaitCutByDeadlineIsNotABreakerFailure guards the defect where
// a call that timed out while waiting for a bulkhead slot counted as a
// backend failure: two calls queued behind a held slot until the total
// timeout fired opened a threshold-2 breaker, though the backend answered
// 200 to everything it received. The cut wait is a local rejection: its
// error matches ErrBulkheadFull and context.DeadlineExceeded, and the
// breaker counts it as neither.
func TestBulkheadWaitCutByDeadlineIsNotABreakerFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		backend := fakert.New(fakert.Step{Body: "ok"})
		br := middleware.NewBreaker(bkSettings(func(s *middleware.BreakerSettings) { s.FailureThreshold = 2 }), middleware.BreakerOptions{})
		bh := middleware.NewBulkhead(middleware.BulkheadSettings{MaxConcurrent: 1, MaxWait: time.Minute}, middleware.BulkheadOptions{})
		rt := middleware.Chain(middleware.Timeout(100*time.Millisecond, middleware.TimeoutOptions{}), br.Middleware(), bh.Middleware())(backend)

		held, err := rt.RoundTrip(newReq(t, context.Background(), http.MethodGet, "")) // its open body holds the slot
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			start := time.Now()
			_, err := rt.RoundTrip(newReq(t, context.Background(), http.MethodGet, ""))
			if !errors.Is(err, middleware.ErrBulkheadFull) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("queued call %d: got %v, want an error matching ErrBulkheadFull and context.DeadlineExceeded", i+1, err)
			}
			if got := middleware.Classify(nil, nil, err); got != middleware.OutcomeRejected {
				t.Errorf("queued call %d: Classify = %v, want rejected", i+1, got)
			}
			if took := time.Since(start); took != 100*time.Millisecond {
				t.Errorf("queued call %d waited %v, want the 100ms timeout", i+1, took)
			}
		}
		if st := br.State(); st != middleware.BreakerClosed {
			t.Fatalf("breaker after two calls cut while queued: got %v, want closed (the backend answered 200 to everything)", st)
		}
		held.Body.Close()
		resp, err := rt.RoundTrip(newReq(t, context.Background(), http.MethodGet, ""))
		if err != nil {
			t.Fatalf("a call once the slot is free: %v", err)
		}
		readAll(t, resp)
		if got := backend.Calls(); got != 2 {
			t.Errorf("backend saw %d calls, want 2", got)
		}
	})
}

// TestBulkheadQueueingInAGroupLeavesTheSharedAdaptiveProbabilityAlone
// guards the defect where, in a circuit_breaker.group, one member's calls
// cut while queued for its bulkhead counted as backend failures in the
// shared adaptive breaker and raised the rejection probability for every
// member. One Breaker shared by two layers (two clients of a group), the
// first with a bulkhead of one slot: its queued calls change no count.
func TestBulkheadQueueingInAGroupLeavesTheSharedAdaptiveProbabilityAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		always := func() float64 { return 0 } // rejects whenever the probability is above 0
		br := middleware.NewBreaker(adaptiveSettings(2), middleware.BreakerOptions{Rand: always})
		backend := fakert.New(fakert.Step{Body: "ok"})
		bh := middleware.NewBulkhead(middleware.BulkheadSettings{MaxConcurrent: 1, MaxWait: time.Minute}, middleware.BulkheadOptions{})
		timeout := middleware.Timeout(100*time.Millisecond, middleware.TimeoutOptions{})
		queued := middleware.Chain(timeout, br.MiddlewareFor(nil), bh.Middleware())(backend)
		other := middleware.Chain(timeout, br.MiddlewareFor(nil))(backend)

		held, err := queued.RoundTrip(newReq(t, context.Background(), http.MethodGet, ""))
		if err != nil {
			t.Fatal(err)
		}
		defer held.Body.Close()
		for i := range 3 {
			if _, err := queued.RoundTrip(newReq(t, context.Background(), http.MethodGet, "")); !errors.Is(err, middleware.ErrBulkheadFull) {
				t.Errorf("queued call %d: got %v, want an error matching ErrBulkheadFull", i+1, err)
			}
		}
		if p := br.Probabilities()[""]; p != 0 {
			t.Fatalf("shared rejection probability after one member's queueing: got %v, want 0", p)
		}
		resp, err := other.RoundTrip(newReq(t, context.Background(), http.MethodGet, ""))
		if err != nil {
			t.Fatalf("the other member's call: got %v, want it admitted", err)
		}
		readAll(t, resp)
	})
}

// TestCircuitOpenBelowRetryIsNotRetried: a breaker's rejection is local
// back-pressure, like a full bulkhead, so Retry does not retry it (it used
// to, as a transport error, until its attempts ran out); a rejection of a
// retry gives back the backend's previous answer, not the refusal.
func TestCircuitOpenBelowRetryIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		backend := fakert.New(fakert.Step{Status: 503, Body: "down"})
		br := middleware.NewBreaker(bkSettings(func(s *middleware.BreakerSettings) { s.FailureThreshold = 1 }), middleware.BreakerOptions{})
		rt := middleware.Chain(middleware.Retry(fixedSettings(), middleware.RetryOptions{}), br.Middleware())(backend)
		start := time.Now()
		resp, err := rt.RoundTrip(newReq(t, context.Background(), http.MethodGet, ""))
		if err != nil {
			t.Fatalf("got %v, want the backend's 503", err)
		}
		if body := readAll(t, resp); resp.StatusCode != 503 || body != "down" {
			t.Fatalf("got %d %q, want 503 \"down\"", resp.StatusCode, body)
		}
		if took := time.Since(start); took != time.Second {
			t.Errorf("took %v, want 1s: one backoff, then the rejected retry ends the call", took)
		}
		if got := backend.Calls(); got != 1 {
			t.Errorf("backend saw %d calls, want 1", got)
		}

		// Retry's own view: a rejection is returned at once.
		calls := 0
		open := middleware.RoundTripperFunc(func(*http.Request) (*http.Response, error) {
			calls++
			return nil, &middleware.CircuitOpenError{RetryIn: time.Second}
		})
		_, err = middleware.Retry(fixedSettings(), middleware.RetryOptions{})(open).RoundTrip(newReq(t, context.Background(), http.MethodGet, ""))
		if !errors.Is(err, middleware.ErrCircuitOpen) || calls != 1 {
			t.Errorf("got %v after %d attempts, want ErrCircuitOpen after 1", err, calls)
		}
	})
}

// TestRateLimitWaitEndedByDeadlineIsARejection: a wait for a token that a
// deadline ends (here, one already passed) is a local rejection, matching
// ErrRateLimited and context.DeadlineExceeded; a cancellation is the
// caller's and matches context.Canceled alone.
func TestRateLimitWaitEndedByDeadlineIsARejection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := middleware.NewRateLimit(middleware.RateLimitSettings{RequestsPerSecond: 1, Burst: 1}, middleware.RateLimitOptions{})
		rt := lim.Middleware()(fakert.New())
		resp, err := rt.RoundTrip(newReq(t, context.Background(), http.MethodGet, "")) // the one token
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)

		ctx, cancel := context.WithDeadline(context.Background(), time.Now())
		defer cancel()
		req := newReq(t, ctx, http.MethodGet, "")
		_, err = rt.RoundTrip(req)
		if !errors.Is(err, middleware.ErrRateLimited) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("deadline: got %v, want an error matching ErrRateLimited and context.DeadlineExceeded", err)
		}
		if got := middleware.Classify(req, nil, err); got != middleware.OutcomeRejected {
			t.Errorf("deadline: Classify = %v, want rejected", got)
		}

		ctx, cancel = context.WithCancel(context.Background())
		cancel()
		req = newReq(t, ctx, http.MethodGet, "")
		_, err = rt.RoundTrip(req)
		if !errors.Is(err, context.Canceled) || errors.Is(err, middleware.ErrRateLimited) {
			t.Fatalf("cancelled: got %v, want an error matching context.Canceled only", err)
		}
		if got := middleware.Classify(req, nil, err); got != middleware.OutcomeCallerGone {
			t.Errorf("cancelled: Classify = %v, want caller_gone", got)
		}
	})
}
