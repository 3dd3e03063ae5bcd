package middleware_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/middleware"
)

func TestRetryGatesInOrder(t *testing.T) {
	errReset := errors.New("connection reset by peer")
	tests := []struct {
		name       string
		settings   func(*middleware.RetrySettings)
		opts       func(*middleware.RetryOptions)
		method     string
		body       string // sent as an opaque body without GetBody when not ""
		steps      []fakert.Step
		wantCalls  int
		wantStatus int
		wantEvent  string
	}{
		{name: "attempts left: stops after MaxRetries", settings: func(s *middleware.RetrySettings) { s.MaxRetries = 2 },
			steps: steps(503), wantCalls: 3, wantStatus: 503, wantEvent: middleware.EventRetryExhausted},
		{name: "attempts left: MaxRetries 0 is off", settings: func(s *middleware.RetrySettings) { s.MaxRetries = 0 },
			steps: steps(503), wantCalls: 1, wantStatus: 503},
		{name: "body: no GetBody and buffering off", method: "PUT", body: "payload",
			settings: func(s *middleware.RetrySettings) { s.MaxBufferedBody = 0 },
			steps:    steps(503), wantCalls: 1, wantStatus: 503},
		{name: "body: buffered when no GetBody", method: "PUT", body: "payload",
			steps: steps(503, 200), wantCalls: 2, wantStatus: 200},
		{name: "ShouldRetry replaces the method gate", method: "POST",
			opts: func(o *middleware.RetryOptions) {
				o.ShouldRetry = func(_ *http.Request, r *http.Response, _ error) bool { return r != nil && r.StatusCode == 400 }
			},
			steps: steps(400, 200), wantCalls: 2, wantStatus: 200},
		{name: "ShouldRetry replaces the status gate",
			opts: func(o *middleware.RetryOptions) {
				o.ShouldRetry = func(*http.Request, *http.Response, error) bool { return false }
			},
			steps: steps(503), wantCalls: 1, wantStatus: 503},
		{name: "ShouldRetry still bounded by attempts", settings: func(s *middleware.RetrySettings) { s.MaxRetries = 1 },
			opts: func(o *middleware.RetryOptions) {
				o.ShouldRetry = func(*http.Request, *http.Response, error) bool { return true }
			},
			steps: steps(200), wantCalls: 2, wantStatus: 200, wantEvent: middleware.EventRetryExhausted},
		{name: "method: POST not retried by default", method: "POST", steps: steps(503), wantCalls: 1, wantStatus: 503},
		{name: "method: PATCH not retried by default", method: "PATCH", steps: steps(503), wantCalls: 1, wantStatus: 503},
		{name: "method: matched case-sensitively", method: "get", steps: steps(503), wantCalls: 1, wantStatus: 503},
		{name: "method: DELETE is idempotent", method: "DELETE", steps: steps(503, 204), wantCalls: 2, wantStatus: 204},
		{name: "method: RetryableMethods replaces the set", method: "GET",
			settings: func(s *middleware.RetrySettings) { s.RetryableMethods = []string{"post"} },
			steps:    steps(503), wantCalls: 1, wantStatus: 503},
		{name: "method: RetryableMethods entries upper-cased", method: "POST",
			settings: func(s *middleware.RetrySettings) { s.RetryableMethods = []string{" post "} },
			steps:    steps(503, 201), wantCalls: 2, wantStatus: 201},
		{name: "method: empty RetryableMethods retries no method", method: "GET",
			settings: func(s *middleware.RetrySettings) { s.RetryableMethods = []string{} },
			steps:    steps(503), wantCalls: 1, wantStatus: 503},
		{name: "method: nil RetryableMethods means the idempotent set", method: "PUT",
			settings: func(s *middleware.RetrySettings) { s.RetryableMethods = nil },
			steps:    steps(503, 200), wantCalls: 2, wantStatus: 200},
		{name: "method: RetryAllMethods beats an empty list", method: "PATCH",
			settings: func(s *middleware.RetrySettings) { s.RetryableMethods, s.RetryAllMethods = []string{}, true },
			steps:    steps(503, 200), wantCalls: 2, wantStatus: 200},
		{name: "method: RetryAllMethods", method: "PATCH",
			settings: func(s *middleware.RetrySettings) { s.RetryAllMethods = true },
			steps:    steps(503, 200), wantCalls: 2, wantStatus: 200},
		{name: "outcome: 500 not listed", steps: steps(500), wantCalls: 1, wantStatus: 500},
		{name: "outcome: 429 listed", steps: steps(429, 200), wantCalls: 2, wantStatus: 200},
		{name: "outcome: custom status list", settings: func(s *middleware.RetrySettings) { s.RetryableStatus = []int{500} },
			steps: steps(503), wantCalls: 1, wantStatus: 503},
		{name: "outcome: empty status list retries errors only", settings: func(s *middleware.RetrySettings) { s.RetryableStatus = []int{} },
			steps: []fakert.Step{{Err: errReset}, {Status: 503}}, wantCalls: 2, wantStatus: 503},
		{name: "outcome: nil status list means the defaults", settings: func(s *middleware.RetrySettings) { s.RetryableStatus = nil },
			steps: steps(502, 200), wantCalls: 2, wantStatus: 200},
		{name: "outcome: transport error retried", steps: []fakert.Step{{Err: errReset}, {}}, wantCalls: 2, wantStatus: 200},
		{name: "budget: no token", opts: func(o *middleware.RetryOptions) {
			o.Budget = middleware.NewBudget(middleware.BudgetSettings{TTL: 10 * time.Second}, middleware.BudgetOptions{})
		}, steps: steps(503), wantCalls: 1, wantStatus: 503, wantEvent: middleware.EventRetryBudgetExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := fixedSettings()
				if tt.settings != nil {
					tt.settings(&s)
				}
				ev, rec := newEvents()
				o := middleware.RetryOptions{Events: ev}
				if tt.opts != nil {
					tt.opts(&o)
				}
				rt := fakert.New(tt.steps...)
				method := tt.method
				if method == "" {
					method = http.MethodGet
				}
				req := newReq(t, context.Background(), method, "")
				if tt.body != "" {
					req.Body = newOpaqueBody(tt.body)
				}
				resp, err := middleware.Retry(s, o)(rt).RoundTrip(req)
				if err != nil {
					t.Fatalf("got error %v, want status %d", err, tt.wantStatus)
				}
				readAll(t, resp)
				if resp.StatusCode != tt.wantStatus {
					t.Errorf("got status %d, want %d", resp.StatusCode, tt.wantStatus)
				}
				if got := rt.Calls(); got != tt.wantCalls {
					t.Errorf("got %d calls, want %d", got, tt.wantCalls)
				}
				if got := rt.OpenBodies(); got != 0 {
					t.Errorf("got %d response bodies left open, want 0", got)
				}
				if tt.body != "" {
					for i, r := range rt.Requests() {
						if string(r.Body) != tt.body {
							t.Errorf("attempt %d: got body %q, want %q", i+1, r.Body, tt.body)
						}
					}
				}
				for _, name := range []string{middleware.EventRetryExhausted, middleware.EventRetryBudgetExhausted} {
					want := 0
					if name == tt.wantEvent {
						want = 1
					}
					if got := len(rec.named(name)); got != want {
						t.Errorf("got %d %s events, want %d", got, name, want)
					}
				}
				if got, want := len(rec.named(middleware.EventRetryAttempt)), tt.wantCalls-1; got != want {
					t.Errorf("got %d retry.attempt events, want %d", got, want)
				}
			})
		})
	}
}

