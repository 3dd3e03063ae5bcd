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

func TestFormatDeadline(t *testing.T) {
	const (
		ms   = middleware.DeadlineMillis
		sec  = middleware.DeadlineSeconds
		grpc = middleware.DeadlineGRPC
	)
	tests := []struct {
		left   time.Duration
		format middleware.DeadlineFormat
		want   string
	}{
		{1999*time.Millisecond + 999*time.Microsecond, ms, "1999"}, // rounded down
		{3 * time.Second, ms, "3000"},
		{999 * time.Microsecond, ms, "0"}, // less than the unit: no time left
		{0, ms, "0"},
		{-5 * time.Second, ms, "0"}, // passed: never negative
		{1500 * time.Millisecond, "", "1500"},
		{1999 * time.Millisecond, sec, "1"},
		{59*time.Second + 999*time.Millisecond, sec, "59"},
		{500 * time.Millisecond, sec, "0"},
		{-time.Second, sec, "0"},
		{0, grpc, "0n"},
		{-time.Second, grpc, "0n"},
		{1, grpc, "1n"},
		{99_999_999, grpc, "99999999n"},                        // 8 digits of n: the finest unit fits
		{100 * time.Millisecond, grpc, "100000u"},              // 9 digits of n: the next unit
		{1500*time.Millisecond + 999, grpc, "1500000u"},        // rounded down to the unit
		{99_999_999*time.Microsecond + 999, grpc, "99999999u"}, // the most u says
		{100 * time.Second, grpc, "100000m"},                   // 9 digits of u
		{99_999_999*time.Millisecond + 999*time.Microsecond, grpc, "99999999m"},
		{100_000 * time.Second, grpc, "100000S"}, // 9 digits of m
		{99_999_999*time.Second + 999*time.Millisecond, grpc, "99999999S"},
		{100_000_000 * time.Second, grpc, "1666666M"},    // 9 digits of S, rounded down
		{time.Duration(math.MaxInt64), grpc, "2562047H"}, // 9 digits of M
	}
	for _, tt := range tests {
		if got := middleware.FormatDeadline(tt.left, tt.format); got != tt.want {
			t.Errorf("FormatDeadline(%v, %q): got %q, want %q", tt.left, tt.format, got, tt.want)
		}
	}
}

// deadlineStack is Timeout(timeout) → Retry (2 retries, 1s then 2s
// backoff) → AttemptTimeout(attempt) → PropagateDeadline(X-Timeout, format)
// → rt, the factory's order.
func deadlineStack(timeout, attempt time.Duration, format middleware.DeadlineFormat, rt http.RoundTripper) http.RoundTripper {
	s := fixedSettings()
	s.MaxRetries = 2
	return middleware.Chain(
		middleware.Timeout(timeout, middleware.TimeoutOptions{}),
		middleware.Retry(s, middleware.RetryOptions{ReadOnlyBelow: true}),
		middleware.AttemptTimeout(attempt, middleware.TimeoutOptions{}),
		middleware.PropagateDeadline(middleware.DeadlineSettings{Header: "x-timeout", Format: format}),
	)(rt)
}

