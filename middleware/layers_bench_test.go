package middleware_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/middleware"
)

// The per-layer benchmarks of the layers that have none elsewhere (retry,
// timeout, budget, bulkhead, rate limit and breaker have theirs beside their
// tests), and the whole chain. All run over prebuilt(), whose responses
// have a body that is not http.NoBody, as real ones have; compare each with
// BenchmarkBare.

// BenchmarkHeaders measures the headers layer when it has a header to add
// (it copies the request and its header map) and when the caller already set
// it (it passes the request on).
func BenchmarkHeaders(b *testing.B) {
	rt := middleware.Headers(map[string]string{"User-Agent": "bench/1"}, middleware.HeadersOptions{})(prebuilt())
	b.Run("add", func(b *testing.B) { benchRT(b, rt) })
	b.Run("present", func(b *testing.B) {
		req, _ := http.NewRequest(http.MethodGet, "http://svc.test/v1/items", nil)
		req.Header.Set("User-Agent", "caller/1")
		serialRT(b, rt, req)
	})
}

// BenchmarkLogging measures the logging layer when its level is not enabled
// on the logger (the Enabled check only) and when every attempt is logged
// to a text handler writing to io.Discard.
func BenchmarkLogging(b *testing.B) {
	b.Run("disabled", func(b *testing.B) {
		ev := &middleware.Events{Client: "svc", Logger: slog.New(slog.DiscardHandler)}
		benchRT(b, middleware.Logging(middleware.LoggingSettings{Level: middleware.LogDebug}, middleware.LoggingOptions{Events: ev})(prebuilt()))
	})
	b.Run("enabled", func(b *testing.B) {
		h := slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug})
		ev := &middleware.Events{Client: "svc", Logger: slog.New(h)}
		benchRT(b, middleware.Logging(middleware.LoggingSettings{Level: middleware.LogDebug}, middleware.LoggingOptions{Events: ev})(prebuilt()))
	})
}

// BenchmarkAttemptTimeout measures the per-attempt deadline layer alone.
func BenchmarkAttemptTimeout(b *testing.B) {
	benchRT(b, middleware.AttemptTimeout(10*time.Second, middleware.TimeoutOptions{})(prebuilt()))
}

// BenchmarkChain measures whole pipelines built as the factory builds them,
// outermost first, without the registry and *http.Client around them:
//
//   - all: every layer on except the total timeout: breaker (consecutive),
//     bulkhead and rate limit too large to bind, retry with its budget,
//     logging at a level its logger does not enable;
//   - defaults: the built-in defaults: 30s total timeout, retry with its
//     budget, logging at a level its logger does not enable.
func BenchmarkChain(b *testing.B) {
	ev := &middleware.Events{Client: "svc", Logger: slog.New(slog.DiscardHandler)}
	retry := middleware.DefaultRetrySettings()
	b.Run("all", func(b *testing.B) {
		breaker := middleware.DefaultBreakerSettings()
		breaker.Enabled = true
		chain := middleware.Chain(
			middleware.Timeout(0, middleware.TimeoutOptions{Events: ev}),
			middleware.NewBreaker(breaker, middleware.BreakerOptions{Events: ev}).Middleware(),
			middleware.NewBulkhead(middleware.BulkheadSettings{MaxConcurrent: 1 << 20}, middleware.BulkheadOptions{Events: ev}).Middleware(),
			middleware.Retry(retry, middleware.RetryOptions{Budget: middleware.NewBudget(retry.Budget, middleware.BudgetOptions{}), Events: ev, ReadOnlyBelow: true}),
			middleware.AttemptTimeout(0, middleware.TimeoutOptions{Events: ev}),
			middleware.NewRateLimit(middleware.RateLimitSettings{RequestsPerSecond: 1e9, Burst: 1 << 20}, middleware.RateLimitOptions{Events: ev}).Middleware(),
			middleware.Headers(nil, middleware.HeadersOptions{}),
			middleware.Logging(middleware.LoggingSettings{Level: middleware.LogDebug}, middleware.LoggingOptions{Events: ev}),
		)
		benchRT(b, chain(prebuilt()))
	})
	b.Run("defaults", func(b *testing.B) {
		chain := middleware.Chain(
			middleware.Timeout(30*time.Second, middleware.TimeoutOptions{Events: ev}),
			middleware.Retry(retry, middleware.RetryOptions{Budget: middleware.NewBudget(retry.Budget, middleware.BudgetOptions{}), Events: ev, ReadOnlyBelow: true}),
			middleware.AttemptTimeout(0, middleware.TimeoutOptions{Events: ev}),
			middleware.Headers(nil, middleware.HeadersOptions{}),
			middleware.Logging(middleware.LoggingSettings{Level: middleware.LogDebug}, middleware.LoggingOptions{Events: ev}),
		)
		benchRT(b, chain(prebuilt()))
	})
}