func steps(codes ...int) []fakert.Step {
	out := make([]fakert.Step, len(codes))
	for i, c := range codes {
		out[i] = fakert.Step{Status: c}
	}
	return out
}

func TestRetryCancelDuringWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		rt := fakert.Status(503)
		s := fixedSettings()
		s.InitialBackoff = time.Hour
		s.MaxBackoff = time.Hour
		start := time.Now()
		go func() {
			time.Sleep(1500 * time.Millisecond)
			cancel()
		}()
		resp, err := middleware.Retry(s, middleware.RetryOptions{})(rt).RoundTrip(newReq(t, ctx, "GET", ""))
		if resp != nil {
			t.Fatalf("got response %d, want none", resp.StatusCode)
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
		if got := time.Since(start); got != 1500*time.Millisecond {
			t.Fatalf("got %v, want the wait to end at the cancellation (1.5s)", got)
		}
		if rt.Calls() != 1 || rt.OpenBodies() != 0 {
			t.Fatalf("got %d calls, %d open bodies; want 1, 0", rt.Calls(), rt.OpenBodies())
		}
	})
}

func TestRetryPermanentErrors(t *testing.T) {
	cert := &x509.Certificate{}
	tests := []struct {
		name string
		err  error
	}{
		{"unknown authority", &url.Error{Op: "Get", URL: "https://x", Err: x509.UnknownAuthorityError{Cert: cert}}},
		{"certificate invalid", x509.CertificateInvalidError{Cert: cert, Reason: x509.Expired}},
		{"hostname", x509.HostnameError{Certificate: cert, Host: "x"}},
		{"tls verification", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{Cert: cert}}},
		{"unsupported scheme", errors.New(`unsupported protocol scheme "ftp"`)},
		{"no host", errors.New("http: no Host in request URL")},
		{"url parse", &url.Error{Op: "parse", URL: "::", Err: errors.New("missing protocol scheme")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := fakert.New(fakert.Step{Err: tt.err}, fakert.Step{})
				_, err := middleware.Retry(fixedSettings(), middleware.RetryOptions{})(rt).RoundTrip(newReq(t, context.Background(), "GET", ""))
				if !errors.Is(err, tt.err) {
					t.Fatalf("got %v, want %v", err, tt.err)
				}
				if rt.Calls() != 1 {
					t.Fatalf("got %d calls, want 1", rt.Calls())
				}
			})
		})
	}
	t.Run("caller cancellation", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			ev, rec := newEvents()
			rt := fakert.New(fakert.Step{Delay: time.Hour}, fakert.Step{})
			go func() {
				time.Sleep(time.Second)
				cancel()
			}()
			_, err := middleware.Retry(fixedSettings(), middleware.RetryOptions{Events: ev})(rt).RoundTrip(newReq(t, ctx, "GET", ""))
			if !errors.Is(err, context.Canceled) || rt.Calls() != 1 {
				t.Fatalf("got %v after %d calls, want Canceled after 1", err, rt.Calls())
			}
			if len(rec.named(middleware.EventRetryExhausted)) != 0 {
				t.Fatal("caller cancellation reported as exhaustion")
			}
		})
	})
	t.Run("real transport, unsupported scheme", func(t *testing.T) {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		defer tr.CloseIdleConnections()
		calls := 0
		counting := middleware.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
			calls++
			return tr.RoundTrip(r)
		})
		s := fixedSettings()
		s.InitialBackoff = 0
		req, _ := http.NewRequest("GET", "ftp://svc.test/file", nil)
		_, err := middleware.Retry(s, middleware.RetryOptions{})(counting).RoundTrip(req)
		if err == nil || calls != 1 {
			t.Fatalf("got %v after %d calls, want an error after 1", err, calls)
		}
	})
}

