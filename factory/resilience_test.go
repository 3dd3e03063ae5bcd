package factory_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/goroutines"
	"github.com/switchboard-http/switchboard/middleware"
)

// breakerConfig is one client "billing" with a consecutive breaker that opens
// after 3 failures and stays open for an hour, and no retries.
func breakerConfig() config.Config {
	c := config.Default()
	c.Retry.MaxRetries = 0
	c.CircuitBreaker.Enabled = true
	c.CircuitBreaker.FailureThreshold = 3
	c.CircuitBreaker.Cooldown = time.Hour
	return config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": c}}
}

func breakerState(r *factory.Registry, name string) string {
	for _, c := range r.Status().Clients {
		if c.Name == name {
			return c.Breaker[""]
		}
	}
	return "no client"
}

// tripBreaker sends failing calls until the breaker of billing rejects.
func tripBreaker(t *testing.T, r *factory.Registry, url string) {
	t.Helper()
	for i := 0; i < 3; i++ {
		get(t, r.Get("billing"), url)
	}
	if _, err := r.Get("billing").Get(url); !errors.Is(err, middleware.ErrCircuitOpen) {
		t.Fatalf("after 3 failures: got %v, want ErrCircuitOpen", err)
	}
}

func TestBreakerShieldsAFailingDownstream(t *testing.T) {
	srv := newServer(t, status(500))
	r, err := factory.New(breakerConfig(), factory.Options{Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tripBreaker(t, r, srv.URL)
	for i := 0; i < 20; i++ {
		_, err := r.Get("billing").Get(srv.URL)
		var open *middleware.CircuitOpenError
		if !errors.As(err, &open) || open.RetryIn <= 0 || open.RetryIn > time.Hour {
			t.Fatalf("call %d: got %v, want a CircuitOpenError with the time until the probe", i, err)
		}
	}
	if n := srv.hits.Load(); n != 3 {
		t.Fatalf("the server saw %d calls, want 3 (the breaker shields it)", n)
	}
	if got := breakerState(r, "billing"); got != "open" {
		t.Fatalf("Status breaker: got %q, want open", got)
	}
}

func TestReloadKeepsBreakerState(t *testing.T) {
	tests := []struct {
		name   string
		change func(*config.ClientConfig)
	}{
		{"retry settings change", func(c *config.ClientConfig) { c.Retry.MaxRetries = 2 }},
		{"breaker threshold change", func(c *config.ClientConfig) { c.CircuitBreaker.FailureThreshold = 10 }},
		{"transport change", func(c *config.ClientConfig) { c.Transport.IdleConnTimeout = time.Minute }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, status(500))
			r, err := factory.New(breakerConfig(), factory.Options{Logger: discard()})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			tripBreaker(t, r, srv.URL)

			cfg := breakerConfig()
			c := cfg.Clients["billing"]
			tt.change(&c)
			cfg.Clients["billing"] = c
			if err := r.Apply(cfg); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Get("billing").Get(srv.URL); !errors.Is(err, middleware.ErrCircuitOpen) {
				t.Fatalf("after the reload: got %v, want the breaker still open", err)
			}
			if n := srv.hits.Load(); n != 3 {
				t.Fatalf("the server saw %d calls, want 3", n)
			}
		})
	}
}