// BenchmarkLayersAdded builds the "all" chain of BenchmarkChain one layer
// at a time, innermost first, so that each sub-benchmark's ns/op minus the
// previous one's is what that layer adds to a successful call. Serial only:
// the differences are what it is for.
func BenchmarkLayersAdded(b *testing.B) {
	ev := &middleware.Events{Client: "svc", Logger: slog.New(slog.DiscardHandler)}
	retry := middleware.DefaultRetrySettings()
	breaker := middleware.DefaultBreakerSettings()
	breaker.Enabled = true
	layers := []struct {
		name string
		mw   middleware.Middleware
	}{
		{"logging", middleware.Logging(middleware.LoggingSettings{Level: middleware.LogDebug}, middleware.LoggingOptions{Events: ev})},
		{"headers", middleware.Headers(nil, middleware.HeadersOptions{})},
		{"ratelimit", middleware.NewRateLimit(middleware.RateLimitSettings{RequestsPerSecond: 1e9, Burst: 1 << 20}, middleware.RateLimitOptions{Events: ev}).Middleware()},
		{"attempt-timeout", middleware.AttemptTimeout(0, middleware.TimeoutOptions{Events: ev})},
		{"retry", middleware.Retry(retry, middleware.RetryOptions{Budget: middleware.NewBudget(retry.Budget, middleware.BudgetOptions{}), Events: ev, ReadOnlyBelow: true})},
		{"bulkhead", middleware.NewBulkhead(middleware.BulkheadSettings{MaxConcurrent: 1 << 20}, middleware.BulkheadOptions{Events: ev}).Middleware()},
		{"breaker", middleware.NewBreaker(breaker, middleware.BreakerOptions{Events: ev}).Middleware()},
		{"timeout-off", middleware.Timeout(0, middleware.TimeoutOptions{Events: ev})},
		{"redact-errors", middleware.RedactErrors()},
	}
	req, _ := http.NewRequest(http.MethodGet, "http://svc.test/v1/items", nil)
	rt := prebuilt()
	for i, l := range layers {
		rt = middleware.Chain(l.mw)(rt)
		b.Run(fmt.Sprintf("%d-%s", i+1, l.name), func(b *testing.B) { serialRT(b, rt, req) })
	}
}

// TestRetryReadOnlyBelowAllocatesNothingOnSuccess: a GET that succeeds at
// once costs Retry no allocation with ReadOnlyBelow (it was the three of
// a Request.Clone).
func TestRetryReadOnlyBelowAllocatesNothingOnSuccess(t *testing.T) {
	req, _ := http.NewRequest(http.MethodGet, "http://svc.test/v1/items", nil)
	allocs := func(rt http.RoundTripper) float64 {
		return testing.AllocsPerRun(200, func() {
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		})
	}
	bare := allocs(prebuilt())
	retry := middleware.DefaultRetrySettings()
	budget := middleware.NewBudget(retry.Budget, middleware.BudgetOptions{})
	got := allocs(middleware.Retry(retry, middleware.RetryOptions{Budget: budget, ReadOnlyBelow: true})(prebuilt()))
	if got != bare {
		t.Errorf("retry with ReadOnlyBelow: %v allocs per call, bare %v: want none added", got, bare)
	}
}

// TestChainAllocationsOverBare: the chains of BenchmarkChain, built as the
// factory builds them for a client without attempt middleware, allocate
// per successful GET at most their targets over the transport alone:
// retry + breaker 1 (it is 0: no layer copies the request), the defaults
// 5 (the total timeout's context.WithDeadlineCause, 4, and the
// Request.WithContext that carries it). Each attempt used to be a
// Request.Clone, 3 more.
func TestChainAllocationsOverBare(t *testing.T) {
	req, _ := http.NewRequest(http.MethodGet, "http://svc.test/v1/items", nil)
	allocs := func(rt http.RoundTripper) float64 {
		return testing.AllocsPerRun(200, func() {
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		})
	}
	ev := &middleware.Events{Client: "svc", Logger: slog.New(slog.DiscardHandler)}
	retry := middleware.DefaultRetrySettings()
	retryLayer := func() middleware.Middleware {
		return middleware.Retry(retry, middleware.RetryOptions{Budget: middleware.NewBudget(retry.Budget, middleware.BudgetOptions{}), Events: ev, ReadOnlyBelow: true})
	}
	breaker := middleware.DefaultBreakerSettings()
	breaker.Enabled = true
	bare := allocs(prebuilt())
	for _, tc := range []struct {
		name  string
		chain middleware.Middleware
		max   float64
	}{
		{"retry + breaker", middleware.Chain(
			middleware.Timeout(0, middleware.TimeoutOptions{Events: ev}),
			middleware.NewBreaker(breaker, middleware.BreakerOptions{Events: ev}).Middleware(),
			retryLayer(),
			middleware.AttemptTimeout(0, middleware.TimeoutOptions{Events: ev}),
			middleware.Headers(nil, middleware.HeadersOptions{}),
			middleware.Logging(middleware.LoggingSettings{Level: middleware.LogDebug}, middleware.LoggingOptions{Events: ev}),
		), 1},
		{"defaults", middleware.Chain(
			middleware.Timeout(30*time.Second, middleware.TimeoutOptions{Events: ev}),
			retryLayer(),
			middleware.AttemptTimeout(0, middleware.TimeoutOptions{Events: ev}),
			middleware.Headers(nil, middleware.HeadersOptions{}),
			middleware.Logging(middleware.LoggingSettings{Level: middleware.LogDebug}, middleware.LoggingOptions{Events: ev}),
		), 5},
	} {
		if got := allocs(tc.chain(prebuilt())) - bare; got > tc.max {
			t.Errorf("%s: %v allocations per call over the transport's %v, want at most %v", tc.name, got, bare, tc.max)
		}
	}
}