func TestRetryDrainsSupersededResponses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := fakert.New(
			fakert.Step{Status: 503, Body: "first"},
			fakert.Step{Status: 502, Body: strings.Repeat("y", 100<<10)},
			fakert.Step{Status: 200, Body: "final"},
		)
		resp, err := middleware.Retry(fixedSettings(), middleware.RetryOptions{})(rt).RoundTrip(newReq(t, context.Background(), "GET", ""))
		if err != nil {
			t.Fatal(err)
		}
		bodies := rt.Bodies()
		if !bodies[0].Closed() || bodies[0].BytesRead() != len("first") {
			t.Fatalf("first body: closed %v, read %d; want closed after reading it all", bodies[0].Closed(), bodies[0].BytesRead())
		}
		if !bodies[1].Closed() || bodies[1].BytesRead() != 64<<10 {
			t.Fatalf("second body: closed %v, read %d; want closed after 64 KiB", bodies[1].Closed(), bodies[1].BytesRead())
		}
		if rt.OpenBodies() != 1 {
			t.Fatalf("got %d open bodies, want 1 (the last)", rt.OpenBodies())
		}
		if body := readAll(t, resp); body != "final" {
			t.Fatalf("got %q, want final", body)
		}
	})
}

func TestRetryExhaustionReturnsLastResponseIntact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev, rec := newEvents()
		rt := fakert.New(fakert.Step{Status: 503, Body: "a"}, fakert.Step{Status: 503, Body: "b"},
			fakert.Step{Status: 504, Body: "c"}, fakert.Step{Status: 503, Body: "last", Header: http.Header{"X-Last": {"1"}}})
		resp, err := middleware.Retry(fixedSettings(), middleware.RetryOptions{Events: ev})(rt).RoundTrip(newReq(t, context.Background(), "GET", ""))
		if err != nil {
			t.Fatalf("got error %v, want the last response", err)
		}
		if body := readAll(t, resp); resp.StatusCode != 503 || body != "last" || resp.Header.Get("X-Last") != "1" {
			t.Fatalf("got %d %q, want 503 last", resp.StatusCode, body)
		}
		ex := rec.named(middleware.EventRetryExhausted)
		if len(ex) != 1 || ex[0].Attempt != 4 || ex[0].Status != 503 || ex[0].Client != "billing" {
			t.Fatalf("got exhausted events %+v, want one for attempt 4, status 503", ex)
		}
		att := rec.named(middleware.EventRetryAttempt)
		wantDelays := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}
		wantStatus := []int{503, 503, 504}
		if len(att) != 3 {
			t.Fatalf("got %d attempt events, want 3", len(att))
		}
		for i, e := range att {
			if e.Attempt != i+2 || e.Delay != wantDelays[i] || e.Status != wantStatus[i] || e.Method != "GET" {
				t.Errorf("event %d: got %+v", i, e)
			}
			if strings.Contains(e.URL, "s3cr3t") || !strings.Contains(e.URL, "token=REDACTED") {
				t.Errorf("event %d: URL %q not redacted", i, e.URL)
			}
		}
	})
}

func TestRetryEventsLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		ev := &middleware.Events{Client: "billing", Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))}
		rt := fakert.New(fakert.Step{Err: errors.New(`dial "http://svc.test/v1/items?token=s3cr3t&page=2" failed`)}, fakert.Step{})
		resp, err := middleware.Retry(fixedSettings(), middleware.RetryOptions{Events: ev})(rt).RoundTrip(newReq(t, context.Background(), "GET", ""))
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		out := buf.String()
		if !strings.Contains(out, "event=retry.attempt") || !strings.Contains(out, "level=INFO") || !strings.Contains(out, "attempt=2") {
			t.Fatalf("log lacks the attempt record: %s", out)
		}
		if strings.Contains(out, "s3cr3t") {
			t.Fatalf("log leaks a secret: %s", out)
		}
	})
}

func TestRetryFreshClonePerAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mutate := func(r *http.Request) {
			r.Header.Set("X-Mutated", "yes")
			r.URL.Path = "/changed"
		}
		rt := fakert.New(fakert.Step{Status: 503, OnRequest: mutate}, fakert.Step{})
		req := newReq(t, context.Background(), "GET", "")
		req.Header.Set("X-Orig", "1")
		resp, err := middleware.Retry(fixedSettings(), middleware.RetryOptions{})(rt).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		reqs := rt.Requests()
		if len(reqs) != 2 {
			t.Fatalf("got %d calls, want 2", len(reqs))
		}
		if reqs[1].Header.Get("X-Mutated") != "" || reqs[1].Header.Get("X-Orig") != "1" || !strings.Contains(reqs[1].URL, "/v1/items") {
			t.Fatalf("attempt 2 saw attempt 1's changes: %v %s", reqs[1].Header, reqs[1].URL)
		}
		if req.Header.Get("X-Mutated") != "" || req.URL.Path != "/v1/items" {
			t.Fatal("caller's request was changed")
		}
		if reqs[0].Req == req || reqs[1].Req == req || reqs[0].Req == reqs[1].Req {
			t.Fatal("attempts did not get fresh clones")
		}
	})
}

