package middleware_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/middleware"
)

// faultCounts runs n attempts through a Fault layer over a counting
// transport and returns how many aborts, errors and delays it saw, and
// how many attempts reached the transport.
func faultCounts(t *testing.T, s middleware.FaultSettings, seed uint64, n int, header string) (aborts, errs, delays, sent int) {
	t.Helper()
	var mu sync.Mutex
	obs := middleware.ObserverFunc(func(_ context.Context, e middleware.Event) {
		if e.Name != middleware.EventFaultInjected {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if e.Reason == "delay" {
			delays++
		}
	})
	base := fakert.Status(200)
	rt := middleware.Fault(s, middleware.FaultOptions{Seed: seed, Events: &middleware.Events{Client: "c", Observer: obs}})(base)
	for range n {
		req := newReq(t, context.Background(), http.MethodGet, "")
		if header != "" {
			req.Header.Set(header, "1")
		}
		resp, err := rt.RoundTrip(req)
		switch {
		case errors.Is(err, middleware.ErrFaultInjected):
			errs++
		case err != nil:
			t.Fatalf("RoundTrip: %v", err)
		case resp.Header.Get("X-Switchboard-Fault") == "abort":
			if resp.StatusCode != s.Abort.Status && !(s.Abort.Status == 0 && resp.StatusCode == 503) {
				t.Fatalf("aborted status: got %d, want %d", resp.StatusCode, s.Abort.Status)
			}
			aborts++
			resp.Body.Close()
		default:
			resp.Body.Close()
		}
	}
	return aborts, errs, delays, base.Calls()
}

// within999 reports whether k successes of n draws are within the 99.9 %
// two-sided binomial bound (normal approximation: 3.29 σ) of percent.
func within999(k, n int, percent float64) bool {
	p := percent / 100
	mean := float64(n) * p
	sigma := math.Sqrt(float64(n) * p * (1 - p))
	return math.Abs(float64(k)-mean) <= 3.29*sigma
}

func TestFaultPercentagesFollowTheSettingsAndTheSeed(t *testing.T) {
	tests := []struct {
		name  string
		s     middleware.FaultSettings
		abort float64
		delay float64
	}{
		{"10% aborts", middleware.FaultSettings{Enabled: true, Abort: middleware.FaultAbort{Percent: 10, Status: 503}}, 10, 0},
		{"25% errors", middleware.FaultSettings{Enabled: true, Abort: middleware.FaultAbort{Percent: 25, Error: true}}, 25, 0},
		{"30% delays and 5% aborts", middleware.FaultSettings{Enabled: true,
			Abort: middleware.FaultAbort{Percent: 5, Status: 500},
			Delay: middleware.FaultDelay{Percent: 30, Duration: 300 * time.Millisecond}}, 5, 30},
		{"100% aborts", middleware.FaultSettings{Enabled: true, Abort: middleware.FaultAbort{Percent: 100}}, 100, 0},
	}
	const n = 10000
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				aborts, errs, delays, sent := faultCounts(t, tt.s, 42, n, "")
				got := aborts + errs
				if !within999(got, n, tt.abort) || (tt.abort == 100 && got != n) {
					t.Errorf("aborted %d of %d, want %.0f%% within the 99.9%% bound", got, n, tt.abort)
				}
				if !within999(delays, n, tt.delay) {
					t.Errorf("delayed %d of %d, want %.0f%% within the 99.9%% bound", delays, n, tt.delay)
				}
				if sent != n-got {
					t.Errorf("transport saw %d attempts, want %d (no aborted one)", sent, n-got)
				}
				// The same seed gives the very same faults.
				a2, e2, d2, _ := faultCounts(t, tt.s, 42, n, "")
				if a2 != aborts || e2 != errs || d2 != delays {
					t.Errorf("seed 42 twice: got %d/%d/%d then %d/%d/%d, want equal", aborts, errs, delays, a2, e2, d2)
				}
			})
		})
	}
}

func TestFaultHeaderGatesWhichRequestsAreFaulted(t *testing.T) {
	s := middleware.FaultSettings{Enabled: true, Header: "X-Chaos", Abort: middleware.FaultAbort{Percent: 100, Status: 503}}
	if aborts, _, _, sent := faultCounts(t, s, 1, 50, ""); aborts != 0 || sent != 50 {
		t.Fatalf("requests without X-Chaos: got %d aborted, %d sent; want 0 and 50", aborts, sent)
	}
	if aborts, _, _, sent := faultCounts(t, s, 1, 50, "X-Chaos"); aborts != 50 || sent != 0 {
		t.Fatalf("requests with X-Chaos: got %d aborted, %d sent; want 50 and 0", aborts, sent)
	}
}

func TestFaultDelayWaitsExactlyAndEndsWithTheContext(t *testing.T) {
	s := middleware.FaultSettings{Enabled: true, Delay: middleware.FaultDelay{Percent: 100, Duration: 300 * time.Millisecond}}
	synctest.Test(t, func(t *testing.T) {
		base := fakert.Status(200)
		rt := middleware.Fault(s, middleware.FaultOptions{Seed: 1})(base)
		start := time.Now()
		resp, err := rt.RoundTrip(newReq(t, context.Background(), http.MethodGet, ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := time.Since(start); got != 300*time.Millisecond {
			t.Fatalf("delayed attempt took %v, want 300ms", got)
		}

		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start = time.Now()
		_, err = rt.RoundTrip(newReq(t, ctx, http.MethodGet, ""))
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 100*time.Millisecond {
			t.Fatalf("delay under a 100ms deadline: got %v after %v, want DeadlineExceeded after 100ms", err, time.Since(start))
		}
		if base.Calls() != 1 {
			t.Fatalf("transport calls: got %d, want 1", base.Calls())
		}
	})
}

// Injected aborts are seen by the layers above as real failures: Retry
// retries a 503 abort, and none of the aborted attempts reaches the network.
func TestFaultAbortIsRetried(t *testing.T) {
	base := fakert.Status(200)
	var injected int
	ev := &middleware.Events{Observer: middleware.ObserverFunc(func(_ context.Context, e middleware.Event) {
		if e.Name == middleware.EventFaultInjected {
			injected++
		}
	})}
	fault := middleware.Fault(middleware.FaultSettings{Enabled: true, Abort: middleware.FaultAbort{Percent: 100, Status: 503}}, middleware.FaultOptions{Seed: 1, Events: ev})
	retry := middleware.Retry(middleware.RetrySettings{MaxRetries: 2, RetryableStatus: []int{503}}, middleware.RetryOptions{})
	resp, err := middleware.Chain(retry, fault)(base).RoundTrip(newReq(t, context.Background(), http.MethodGet, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || base.Calls() != 0 || injected != 3 {
		t.Fatalf("got status %d, %d attempts sent, %d faults injected; want 503, 0 and 3 (retried twice)", resp.StatusCode, base.Calls(), injected)
	}
}

func TestFaultOffIsTheIdentity(t *testing.T) {
	base := fakert.Status(200)
	for _, s := range []middleware.FaultSettings{
		{},
		{Enabled: false, Abort: middleware.FaultAbort{Percent: 100}},
		{Enabled: true},
	} {
		if rt := middleware.Fault(s, middleware.FaultOptions{})(base); rt != http.RoundTripper(base) {
			t.Errorf("Fault(%+v) wrapped the transport, want it returned as is", s)
		}
	}
}
