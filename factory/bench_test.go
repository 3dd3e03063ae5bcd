package factory_test

import (
	"net/http"
	"testing"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/middleware"
)

// okTransport answers every request with a fresh 200 and no body, in memory.
var okTransport = middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
})

func benchRegistry(b *testing.B) *factory.Registry { return benchRegistryWith(b, factory.Hooks{}) }

// benchRegistryWith is benchRegistry with hooks for client billing.
func benchRegistryWith(b *testing.B, h factory.Hooks) *factory.Registry {
	cfg := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": config.Default()}}
	r, err := factory.New(cfg, factory.Options{Base: okTransport, Logger: discard(), ClientHooks: map[string]factory.Hooks{"billing": h}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	return r
}

func BenchmarkGet(b *testing.B) {
	r := benchRegistry(b)
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if r.Get("billing") == nil {
				b.Fatal("nil client")
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if r.Get("billing") == nil {
					b.Error("nil client")
					return
				}
			}
		})
	})
}

func TestGetAllocatesNothing(t *testing.T) {
	cfg := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": config.Default()}}
	r, err := factory.New(cfg, factory.Options{Base: okTransport})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Get("seen-once")
	if n := testing.AllocsPerRun(100, func() { r.Get("billing"); r.Get("seen-once") }); n != 0 {
		t.Fatalf("Get: got %v allocs/op, want 0", n)
	}
}

// benchClient runs a GET through c serially and in parallel. Failures in
// the parallel goroutines use b.Error: b.Fatal may only be called from the
// benchmark's own goroutine.
func benchClient(b *testing.B, c *http.Client) {
	req, _ := http.NewRequest(http.MethodGet, "http://billing.internal/v1/invoices", nil)
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			resp, err := c.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				resp, err := c.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				resp.Body.Close()
			}
		})
	})
}

// BenchmarkRequest compares a GET through the built-in default pipeline
// (retry, budget, 30s timeout) with the same in-memory transport bare, and
// with an attempt hook that does nothing: what a client with Hooks.Attempt
// pays for the hook's layer.
func BenchmarkRequest(b *testing.B) {
	b.Run("bare", func(b *testing.B) { benchClient(b, &http.Client{Transport: okTransport}) })
	b.Run("defaults", func(b *testing.B) { benchClient(b, benchRegistry(b).Get("billing")) })
	b.Run("defaults+attempt-hook", func(b *testing.B) {
		noop := func(next http.RoundTripper) http.RoundTripper { return next }
		benchClient(b, benchRegistryWith(b, factory.Hooks{Attempt: []middleware.Middleware{noop}}).Get("billing"))
	})
}

// TestAttemptsAreNotClonedWhereNothingChangesThem: every attempt was a
// Request.Clone, 3 allocations for a GET although no layer below retry
// changes its request, so the defaults cost 8 allocations per call over a
// bare client and retry + breaker 3. The targets: retry + breaker at most
// +1, the defaults at most +5 (the standard deadline context alone costs
// 4). An attempt hook, which may change its request, still gets a clone,
// and so does Options.Base: the clients here run over their own transport.
func TestAttemptsAreNotClonedWhereNothingChangesThem(t *testing.T) {
	req, _ := http.NewRequest(http.MethodGet, "http://billing.internal/v1/invoices", nil)
	allocs := func(c *http.Client) float64 {
		return testing.AllocsPerRun(200, func() {
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		})
	}
	// An http.Transport that hands every http request to okTransport: the
	// clients' own transport, without Options.Base (whose attempts get a
	// clone each) and without the network.
	tr := &http.Transport{}
	tr.RegisterProtocol("http", okTransport)
	bare := allocs(&http.Client{Transport: tr})
	retryBreaker := config.Default()
	retryBreaker.Timeout = 0
	retryBreaker.CircuitBreaker.Enabled = true
	noop := func(next http.RoundTripper) http.RoundTripper { return next }
	for _, tc := range []struct {
		name  string
		cc    config.ClientConfig
		hooks factory.Hooks
		max   float64
	}{
		{"retry + breaker", retryBreaker, factory.Hooks{}, 1},
		{"defaults", config.Default(), factory.Hooks{}, 5},
		{"defaults + attempt hook", config.Default(), factory.Hooks{Attempt: []middleware.Middleware{noop}}, 5 + 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": tc.cc}}
			r, err := factory.New(cfg, factory.Options{Logger: discard(), ClientHooks: map[string]factory.Hooks{"billing": tc.hooks}})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			factory.UseTransport(r, "billing", tr)
			if got := allocs(r.Get("billing")) - bare; got > tc.max {
				t.Errorf("%v allocations per call over a bare client's %v, want at most %v", got, bare, tc.max)
			} else {
				t.Logf("+%v allocations per call over a bare client's %v", got, bare)
			}
		})
	}
}