// TestAttemptSetPathValueLeavesCallersRequestAlone guards the hand-made
// clone that shared path values with the caller's request: an attempt
// layer's SetPathValue must change its own attempt only, for a request a
// ServeMux routed (Pattern set) and for one whose values were set by hand,
// on a call without retries as on one with.
func TestAttemptSetPathValueLeavesCallersRequestAlone(t *testing.T) {
	routed := func(t *testing.T) *http.Request {
		var got *http.Request
		mux := http.NewServeMux()
		mux.HandleFunc("GET /v1/{id}", func(_ http.ResponseWriter, r *http.Request) { got = r })
		mux.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "http://svc.test/v1/items", nil))
		if got == nil || got.PathValue("id") != "items" {
			t.Fatal("the mux did not route the request")
		}
		return got.WithContext(context.Background())
	}
	byHand := func(t *testing.T) *http.Request {
		req := newReq(t, context.Background(), "GET", "")
		req.SetPathValue("id", "items")
		return req
	}
	for _, tc := range []struct {
		name    string
		req     func(t *testing.T) *http.Request
		retries int
	}{
		{"routed, with retries", routed, 2},
		{"set by hand, with retries", byHand, 2},
		{"routed, retry off", routed, 0},
		{"set by hand, retry off", byHand, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var seen []string
				hook := func(next http.RoundTripper) http.RoundTripper {
					return middleware.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
						seen = append(seen, r.PathValue("id"))
						r.SetPathValue("id", "changed-by-attempt")
						r.SetPathValue("extra", "x")
						return next.RoundTrip(r)
					})
				}
				rt := fakert.New(fakert.Step{Status: 503}, fakert.Step{Status: 503}, fakert.Step{})
				s := fixedSettings()
				s.MaxRetries = tc.retries
				req := tc.req(t)
				resp, err := middleware.Chain(middleware.Retry(s, middleware.RetryOptions{}), hook)(rt).RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
				if got, want := req.PathValue("id"), "items"; got != want {
					t.Errorf("caller's PathValue(id): got %q, want %q", got, want)
				}
				if got := req.PathValue("extra"); got != "" {
					t.Errorf("caller's PathValue(extra): got %q, want none", got)
				}
				for i, v := range seen {
					if v != "items" {
						t.Errorf("attempt %d saw PathValue(id) %q, want %q (not an earlier attempt's)", i+1, v, "items")
					}
				}
				if len(seen) != tc.retries+1 {
					t.Errorf("got %d attempts, want %d", len(seen), tc.retries+1)
				}
			})
		})
	}
}

func TestRetryBufferedBodyLeavesCallersRequestAlone(t *testing.T) {
	// A body the layer buffered differs from the caller's: attempt 1 is a
	// copy carrying it and its GetBody, and the caller's request keeps its
	// own.
	synctest.Test(t, func(t *testing.T) {
		rt := fakert.New(fakert.Step{Status: 503}, fakert.Step{})
		body := newOpaqueBody("payload")
		req := newReq(t, context.Background(), "PUT", "")
		req.Body, req.ContentLength = body, 7
		resp, err := middleware.Retry(fixedSettings(), middleware.RetryOptions{})(rt).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		reqs := rt.Requests()
		if len(reqs) != 2 {
			t.Fatalf("got %d calls, want 2", len(reqs))
		}
		for i, r := range reqs {
			if r.Req == req || string(r.Body) != "payload" || r.Req.GetBody == nil {
				t.Errorf("attempt %d: own request %v, body %q, GetBody set %v; want a copy with the buffered body",
					i+1, r.Req != req, r.Body, r.Req.GetBody != nil)
			}
		}
		if req.Body != body || req.GetBody != nil {
			t.Error("caller's request was changed")
		}
	})
}

