package middleware_test

import (
	"context"
	"math"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/middleware"
)

func TestBackoffCap(t *testing.T) {
	s := middleware.RetrySettings{InitialBackoff: 500 * time.Millisecond, MaxBackoff: 30 * time.Second}
	tests := []struct {
		s    middleware.RetrySettings
		n    int
		want time.Duration
	}{
		{s, 0, 0},
		{s, 1, 500 * time.Millisecond},
		{s, 2, time.Second},
		{s, 3, 2 * time.Second},
		{s, 7, 30 * time.Second},
		{s, 63, 30 * time.Second},
		{s, 64, 30 * time.Second},
		{s, math.MaxInt, 30 * time.Second},
		{middleware.RetrySettings{InitialBackoff: time.Second}, 64, time.Duration(math.MaxInt64)},
		{middleware.RetrySettings{InitialBackoff: time.Second}, 35, time.Duration(math.MaxInt64)},
		{middleware.RetrySettings{InitialBackoff: time.Second}, 34, time.Second << 33},
		{middleware.RetrySettings{InitialBackoff: time.Second}, 33, time.Second << 32},
		{middleware.RetrySettings{MaxBackoff: time.Second}, 3, 0},
	}
	for _, tt := range tests {
		if got := tt.s.BackoffCap(tt.n); got != tt.want {
			t.Errorf("BackoffCap(%d) with %v/%v: got %v, want %v", tt.n, tt.s.InitialBackoff, tt.s.MaxBackoff, got, tt.want)
		}
	}
}

