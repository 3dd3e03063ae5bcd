package factory

import (
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/config"

	"github.com/switchboard-http/switchboard/middleware"
)

// BenchmarkCountCalls is the cost of Status' call counts on a call: one
// Classify and one atomic add in the outermost layer ("bare" is the same
// RoundTripper without it).
func BenchmarkCountCalls(b *testing.B) {
	resp := &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}
	next := middleware.RoundTripperFunc(func(*http.Request) (*http.Response, error) { return resp, nil })
	req, _ := http.NewRequest(http.MethodGet, "http://x.test/", nil)
	for _, bc := range []struct {
		name string
		rt   http.RoundTripper
	}{
		{"bare", next},
		{"counted", countCalls(new(callCounts), 10)(next)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_, _ = bc.rt.RoundTrip(req)
				}
			})
		})
	}
}

// BenchmarkStatus is one Status snapshot of 20 clients that each set a few
// keys away from the defaults, with a breaker and a rate limit: what a
// status page's poll or a scrape pays. The keys that differ are computed
// once per pipeline; only their origins are looked up at each snapshot.
func BenchmarkStatus(b *testing.B) {
	cfg := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{}}
	for i := range 20 {
		cc := config.Default()
		cc.Timeout = time.Duration(i+1) * time.Second
		cc.Retry.MaxRetries = 5
		cc.CircuitBreaker.Enabled = true
		cc.RateLimit.RequestsPerSecond, cc.RateLimit.Burst = 100, 10
		cfg.Clients[fmt.Sprintf("client-%02d", i)] = cc
	}
	r, err := New(cfg, Options{Base: middleware.RoundTripperFunc(func(*http.Request) (*http.Response, error) { return nil, nil }), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Status()
	}
}
