package redisquota_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/middleware"
	redisquota "github.com/switchboard-http/switchboard/quotas/redis"
)

// okRT answers every request with an empty 200, in memory.
type okRT struct{}

func (okRT) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
}

// BenchmarkAttempt is the per-attempt cost of the rate limit layer with
// scope process (x/time/rate in memory) next to scope fleet (one decision
// of a redis-server on loopback), on a quota that never runs out.
func BenchmarkAttempt(b *testing.B) {
	srv := startRedis(b)
	store := redisquota.New(newClient(b, srv.Addr), redisquota.Options{})
	for _, scope := range []middleware.QuotaScope{middleware.QuotaProcess, middleware.QuotaFleet} {
		b.Run(string(scope), func(b *testing.B) {
			s := middleware.DefaultRateLimitSettings()
			s.RequestsPerSecond, s.Burst, s.Scope, s.StoreTimeout = 1e9, 1e6, scope, time.Second
			rt := middleware.NewRateLimit(s, middleware.RateLimitOptions{Name: "bench-" + string(scope), Quotas: store}).Middleware()(okRT{})
			req, _ := http.NewRequest(http.MethodGet, "http://api.test/", nil)
			b.ReportAllocs()
			for b.Loop() {
				resp, err := rt.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
			}
		})
	}
}

// BenchmarkTake measures one store decision (GCRA script and the pause's
// PTTL in one round trip) on loopback and reports its p50 and p99.
func BenchmarkTake(b *testing.B) {
	srv := startRedis(b)
	store := redisquota.New(newClient(b, srv.Addr), redisquota.Options{})
	ctx := b.Context()
	lat := make([]time.Duration, 0, 1<<16)
	for b.Loop() {
		began := time.Now()
		if _, err := store.Take(ctx, "bench", 1e9, 1e6, 1); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(began))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