func TestBreakerSwitchedOffAndOnStartsFresh(t *testing.T) {
	srv := newServer(t, status(500))
	r, err := factory.New(breakerConfig(), factory.Options{Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tripBreaker(t, r, srv.URL)

	off := breakerConfig()
	c := off.Clients["billing"]
	c.CircuitBreaker.Enabled = false
	off.Clients["billing"] = c
	if err := r.Apply(off); err != nil {
		t.Fatal(err)
	}
	if got := breakerState(r, "billing"); got != "" {
		t.Fatalf("breaker off: Status says %q, want none", got)
	}
	if err := r.Apply(breakerConfig()); err != nil {
		t.Fatal(err)
	}
	if got := breakerState(r, "billing"); got != "closed" {
		t.Fatalf("breaker on again: got %q, want closed", got)
	}
	get(t, r.Get("billing"), srv.URL) // admitted: fresh breaker
}

func TestReloadDuring200InFlightRequestsDropsNone(t *testing.T) {
	release := make(chan struct{})
	var arrived atomic.Int64
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		<-release
		w.WriteHeader(http.StatusOK)
	})
	cfg := breakerConfig()
	c := cfg.Clients["billing"]
	c.Bulkhead.MaxConcurrent = 500
	c.Transport.MaxIdleConnsPerHost = 200
	cfg.Clients["billing"] = c
	r, err := factory.New(cfg, factory.Options{Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	const n = 200
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := r.Get("billing").Get(srv.URL)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					err = errors.New(resp.Status)
				}
			}
			errs <- err
		}()
	}
	deadline := time.Now().Add(20 * time.Second)
	for arrived.Load() < n {
		if time.Now().After(deadline) {
			close(release)
			t.Fatalf("only %d of %d requests reached the server", arrived.Load(), n)
		}
		time.Sleep(time.Millisecond) // polling an event with a deadline
	}
	// Reload every component and the transport while all 200 are in flight.
	for i := 1; i <= 5; i++ {
		c.Retry.MaxRetries = i
		c.Bulkhead.MaxConcurrent = 500 + i
		c.CircuitBreaker.FailureThreshold = 3 + i
		c.Transport.IdleConnTimeout = time.Duration(i) * time.Minute
		cfg.Clients["billing"] = c
		if err := r.Apply(cfg); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a request failed across the reloads: %v", err)
		}
	}
}

func TestBulkheadKeepsSlotsAcrossReload(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 2)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
	})
	cfg := breakerConfig()
	c := cfg.Clients["billing"]
	c.CircuitBreaker.Enabled = false
	c.Bulkhead.MaxConcurrent = 2
	cfg.Clients["billing"] = c
	r, err := factory.New(cfg, factory.Options{Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, err := r.Get("billing").Get(srv.URL); err == nil {
				resp.Body.Close()
			}
		}()
	}
	<-arrived
	<-arrived
	c.Bulkhead.MaxWait = time.Millisecond
	cfg.Clients["billing"] = c
	if err := r.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	_, err = r.Get("billing").Get(srv.URL)
	close(release)
	wg.Wait()
	if !errors.Is(err, middleware.ErrBulkheadFull) {
		t.Fatalf("third call after the reload: got %v, want ErrBulkheadFull (the two slots kept)", err)
	}
}

