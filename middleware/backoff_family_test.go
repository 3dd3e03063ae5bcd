package middleware_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/middleware"
)

func TestBackoffCapMultiplier(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name string
		s    middleware.RetrySettings
		want []time.Duration // caps of retries 1, 2, …
	}{
		{"zero multiplier doubles", middleware.RetrySettings{InitialBackoff: 100 * ms, MaxBackoff: time.Second},
			[]time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second}},
		{"multiplier 3", middleware.RetrySettings{InitialBackoff: 100 * ms, MaxBackoff: 5 * time.Second, Multiplier: 3},
			[]time.Duration{100 * ms, 300 * ms, 900 * ms, 2700 * ms, 5 * time.Second}},
		{"multiplier 1.5", middleware.RetrySettings{InitialBackoff: 400 * ms, MaxBackoff: time.Second, Multiplier: 1.5},
			[]time.Duration{400 * ms, 600 * ms, 900 * ms, time.Second}},
		{"multiplier 1 is constant", middleware.RetrySettings{InitialBackoff: 250 * ms, MaxBackoff: time.Second, Multiplier: 1},
			[]time.Duration{250 * ms, 250 * ms, 250 * ms}},
		{"below 1 counts as 1", middleware.RetrySettings{InitialBackoff: 250 * ms, MaxBackoff: time.Second, Multiplier: 0.5},
			[]time.Duration{250 * ms, 250 * ms}},
		{"no cap saturates", middleware.RetrySettings{InitialBackoff: time.Second, Multiplier: 10},
			[]time.Duration{time.Second, 10 * time.Second, 100 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, want := range tt.want {
				if got := tt.s.BackoffCap(i + 1); got != want {
					t.Errorf("BackoffCap(%d): got %v, want %v", i+1, got, want)
				}
			}
		})
	}
	huge := middleware.RetrySettings{InitialBackoff: time.Second, Multiplier: 10}
	if got := huge.BackoffCap(1000); got != time.Duration(1<<63-1) {
		t.Errorf("BackoffCap(1000) x10 without cap: got %v, want the longest duration", got)
	}
}

func TestForRateLimited(t *testing.T) {
	main := middleware.RetrySettings{InitialBackoff: time.Second, MaxBackoff: 10 * time.Second, Multiplier: 2, Jitter: middleware.JitterEqual}
	if got := main.ForRateLimited(); got.InitialBackoff != time.Second || got.MaxBackoff != 10*time.Second ||
		got.Multiplier != 2 || got.Jitter != middleware.JitterEqual {
		t.Errorf("absent rate_limited: got %+v, want the main schedule", got)
	}
	s := main
	s.RateLimited = middleware.BackoffSettings{InitialBackoff: 5 * time.Second, Multiplier: 3}
	got := s.ForRateLimited()
	if got.InitialBackoff != 5*time.Second || got.MaxBackoff != 10*time.Second || got.Multiplier != 3 || got.Jitter != middleware.JitterEqual {
		t.Errorf("partial rate_limited: got %+v, want initial 5s, max 10s, x3, equal", got)
	}
}

// waits runs one GET through Retry(s, o) over rt in a bubble and returns the
// gaps between the attempts rt saw.
func waits(t *testing.T, s middleware.RetrySettings, o middleware.RetryOptions, rt *fakert.Transport) []time.Duration {
	t.Helper()
	var out []time.Duration
	synctest.Test(t, func(t *testing.T) {
		resp, err := middleware.Retry(s, o)(rt).RoundTrip(newReq(t, context.Background(), "GET", ""))
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		reqs := rt.Requests()
		for i := 1; i < len(reqs); i++ {
			out = append(out, reqs[i].At.Sub(reqs[i-1].At))
		}
	})
	return out
}

