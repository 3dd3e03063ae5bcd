package factory_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/logcapture"
	"github.com/switchboard-http/switchboard/middleware"
)

// allEvents is every event name middleware defines (docs/observability.md lists them).
var allEvents = []string{
	middleware.EventRetryAttempt, middleware.EventRetryExhausted, middleware.EventRetryBudgetExhausted,
	middleware.EventCircuitOpened, middleware.EventCircuitHalfOpen, middleware.EventCircuitClosed,
	middleware.EventCircuitRejected, middleware.EventBulkheadRejected, middleware.EventRateLimitWaited,
	middleware.EventTimeoutExceeded, middleware.EventConfigReloaded, middleware.EventConfigRejected,
}

// scriptedBase is an in-memory base transport that answers by URL path:
// /ok 200, /down 503, /flaky 503 then 200, /block waits for release, /slow
// waits for the request's context to end.
func scriptedBase(release <-chan struct{}) http.RoundTripper {
	var mu sync.Mutex
	flaky := 0
	return middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		code := http.StatusOK
		switch req.URL.Path {
		case "/down":
			code = http.StatusServiceUnavailable
		case "/flaky":
			mu.Lock()
			flaky++
			if flaky%2 == 1 {
				code = http.StatusServiceUnavailable
			}
			mu.Unlock()
		case "/block":
			select {
			case <-release:
			case <-req.Context().Done():
				return nil, req.Context().Err()
			}
		case "/slow":
			<-req.Context().Done()
			return nil, req.Context().Err()
		}
		return &http.Response{StatusCode: code, Body: http.NoBody, Request: req}, nil
	})
}

// eventsConfig has one client per kind of event.
func eventsConfig() config.Config {
	d := config.Default()
	d.Retry.MaxRetries = 0
	d.Retry.InitialBackoff, d.Retry.MaxBackoff = time.Millisecond, time.Millisecond
	with := func(f func(c *config.ClientConfig)) config.ClientConfig {
		c := d
		c.Headers = map[string]string{}
		f(&c)
		return c
	}
	return config.Config{Defaults: d, Clients: map[string]config.ClientConfig{
		"retry": with(func(c *config.ClientConfig) { c.Retry.MaxRetries = 1 }),
		"budget": with(func(c *config.ClientConfig) {
			c.Retry.MaxRetries = 3
			c.Retry.Budget = middleware.BudgetSettings{Ratio: 0, MinPerSecond: 0, TTL: 10 * time.Second}
		}),
		"breaker": with(func(c *config.ClientConfig) {
			c.CircuitBreaker.Enabled = true
			c.CircuitBreaker.FailureThreshold = 1
			c.CircuitBreaker.Cooldown = time.Second
		}),
		"bulkhead": with(func(c *config.ClientConfig) { c.Bulkhead = middleware.BulkheadSettings{MaxConcurrent: 1} }),
		"limited": with(func(c *config.ClientConfig) {
			c.RateLimit = middleware.RateLimitSettings{RequestsPerSecond: 1, Burst: 1}
		}),
		"slow": with(func(c *config.ClientConfig) { c.Timeout = time.Second }),
	}}
}

func TestEveryEventReachesObserverAndLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		events := &eventLog{}
		logger, logs := logcapture.New()
		r, err := factory.New(eventsConfig(), factory.Options{Base: scriptedBase(release), Observer: events, Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		call := func(client, path string) {
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://svc.test"+path, nil)
			resp, err := r.Get(client).Do(req)
			if err == nil {
				resp.Body.Close()
			}
		}

		call("retry", "/flaky") // retry.attempt
		call("retry", "/down")  // retry.exhausted
		call("budget", "/down") // retry.budget_exhausted

		call("breaker", "/down") // circuit.opened
		call("breaker", "/ok")   // circuit.rejected
		time.Sleep(time.Second)  // the cooldown, on the bubble's clock
		call("breaker", "/ok")   // circuit.half_open, circuit.closed

		done := make(chan struct{})
		go func() { defer close(done); call("bulkhead", "/block") }()
		synctest.Wait()         // the first call holds the only slot
		call("bulkhead", "/ok") // bulkhead.rejected
		close(release)
		<-done

		call("limited", "/ok")
		call("limited", "/ok") // ratelimit.waited
		call("slow", "/slow")  // timeout.exceeded

		if err := r.Apply(eventsConfig()); err != nil { // config.reloaded
			t.Fatal(err)
		}
		bad := eventsConfig()
		bad.Defaults.Retry.MaxRetries = -1
		if err := r.Apply(bad); err == nil { // config.rejected
			t.Fatal("Apply of an invalid config succeeded")
		}

		got := events.names()
		logged := map[string]bool{}
		for _, rec := range logs.Records(t, "") {
			if name, ok := rec["event"].(string); ok {
				logged[name] = true
			}
		}
		for _, name := range allEvents {
			if got[name] == 0 {
				t.Errorf("event %s did not reach the observer", name)
			}
			if !logged[name] {
				t.Errorf("event %s was not logged with an event attribute", name)
			}
		}
		if t.Failed() {
			t.Logf("observed: %v", got)
		}
	})
}
