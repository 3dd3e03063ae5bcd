package middleware_test

import (
	"net/http"
	"testing"

	"github.com/switchboard-http/switchboard/middleware"
)

// BenchmarkBreakerClosedSuccess measures the cost the breaker adds to a
// successful call on a closed breaker: each case runs over the same
// in-memory RoundTripper, which answers 200 with a shared response and
// allocates nothing, and "bare" is that RoundTripper alone.
func BenchmarkBreakerClosedSuccess(b *testing.B) {
	resp := &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}
	base := middleware.RoundTripperFunc(func(*http.Request) (*http.Response, error) { return resp, nil })
	req, err := http.NewRequest(http.MethodGet, "http://svc.test/v1/items", nil)
	if err != nil {
		b.Fatal(err)
	}
	breaker := func(mut func(*middleware.BreakerSettings)) http.RoundTripper {
		s := middleware.DefaultBreakerSettings()
		s.Enabled = true
		if mut != nil {
			mut(&s)
		}
		return middleware.NewBreaker(s, middleware.BreakerOptions{}).Middleware()(base)
	}
	cases := []struct {
		name string
		rt   http.RoundTripper
	}{
		{"bare", base},
		{"consecutive", breaker(nil)},
		{"rate", breaker(func(s *middleware.BreakerSettings) { s.Mode = middleware.BreakerRate })},
		{"host", breaker(func(s *middleware.BreakerSettings) { s.Scope = middleware.ScopeHost })},
	}
	for _, c := range cases {
		b.Run(c.name+"/serial", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.rt.RoundTrip(req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.rt.RoundTrip(req); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