func TestHooksRunAtTheirPlaces(t *testing.T) {
	srv := newServer(t, status(503))
	var outer, attempt atomic.Int64
	count := func(n *atomic.Int64) middleware.Middleware {
		return func(next http.RoundTripper) http.RoundTripper {
			return middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
				n.Add(1)
				return next.RoundTrip(req)
			})
		}
	}
	r, err := factory.New(defaultsWithRetries(2), factory.Options{
		Logger:      discard(),
		Hooks:       factory.Hooks{Outer: []middleware.Middleware{count(&outer)}},
		ClientHooks: map[string]factory.Hooks{"billing": {Attempt: []middleware.Middleware{count(&attempt)}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	get(t, r.Get("billing"), srv.URL)
	if outer.Load() != 1 || attempt.Load() != 3 {
		t.Fatalf("outer saw %d calls, attempt saw %d; want 1 and 3", outer.Load(), attempt.Load())
	}
	get(t, r.Get("search"), srv.URL)
	if outer.Load() != 2 || attempt.Load() != 3 {
		t.Fatalf("search: outer saw %d calls, attempt %d; want 2 and still 3 (billing-only hook)", outer.Load(), attempt.Load())
	}
}

func TestAttemptHookMayChangeItsRequest(t *testing.T) {
	// An attempt hook gets a deep clone per attempt: what it writes reaches
	// neither the caller's request nor the next attempt.
	srv := newServer(t, status(503))
	var seen []string
	var mu sync.Mutex
	mark := func(next http.RoundTripper) http.RoundTripper {
		return middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			mu.Lock()
			seen = append(seen, req.Header.Get("X-Hook")+"|"+req.URL.RawQuery)
			mu.Unlock()
			req.Header.Set("X-Hook", "set")
			req.URL.RawQuery = "hooked=1"
			return next.RoundTrip(req)
		})
	}
	r, err := factory.New(defaultsWithRetries(2), factory.Options{
		Logger:      discard(),
		ClientHooks: map[string]factory.Hooks{"billing": {Attempt: []middleware.Middleware{mark}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1?page=2", nil)
	resp, err := r.Get("billing").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if want := []string{"|page=2", "|page=2", "|page=2"}; !slices.Equal(seen, want) {
		t.Errorf("attempts saw %q, want %q (each a fresh clone)", seen, want)
	}
	if len(req.Header) != 0 || req.URL.RawQuery != "page=2" {
		t.Errorf("caller's request changed: %v %s", req.Header, req.URL)
	}
}

func TestAttemptHookMayChangeItsRequestWithRetryOff(t *testing.T) {
	// Without retries the retry layer still hands attempt hooks a deep
	// clone: a call with max_retries 0, or with retries turned off for it.
	srv := newServer(t, status(200))
	hook := func(next http.RoundTripper) http.RoundTripper {
		return middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			req.Header.Set("X-Hook", "set")
			return next.RoundTrip(req)
		})
	}
	zero := 0
	for _, tt := range []struct {
		name    string
		retries int
		ctx     context.Context
	}{
		{"max_retries 0", 0, context.Background()},
		{"overridden to 0", 2, middleware.WithOverrides(context.Background(), middleware.Overrides{MaxRetries: &zero})},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := factory.New(defaultsWithRetries(tt.retries), factory.Options{
				Logger:      discard(),
				ClientHooks: map[string]factory.Hooks{"billing": {Attempt: []middleware.Middleware{hook}}},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			req, _ := http.NewRequestWithContext(tt.ctx, http.MethodPost, srv.URL, nil)
			resp, err := r.Get("billing").Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if len(req.Header) != 0 {
				t.Errorf("caller's request changed by an attempt hook: %v", req.Header)
			}
		})
	}
}

func TestAttemptHookWrappingTheContextStartsNoGoroutine(t *testing.T) {
	// Tracing-style attempt middleware wrap the context with a value; the
	// transport then derives a cancelable context from it. With attempt
	// hooks the timeout layers use the standard library's contexts, which
	// the context package links without a goroutine.
	type traceKey struct{}
	trace := func(next http.RoundTripper) http.RoundTripper {
		return middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			return next.RoundTrip(req.WithContext(context.WithValue(req.Context(), traceKey{}, "span")))
		})
	}
	var started int
	base := middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		before := goroutines.ContextWatchers()
		_, cancel := context.WithCancelCause(req.Context()) // as *http.Transport does
		started = goroutines.ContextWatchers() - before
		cancel(nil)
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
	})
	r, err := factory.New(defaultsWithRetries(0), factory.Options{
		Logger:      discard(),
		Base:        base,
		ClientHooks: map[string]factory.Hooks{"billing": {Attempt: []middleware.Middleware{trace}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	resp, err := r.Get("billing").Get("http://billing.test/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if started != 0 {
		t.Errorf("%d goroutines started for the transport's context under a tracing hook, want 0", started)
	}
}

func TestOverridesTurnRetryOffForOneCall(t *testing.T) {
	srv := newServer(t, status(503))
	r, err := factory.New(defaultsWithRetries(3), factory.Options{Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	zero := 0
	ctx := middleware.WithOverrides(context.Background(), middleware.Overrides{MaxRetries: &zero})
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := r.Get("billing").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := srv.hits.Load(); n != 1 {
		t.Fatalf("with MaxRetries override 0: got %d attempts, want 1", n)
	}
}