func TestRetryOverridesMaxRetries(t *testing.T) {
	for _, tt := range []struct {
		name      string
		n         int
		wantCalls int
	}{{"off", 0, 1}, {"more", 5, 6}, {"negative is off", -1, 1}} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := fakert.Status(503)
				ctx := middleware.WithOverrides(context.Background(), middleware.Overrides{MaxRetries: &tt.n})
				s := fixedSettings()
				s.MaxBackoff = time.Second
				resp, err := middleware.Retry(s, middleware.RetryOptions{})(rt).RoundTrip(newReq(t, ctx, "GET", ""))
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
				if rt.Calls() != tt.wantCalls {
					t.Fatalf("got %d calls, want %d", rt.Calls(), tt.wantCalls)
				}
			})
		})
	}
}

func BenchmarkBare(b *testing.B) { benchRT(b, prebuilt()) }

func BenchmarkRetry(b *testing.B) {
	b.Run("no budget", func(b *testing.B) {
		benchRT(b, middleware.Retry(middleware.DefaultRetrySettings(), middleware.RetryOptions{})(prebuilt()))
	})
	b.Run("budget", func(b *testing.B) {
		s := middleware.DefaultRetrySettings()
		benchRT(b, middleware.Retry(s, middleware.RetryOptions{Budget: middleware.NewBudget(s.Budget, middleware.BudgetOptions{})})(prebuilt()))
	})
	b.Run("budget inner keeps request", func(b *testing.B) {
		s := middleware.DefaultRetrySettings()
		benchRT(b, middleware.Retry(s, middleware.RetryOptions{Budget: middleware.NewBudget(s.Budget, middleware.BudgetOptions{})})(prebuilt()))
	})
}

func TestIsPermanent(t *testing.T) {
	cert := &x509.Certificate{}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"unknown authority", x509.UnknownAuthorityError{Cert: cert}, true},
		{"certificate invalid", x509.CertificateInvalidError{Cert: cert, Reason: x509.Expired}, true},
		{"hostname", x509.HostnameError{Certificate: cert, Host: "h"}, true},
		{"system roots", x509.SystemRootsError{}, true},
		{"tls verification", &tls.CertificateVerificationError{Err: errors.New("x")}, true},
		{"wrapped in url.Error", &url.Error{Op: "Get", URL: "https://h", Err: x509.UnknownAuthorityError{Cert: cert}}, true},
		{"wrapped with %w", fmt.Errorf("dial: %w", x509.HostnameError{Certificate: cert, Host: "h"}), true},
		{"url parse", &url.Error{Op: "parse", URL: "%zz", Err: url.EscapeError("%zz")}, true},
		{"unsupported scheme", errors.New(`unsupported protocol scheme "ftp"`), true},
		{"no host", errors.New("http: no Host in request URL"), true},
		{"nil URL", errors.New("http: nil Request.URL"), true},
		{"invalid header", errors.New(`net/http: invalid header field name "a b"`), true},
		{"invalid method", errors.New(`net/http: invalid method "G T"`), true},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, false},
		{"unexpected EOF", io.ErrUnexpectedEOF, false},
		{"get error (not parse)", &url.Error{Op: "Get", URL: "http://h", Err: io.EOF}, false},
		{"deadline (attempt timeout)", context.DeadlineExceeded, false},
		{"dns", &net.DNSError{Err: "no such host", Name: "h", IsNotFound: true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := middleware.IsPermanent(tt.err); got != tt.want {
				t.Fatalf("IsPermanent(%v): got %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