func TestBackoffSchedulesExact(t *testing.T) {
	const ms = time.Millisecond
	base := middleware.RetrySettings{MaxRetries: 4, InitialBackoff: 100 * ms, MaxBackoff: time.Second, Jitter: middleware.JitterNone}
	half := middleware.RetryOptions{Rand: func() float64 { return 0.5 }}
	tests := []struct {
		name string
		s    func(*middleware.RetrySettings)
		o    middleware.RetryOptions
		want []time.Duration
	}{
		{"exponential x2", func(*middleware.RetrySettings) {}, middleware.RetryOptions{},
			[]time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms}},
		{"exponential x3 capped", func(s *middleware.RetrySettings) { s.Multiplier = 3 }, middleware.RetryOptions{},
			[]time.Duration{100 * ms, 300 * ms, 900 * ms, time.Second}},
		{"constant: none with initial = max", func(s *middleware.RetrySettings) { s.InitialBackoff = 300 * ms; s.MaxBackoff = 300 * ms },
			middleware.RetryOptions{}, []time.Duration{300 * ms, 300 * ms, 300 * ms, 300 * ms}},
		{"full jitter, r = 0.5", func(s *middleware.RetrySettings) { s.Jitter = middleware.JitterFull }, half,
			[]time.Duration{50 * ms, 100 * ms, 200 * ms, 400 * ms}},
		{"equal jitter, r = 0.5", func(s *middleware.RetrySettings) { s.Jitter = middleware.JitterEqual }, half,
			[]time.Duration{75 * ms, 150 * ms, 300 * ms, 600 * ms}},
		// In [50, min(cap, 2·prev)]: 50+25, 50+50 (2·75 = 150), 50+75, 50+100.
		{"decorrelated, r = 0.5", func(s *middleware.RetrySettings) { s.Jitter = middleware.JitterDecorrelated }, half,
			[]time.Duration{75 * ms, 100 * ms, 125 * ms, 150 * ms}},
		{"Backoff hook replaces the schedule", func(*middleware.RetrySettings) {},
			middleware.RetryOptions{Backoff: func(n int, resp *http.Response, _ error) time.Duration {
				if resp == nil || resp.StatusCode != 503 {
					t.Errorf("Backoff got no 503 response")
				}
				return time.Duration(n) * 7 * ms
			}},
			[]time.Duration{7 * ms, 14 * ms, 21 * ms, 28 * ms}},
		{"negative Backoff counts as 0", func(*middleware.RetrySettings) {},
			middleware.RetryOptions{Backoff: func(int, *http.Response, error) time.Duration { return -time.Second }},
			[]time.Duration{0, 0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base
			tt.s(&s)
			got := waits(t, s, tt.o, fakert.Status(503))
			if !slices.Equal(got, tt.want) {
				t.Fatalf("waits: got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestDecorrelatedJitterHonoursMultiplier guards the reference's promise
// that multiplier caps every jitter: under decorrelated jitter, retry n
// waits at most min(max_backoff, initial_backoff·multiplier^(n-1)) too, and
// multiplier 1 keeps the delay constant. Before, decorrelated grew by a
// fixed 3 and read no multiplier: multiplier 1 waited 300ms, 900ms, 1s.
func TestDecorrelatedJitterHonoursMultiplier(t *testing.T) {
	const ms = time.Millisecond
	one := middleware.RetryOptions{Rand: func() float64 { return 1 }}
	zero := middleware.RetryOptions{Rand: func() float64 { return 0 }}
	tests := []struct {
		name       string
		multiplier float64
		o          middleware.RetryOptions
		want       []time.Duration
	}{
		{"multiplier 1 is constant", 1, one, []time.Duration{100 * ms, 100 * ms, 100 * ms, 100 * ms}},
		{"multiplier 1 is constant, r = 0", 1, zero, []time.Duration{100 * ms, 100 * ms, 100 * ms, 100 * ms}},
		{"multiplier 1.5, r = 1: the cap", 1.5, one, []time.Duration{100 * ms, 150 * ms, 225 * ms, 337500 * time.Microsecond}},
		{"multiplier 3, r = 1: the cap up to max_backoff", 3, one, []time.Duration{100 * ms, 300 * ms, 900 * ms, time.Second}},
		{"multiplier 4, r = 0: initial_backoff/4", 4, zero, []time.Duration{25 * ms, 25 * ms, 25 * ms, 25 * ms}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := middleware.RetrySettings{MaxRetries: 4, InitialBackoff: 100 * ms, MaxBackoff: time.Second,
				Multiplier: tt.multiplier, Jitter: middleware.JitterDecorrelated}
			got := waits(t, s, tt.o, fakert.Status(503))
			if !slices.Equal(got, tt.want) {
				t.Fatalf("waits: got %v, want %v", got, tt.want)
			}
			for i, d := range got {
				if c := s.BackoffCap(i + 1); d > c {
					t.Errorf("retry %d waited %v, above the cap min(max_backoff, initial_backoff·multiplier^(n-1)) = %v", i+1, d, c)
				}
			}
		})
	}
}

func TestRateLimitedScheduleFor429Only(t *testing.T) {
	const ms = time.Millisecond
	s := middleware.RetrySettings{MaxRetries: 3, InitialBackoff: 100 * ms, MaxBackoff: time.Second, Jitter: middleware.JitterNone,
		RateLimited: middleware.BackoffSettings{InitialBackoff: 2 * time.Second, MaxBackoff: 20 * time.Second, Multiplier: 3}}
	t.Run("429 without Retry-After", func(t *testing.T) {
		got := waits(t, s, middleware.RetryOptions{}, fakert.Status(429))
		if want := []time.Duration{2 * time.Second, 6 * time.Second, 18 * time.Second}; !slices.Equal(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	})
	t.Run("503 keeps the main schedule", func(t *testing.T) {
		got := waits(t, s, middleware.RetryOptions{}, fakert.Status(503))
		if want := []time.Duration{100 * ms, 200 * ms, 400 * ms}; !slices.Equal(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	})
	t.Run("429 with Retry-After rules", func(t *testing.T) {
		rt := fakert.New(fakert.Step{Status: 429, Header: http.Header{"Retry-After": {"1"}}})
		got := waits(t, s, middleware.RetryOptions{}, rt)
		if want := []time.Duration{time.Second, time.Second, time.Second}; !slices.Equal(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	})
	t.Run("mixed 429 and 503", func(t *testing.T) {
		got := waits(t, s, middleware.RetryOptions{}, fakert.Status(503, 429, 503, 200))
		if want := []time.Duration{100 * ms, 6 * time.Second, 400 * ms}; !slices.Equal(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	})
	t.Run("Retry-After rules over the Backoff hook", func(t *testing.T) {
		rt := fakert.New(fakert.Step{Status: 429, Header: http.Header{"Retry-After": {"1"}}}, fakert.Step{Status: 200})
		o := middleware.RetryOptions{Backoff: func(int, *http.Response, error) time.Duration { return time.Millisecond }}
		got := waits(t, s, o, rt)
		if want := []time.Duration{time.Second}; !slices.Equal(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	})
}

func TestBackoffHookSeesTheError(t *testing.T) {
	errReset := errors.New("connection reset by peer")
	var seen []error
	o := middleware.RetryOptions{Backoff: func(_ int, resp *http.Response, err error) time.Duration {
		if resp != nil {
			t.Errorf("Backoff got a response with an error")
		}
		seen = append(seen, err)
		return time.Millisecond
	}}
	s := middleware.RetrySettings{MaxRetries: 1}
	waits(t, s, o, fakert.New(fakert.Step{Err: errReset}, fakert.Step{}))
	if len(seen) != 1 || !errors.Is(seen[0], errReset) {
		t.Fatalf("Backoff errors: got %v, want [%v]", seen, errReset)
	}
}

func TestAttemptHeaderNumbersEveryAttempt(t *testing.T) {
	s := middleware.RetrySettings{MaxRetries: 3, AttemptHeader: "x-attempt"}
	rt := fakert.Status(503)
	synctest.Test(t, func(t *testing.T) {
		req := newReq(t, context.Background(), "GET", "")
		req.Header.Set("X-Attempt", "caller's")
		resp, err := middleware.Retry(s, middleware.RetryOptions{})(rt).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		if got := req.Header.Get("X-Attempt"); got != "caller's" {
			t.Errorf("caller's header: got %q, want it unchanged", got)
		}
	})
	var got []string
	for _, r := range rt.Requests() {
		got = append(got, r.Header.Get("X-Attempt"))
	}
	if want := []string{"1", "2", "3", "4"}; !slices.Equal(got, want) {
		t.Fatalf("X-Attempt values: got %v, want %v", got, want)
	}

	off := fakert.Status(200)
	s.MaxRetries = 0
	resp, err := middleware.Retry(s, middleware.RetryOptions{})(off).RoundTrip(newReq(t, context.Background(), "GET", ""))
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if got := off.Requests()[0].Header.Get("X-Attempt"); got != "1" {
		t.Fatalf("retry off: X-Attempt got %q, want 1", got)
	}
}