// TestPropagateDeadlineAtEachAttempt: every attempt carries the time left
// until the tighter of its attempt_timeout and the call's timeout (or the
// caller's own deadline), as the attempt's context has it when it is sent,
// rounded down, in each format; no deadline, no header.
func TestPropagateDeadlineAtEachAttempt(t *testing.T) {
	// Attempt 1 goes at 0 and answers 503 after 250ms; attempt 2 goes 1s
	// later, at 1.25s, and answers 503 after 1.5s; attempt 3 goes 2s
	// later, at 4.75s.
	steps := []fakert.Step{{Status: 503, Delay: 250 * time.Millisecond}, {Status: 503, Delay: 1500 * time.Millisecond}, {Status: 200}}
	for _, tc := range []struct {
		name             string
		timeout, attempt time.Duration
		caller           time.Duration // the caller's own context timeout; 0 = none
		format           middleware.DeadlineFormat
		want             []string // per attempt; "" = no header
	}{
		{name: "attempt_timeout tighter", timeout: time.Minute, attempt: 3 * time.Second, format: "ms",
			want: []string{"3000", "3000", "3000"}},
		{name: "timeout tighter from attempt 2", timeout: 6 * time.Second, attempt: 5 * time.Second, format: "ms",
			want: []string{"5000", "4750", "1250"}},
		{name: "caller's deadline tightest", timeout: time.Minute, attempt: 10 * time.Second, caller: 5*time.Second + 987654321, format: "ms",
			want: []string{"5987", "4737", "1237"}},
		{name: "seconds", timeout: time.Minute, attempt: 10 * time.Second, caller: 5*time.Second + 987654321, format: "seconds",
			want: []string{"5", "4", "1"}},
		{name: "grpc", timeout: time.Minute, attempt: 10 * time.Second, caller: 5*time.Second + 987654321, format: "grpc",
			want: []string{"5987654u", "4737654u", "1237654u"}},
		{name: "grpc, minutes left", timeout: 10 * time.Minute, attempt: 0, format: "grpc",
			want: []string{"600000m", "598750m", "595250m"}},
		{name: "no deadline anywhere", format: "ms", want: []string{"", "", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				if tc.caller > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.caller)
					defer cancel()
				}
				rt := fakert.New(steps...)
				req := newReq(t, ctx, http.MethodGet, "")
				resp, err := deadlineStack(tc.timeout, tc.attempt, tc.format, rt).RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
				seen := rt.Requests()
				if len(seen) != len(tc.want) {
					t.Fatalf("attempts: got %d, want %d", len(seen), len(tc.want))
				}
				for i, r := range seen {
					got := r.Header.Values("X-Timeout")
					switch {
					case tc.want[i] == "" && len(got) != 0:
						t.Errorf("attempt %d: X-Timeout = %q, want none", i+1, got)
					case tc.want[i] != "" && (len(got) != 1 || got[0] != tc.want[i]):
						t.Errorf("attempt %d: X-Timeout = %q, want %q", i+1, got, tc.want[i])
					}
				}
				if _, ok := req.Header["X-Timeout"]; ok {
					t.Errorf("caller's request changed: %v", req.Header)
				}
			})
		})
	}
}

// TestPropagateDeadlineCallersHeaderKept: a header of that name the
// caller set goes out as it is, on every attempt.
func TestPropagateDeadlineCallersHeaderKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := fakert.Status(503, 200)
		req := newReq(t, context.Background(), http.MethodGet, "")
		req.Header.Set("X-Timeout", "250")
		resp, err := deadlineStack(time.Minute, 3*time.Second, "ms", rt).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		for i, r := range rt.Requests() {
			if got := r.Header.Values("X-Timeout"); len(got) != 1 || got[0] != "250" {
				t.Errorf("attempt %d: X-Timeout = %q, want the caller's 250", i+1, got)
			}
		}
	})
}

// TestPropagateDeadlineCallersHeaderInAnyCase: a caller's header set under
// a name not in canonical form (sent as it is) counts as the caller's: no
// second copy goes out under the canonical name.
func TestPropagateDeadlineCallersHeaderInAnyCase(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := fakert.Status(200)
		req := newReq(t, context.Background(), http.MethodGet, "")
		req.Header["x-timeout"] = []string{"250"}
		resp, err := deadlineStack(time.Minute, 3*time.Second, "ms", rt).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		sent := rt.Requests()[0].Header
		if got := sent.Values("X-Timeout"); len(got) != 0 {
			t.Errorf("X-Timeout = %q added beside the caller's x-timeout, want none", got)
		}
		if got := sent["x-timeout"]; len(got) != 1 || got[0] != "250" {
			t.Errorf("x-timeout = %q, want the caller's 250", got)
		}
	})
}

// TestPropagateDeadlinePassedSendsZero: a deadline already passed when the
// layer runs is sent as 0, not left out (which would say "no deadline").
func TestPropagateDeadlinePassedSendsZero(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		time.Sleep(2 * time.Second) // the fake clock: the deadline passes
		var got []string
		rt := middleware.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
			got = r.Header.Values("Grpc-Timeout")
			return &http.Response{StatusCode: 200, Body: http.NoBody, Request: r}, nil
		})
		h := middleware.PropagateDeadline(middleware.DeadlineSettings{Header: "grpc-timeout", Format: "grpc"})(rt)
		if _, err := h.RoundTrip(newReq(t, ctx, http.MethodGet, "")); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0] != "0n" {
			t.Errorf("grpc-timeout: got %q, want 0n", got)
		}
	})
}

// TestPropagateDeadlineNoHeaderConfigured: with no header configured the
// layer is no layer at all.
func TestPropagateDeadlineNoHeaderConfigured(t *testing.T) {
	rt := fakert.New()
	if got := middleware.PropagateDeadline(middleware.DeadlineSettings{Format: "ms"})(rt); got != http.RoundTripper(rt) {
		t.Errorf("PropagateDeadline without a header: got %T, want the next RoundTripper itself", got)
	}
}