func TestDelay(t *testing.T) {
	const ms = time.Millisecond
	base := middleware.RetrySettings{InitialBackoff: 100 * ms, MaxBackoff: 1000 * ms}
	with := func(j middleware.Jitter) middleware.RetrySettings { s := base; s.Jitter = j; return s }
	tests := []struct {
		name string
		s    middleware.RetrySettings
		n    int
		prev time.Duration
		r    float64
		want time.Duration
	}{
		{"none 1", with(middleware.JitterNone), 1, 0, 0.7, 100 * ms},
		{"none 3", with(middleware.JitterNone), 3, 0, 0.7, 400 * ms},
		{"none capped", with(middleware.JitterNone), 5, 0, 0.7, 1000 * ms},
		{"full 0", with(middleware.JitterFull), 3, 0, 0, 0},
		{"full half", with(middleware.JitterFull), 3, 0, 0.5, 200 * ms},
		{"full 1", with(middleware.JitterFull), 3, 0, 1, 400 * ms},
		{"full clamps r above 1", with(middleware.JitterFull), 3, 0, 7, 400 * ms},
		{"full clamps r below 0", with(middleware.JitterFull), 3, 0, -1, 0},
		{"empty means full", with(""), 3, 0, 0.5, 200 * ms},
		{"unknown means full", with("bogus"), 3, 0, 0.5, 200 * ms},
		{"equal 0", with(middleware.JitterEqual), 3, 0, 0, 200 * ms},
		{"equal 1", with(middleware.JitterEqual), 3, 0, 1, 400 * ms},
		{"equal capped", with(middleware.JitterEqual), 9, 0, 0, 500 * ms},
		// Decorrelated: in [100/2, min(cap, 2·prev)], the default multiplier 2.
		{"decorrelated 0", with(middleware.JitterDecorrelated), 4, 300 * ms, 0, 50 * ms},
		{"decorrelated 1", with(middleware.JitterDecorrelated), 4, 300 * ms, 1, 600 * ms},
		{"decorrelated half", with(middleware.JitterDecorrelated), 4, 300 * ms, 0.5, 325 * ms},
		{"decorrelated capped at BackoffCap", with(middleware.JitterDecorrelated), 4, 600 * ms, 1, 800 * ms},
		{"decorrelated first at most initial", with(middleware.JitterDecorrelated), 1, 100 * ms, 1, 100 * ms},
		{"decorrelated prev below initial", with(middleware.JitterDecorrelated), 2, 0, 1, 100 * ms},
		{"decorrelated huge prev", with(middleware.JitterDecorrelated), 9, time.Duration(math.MaxInt64), 1, 1000 * ms},
		{"decorrelated multiplier 3", func() middleware.RetrySettings { s := with(middleware.JitterDecorrelated); s.Multiplier = 3; return s }(), 2, 100 * ms, 1, 300 * ms},
		{"decorrelated multiplier 1 is constant", func() middleware.RetrySettings { s := with(middleware.JitterDecorrelated); s.Multiplier = 1; return s }(), 5, 100 * ms, 1, 100 * ms},
		{"n 0", with(middleware.JitterNone), 0, 0, 1, 0},
		{"full no cap huge n", middleware.RetrySettings{InitialBackoff: time.Second}, 100, 0, 1, time.Duration(math.MaxInt64)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.Delay(tt.n, tt.prev, tt.r); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDelayWithinBounds(t *testing.T) {
	s := middleware.RetrySettings{InitialBackoff: 10 * time.Millisecond, MaxBackoff: time.Second}
	for _, j := range []middleware.Jitter{middleware.JitterFull, middleware.JitterEqual, middleware.JitterDecorrelated} {
		s.Jitter = j
		prev := s.InitialBackoff
		for n := 1; n <= 20; n++ {
			for _, r := range []float64{0, 0.25, 0.5, 0.999999} {
				d := s.Delay(n, prev, r)
				if d < 0 || d > s.MaxBackoff {
					t.Fatalf("%s n=%d r=%v: got %v, outside [0, %v]", j, n, r, d, s.MaxBackoff)
				}
				if j == middleware.JitterDecorrelated && d < s.InitialBackoff/2 {
					t.Fatalf("decorrelated n=%d: got %v below InitialBackoff/Multiplier", n, d)
				}
				if d > s.BackoffCap(n) {
					t.Fatalf("%s n=%d: got %v above cap %v", j, n, d, s.BackoffCap(n))
				}
			}
			prev = s.Delay(n, prev, 0.5)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2015, 10, 21, 7, 28, 0, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"120", 120 * time.Second, true},
		{"0", 0, true},
		{" 7 ", 7 * time.Second, true},
		{"Wed, 21 Oct 2015 07:28:30 GMT", 30 * time.Second, true},
		{"Wednesday, 21-Oct-15 07:29:00 GMT", time.Minute, true}, // RFC 850
		{"Wed Oct 21 07:28:05 2015", 5 * time.Second, true},      // asctime
		{"Wed, 21 Oct 2015 07:00:00 GMT", 0, false},              // in the past: ignored
		{"Wed, 21 Oct 2015 07:28:00 GMT", 0, false},              // now: not after it, ignored
		{"99999999999999999999", time.Duration(math.MaxInt64), true},
		{"9223372036", 9223372036 * time.Second, true},
		{"9223372037", time.Duration(math.MaxInt64), true},
		{"", 0, false},
		{"-5", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{"Wed, 21 Oct 2015", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := middleware.ParseRetryAfter(tt.in, now)
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("got %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestRetryBackoffSchedule(t *testing.T) {
	tests := []struct {
		name   string
		jitter middleware.Jitter
		rand   float64
		want   []time.Duration // exact gaps between attempts
	}{
		{"none", middleware.JitterNone, 0.5, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 350 * time.Millisecond, 350 * time.Millisecond}},
		{"full rand 0", middleware.JitterFull, 0, []time.Duration{0, 0, 0, 0}},
		{"full rand 1", middleware.JitterFull, 1, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 350 * time.Millisecond, 350 * time.Millisecond}},
		{"zero jitter is full", "", 0.5, []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 175 * time.Millisecond, 175 * time.Millisecond}},
		{"equal rand 0", middleware.JitterEqual, 0, []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 175 * time.Millisecond, 175 * time.Millisecond}},
		{"equal rand 1", middleware.JitterEqual, 1, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 350 * time.Millisecond, 350 * time.Millisecond}},
		{"decorrelated rand 0", middleware.JitterDecorrelated, 0, []time.Duration{50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond}},
		// In [50, min(cap, 2·prev)]: 100 (the cap), 200, 350 (max_backoff), 350.
		{"decorrelated rand 1", middleware.JitterDecorrelated, 1, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 350 * time.Millisecond, 350 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := fixedSettings()
				s.MaxRetries = 4
				s.InitialBackoff = 100 * time.Millisecond
				s.MaxBackoff = 350 * time.Millisecond
				s.Jitter = tt.jitter
				rt := fakert.Status(503)
				start := time.Now()
				resp, err := middleware.Retry(s, middleware.RetryOptions{Rand: func() float64 { return tt.rand }})(rt).RoundTrip(newReq(t, context.Background(), "GET", ""))
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
				got := gaps(rt)
				var total time.Duration
				for i := range tt.want {
					total += tt.want[i]
					if i >= len(got) || got[i] != tt.want[i] {
						t.Fatalf("got gaps %v, want %v", got, tt.want)
					}
				}
				if el := time.Since(start); el != total {
					t.Fatalf("got total %v, want %v", el, total)
				}
			})
		})
	}
}

// gaps returns the time between consecutive requests the fake saw.
func gaps(rt *fakert.Transport) []time.Duration {
	reqs := rt.Requests()
	var out []time.Duration
	for i := 1; i < len(reqs); i++ {
		out = append(out, reqs[i].At.Sub(reqs[i-1].At))
	}
	return out
}

