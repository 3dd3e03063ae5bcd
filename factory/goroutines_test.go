package factory_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/middleware"
)

// traceKey is the context key of valueBase's span, as a tracing
// RoundTripper would store one.
type traceKey struct{}

// valueBase is a base RoundTripper shaped like otelhttp's Transport: it
// wraps the request context with context.WithValue, derives a cancelable
// context under it, and cancels that once the response body is closed. It
// answers in memory, so that no connection goroutine blurs the count.
type valueBase struct {
	peak   atomic.Int64 // highest runtime.NumGoroutine seen inside RoundTrip
	tagged atomic.Int64 // requests that carried an Idempotency-Key and an X-Timeout-Ms
}

func (b *valueBase) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := context.WithValue(req.Context(), traceKey{}, "span")
	ctx, cancel := context.WithCancel(ctx)
	req = req.WithContext(ctx)
	if req.Header.Get("Idempotency-Key") != "" && req.Header.Get("X-Timeout-Ms") != "" {
		b.tagged.Add(1)
	}
	for n := int64(runtime.NumGoroutine()); ; {
		if p := b.peak.Load(); n <= p || b.peak.CompareAndSwap(p, n) {
			break
		}
	}
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	body := &cancelBody{Reader: strings.NewReader("ok"), cancel: cancel}
	return &http.Response{
		StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Body: body, ContentLength: 2, Request: req,
	}, nil
}

// cancelBody cancels the request's context when closed, as otelhttp's body
// wrapper ends its span.
type cancelBody struct {
	*strings.Reader
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error { b.cancel(); return nil }

// goroutinesCreated returns the runtime's count of goroutines created so
// far, and false where the runtime does not report it (before Go 1.26).
func goroutinesCreated() (uint64, bool) {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0, false
	}
	return s[0].Value.Uint64(), true
}

// TestNoGoroutinePerRequestUnderAValueWrappingBase guards the trap of the
// hand-made deadline context: a Base that wraps the request context with
// context.WithValue and then derives a cancelable one (otelhttp does) cost
// a goroutine per request. With the timeout layers on the standard
// library's contexts no configuration starts one: 1,000 requests from 8
// workers, with timeout and attempt_timeout set, leave the goroutine count
// within a constant of the workers, and create no more goroutines than the
// workers themselves. Idempotency keys and the deadline header, on for
// every request in one case, start none either.
func TestNoGoroutinePerRequestUnderAValueWrappingBase(t *testing.T) {
	const workers, requests = 8, 1000
	withTimeouts := func(c *config.ClientConfig) {
		c.Timeout = 30 * time.Second
		c.Retry.AttemptTimeout = 10 * time.Second
	}
	tests := []struct {
		name   string
		setup  func(c *config.ClientConfig)
		hooks  factory.Hooks
		tagged bool // every request must reach the base with both headers
	}{
		{name: "timeouts", setup: withTimeouts},
		{name: "every layer", setup: func(c *config.ClientConfig) {
			withTimeouts(c)
			c.Headers = map[string]string{"User-Agent": "goroutine-test"}
			c.CircuitBreaker.Enabled = true
			c.Bulkhead = middleware.BulkheadSettings{MaxConcurrent: 64, MaxWait: time.Second}
			c.RateLimit = middleware.RateLimitSettings{RequestsPerSecond: 1e9, Burst: 1 << 20}
			c.Logging.Level = middleware.LogInfo
		}},
		{name: "idempotency key and deadline header", tagged: true, setup: func(c *config.ClientConfig) {
			withTimeouts(c)
			c.Retry.IdempotencyKey = middleware.IdempotencyKeySettings{Enabled: true, Methods: []string{"GET"}}
			c.Deadline = middleware.DeadlineSettings{Header: "X-Timeout-Ms"}
		}},
		{name: "adaptive bulkhead", setup: func(c *config.ClientConfig) {
			withTimeouts(c)
			c.Bulkhead = middleware.BulkheadSettings{Mode: middleware.BulkheadAdaptive, MinLimit: 1, MaxLimit: 200, InitialLimit: 20, MaxWait: time.Second}
		}},
		{name: "attempt hook that wraps the context", setup: withTimeouts, hooks: factory.Hooks{
			Attempt: []middleware.Middleware{func(next http.RoundTripper) http.RoundTripper {
				return middleware.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
					return next.RoundTrip(r.WithContext(context.WithValue(r.Context(), traceKey{}, "hook")))
				})
			}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Default()
			tt.setup(&cfg)
			base := &valueBase{}
			r, err := factory.New(config.Config{Defaults: cfg, Clients: map[string]config.ClientConfig{"svc": cfg}},
				factory.Options{Base: base, Logger: discard(), Hooks: tt.hooks})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			client := r.Get("svc")
			// One warm-up request, so that lazily started machinery is not
			// counted as per-request.
			if err := getOK(client); err != nil {
				t.Fatal(err)
			}

			baseline := runtime.NumGoroutine()
			created0, haveCreated := goroutinesCreated()
			var next atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for range workers {
				wg.Go(func() {
					for next.Add(1) <= requests {
						if err := getOK(client); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			created1, _ := goroutinesCreated()
			if got := base.tagged.Load(); tt.tagged && got != requests+1 {
				t.Errorf("requests with an idempotency key and a deadline header: got %d, want %d", got, requests+1)
			}

			// Each worker is one goroutine; anything per request would grow
			// with the requests in flight (up to 8) and show in the count
			// of goroutines created (up to 1,000).
			const slack = 4
			if peak := int(base.peak.Load()); peak > baseline+workers+slack {
				t.Errorf("goroutines during the run: peak %d, want at most %d (baseline %d + %d workers + %d)",
					peak, baseline+workers+slack, baseline, workers, slack)
			}
			if haveCreated {
				if got := created1 - created0; got > workers+slack {
					t.Errorf("goroutines created by %d requests: %d, want at most %d (the workers + %d)",
						requests, got, workers+slack, slack)
				}
			}
		})
	}
}

// getOK sends one GET through c and reads and closes the body; it fails on
// an error or a status other than 200.
func getOK(c *http.Client) error {
	resp, err := c.Get("http://svc.test/v1/items")
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("unexpected status %s", resp.Status)
	}
	return nil
}