func TestRetryAfter(t *testing.T) {
	date := func(d time.Duration) string { return time.Now().Add(d).UTC().Format(http.TimeFormat) }
	tests := []struct {
		name       string
		retryAfter func() string
		timeout    time.Duration // caller deadline; 0 = none
		wantCalls  int
		wantWait   time.Duration
	}{
		{"seconds replace the backoff", func() string { return "3" }, 0, 2, 3 * time.Second},
		{"zero seconds retries at once", func() string { return "0" }, 0, 2, 0},
		{"HTTP-date", func() string { return date(5 * time.Second) }, 0, 2, 5 * time.Second},
		// A past date is ignored as a malformed one is: the schedule's 1s
		// applies (the retry used to go out at once).
		{"HTTP-date in the past: the schedule applies", func() string { return date(-time.Hour) }, 0, 2, time.Second},
		{"malformed is ignored", func() string { return "soon" }, 0, 2, time.Second},
		{"larger than MaxBackoff: returned at once", func() string { return "9" }, 0, 1, 0},
		{"wait past the deadline: returned at once", func() string { return "4" }, 3 * time.Second, 1, 0},
		{"wait within the deadline", func() string { return "2" }, 3 * time.Second, 2, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				if tt.timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.timeout)
					defer cancel()
				}
				rt := fakert.New(fakert.Step{Status: 503, Body: "busy", Header: http.Header{"Retry-After": {tt.retryAfter()}}}, fakert.Step{Status: 200, Body: "ok"})
				start := time.Now()
				resp, err := middleware.Retry(fixedSettings(), middleware.RetryOptions{})(rt).RoundTrip(newReq(t, ctx, "GET", ""))
				if err != nil {
					t.Fatal(err)
				}
				body := readAll(t, resp)
				if got := rt.Calls(); got != tt.wantCalls {
					t.Fatalf("got %d calls, want %d", got, tt.wantCalls)
				}
				if got := time.Since(start); got != tt.wantWait {
					t.Fatalf("got wait %v, want %v", got, tt.wantWait)
				}
				if tt.wantCalls == 1 && (resp.StatusCode != 503 || body != "busy") {
					t.Fatalf("got %d %q, want the 503 intact", resp.StatusCode, body)
				}
			})
		})
	}
}

func TestRetryBackoffPastDeadlineNotWaited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
		defer cancel()
		rt := fakert.New(fakert.Step{Status: 503, Body: "third"})
		start := time.Now()
		// Waits 1s, then 2s would end at 3s > 2.5s: returned after the 2nd attempt.
		resp, err := middleware.Retry(fixedSettings(), middleware.RetryOptions{})(rt).RoundTrip(newReq(t, ctx, "GET", ""))
		if err != nil {
			t.Fatal(err)
		}
		if body := readAll(t, resp); resp.StatusCode != 503 || body != "third" {
			t.Fatalf("got %d %q, want 503 third", resp.StatusCode, body)
		}
		if got := rt.Calls(); got != 2 {
			t.Fatalf("got %d calls, want 2", got)
		}
		if got := time.Since(start); got != time.Second {
			t.Fatalf("got %v, want 1s", got)
		}
	})
}

// TestRetryAfterOn429IsJudgedAgainstMaxBackoff guards the rule that a
// 429's Retry-After is judged as every other Retry-After, against the main
// max_backoff (and the deadline): rate_limited schedules only a 429 without
// a valid Retry-After. Before, the rate-limited max_backoff judged it.
func TestRetryAfterOn429IsJudgedAgainstMaxBackoff(t *testing.T) {
	tests := []struct {
		name       string
		max, rlMax time.Duration
		wantCalls  int
		wantStatus int
		wantTook   time.Duration
	}{
		// The main max_backoff 1s refuses "Retry-After: 2", whatever the rate-limited one allows.
		{"above max_backoff, below rate_limited's", time.Second, time.Minute, 1, 429, 0},
		// The main max_backoff 10s allows it, whatever the rate-limited one says.
		{"below max_backoff, above rate_limited's", 10 * time.Second, time.Second, 2, 200, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := fakert.New(fakert.Step{Status: 429, Header: http.Header{"Retry-After": {"2"}}}, fakert.Step{})
				s := middleware.DefaultRetrySettings()
				s.MaxRetries, s.MaxBackoff = 1, tt.max
				s.RateLimited = middleware.BackoffSettings{InitialBackoff: 5 * time.Second, MaxBackoff: tt.rlMax}
				start := time.Now()
				resp, err := middleware.Retry(s, middleware.RetryOptions{})(rt).RoundTrip(newReq(t, context.Background(), http.MethodGet, ""))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != tt.wantStatus || rt.Calls() != tt.wantCalls || time.Since(start) != tt.wantTook {
					t.Fatalf("got %d after %d calls in %v, want %d after %d calls in %v",
						resp.StatusCode, rt.Calls(), time.Since(start), tt.wantStatus, tt.wantCalls, tt.wantTook)
				}
			})
		})
	}
}
