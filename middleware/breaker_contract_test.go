package middleware_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-http/switchboard/middleware"
)

// TestBreakerTimeoutLayerDeadlineIsAFailure guards the one difference
// between a deadline of the caller and one of the Timeout layer: a backend
// that hangs must open the breaker.
func TestBreakerTimeoutLayerDeadlineIsAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newBk(bkSettings(func(s *middleware.BreakerSettings) { s.FailureThreshold = 2 }), middleware.BreakerOptions{})
		h.rt = middleware.Chain(middleware.Timeout(time.Second, middleware.TimeoutOptions{}), h.b.Middleware())(h.f)
		gate := h.f.block()
		defer close(gate)
		for range 2 {
			if err := h.do(t, context.Background(), "http://svc.test/"); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v, want a timeout", err)
			}
		}
		h.wantState(t, middleware.BreakerOpen)
	})
}

func TestBreakerFailureClassification(t *testing.T) {
	tests := []struct {
		name     string
		status   int // 0: transport error
		hook     func(*http.Response, error) bool
		wantOpen bool
	}{
		{"429 is a success", 429, nil, false},
		{"404 is a success", 404, nil, false},
		{"400 is a success", 400, nil, false},
		{"200 is a success", 200, nil, false},
		{"500 is a failure", 500, nil, true},
		{"503 is a failure", 503, nil, true},
		{"transport error is a failure", 0, nil, true},
		{"hook: 429 is a failure", 429, func(r *http.Response, err error) bool {
			return middleware.IsBreakerFailure(r, err) || r.StatusCode == 429
		}, true},
		{"hook: 503 is a success", 503, func(*http.Response, error) bool { return false }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newBk(bkSettings(nil), middleware.BreakerOptions{IsFailure: tt.hook})
				for range 20 {
					h.call(t, tt.status)
				}
				if got := h.b.State() == middleware.BreakerOpen; got != tt.wantOpen {
					t.Fatalf("open = %v after 20 calls, want %v", got, tt.wantOpen)
				}
			})
		})
	}
}

// bkBody is a request body that records its Close.
type bkBody struct {
	io.Reader
	closed atomic.Bool
}

func (b *bkBody) Close() error { b.closed.Store(true); return nil }

func TestBreakerOpenErrorThroughHTTPClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newBk(bkSettings(nil), middleware.BreakerOptions{})
		h.calls(t, 3, 500)
		time.Sleep(4 * time.Second)
		client := &http.Client{Transport: h.rt}
		body := &bkBody{Reader: strings.NewReader("payload")}
		req, err := http.NewRequest(http.MethodPost, "http://svc.test/v1/items", body)
		if err != nil {
			t.Fatal(err)
		}
		before := h.f.count()
		resp, err := client.Do(req)
		if resp != nil {
			t.Fatalf("got a response %v with error %v", resp.Status, err)
		}
		var ue *url.Error
		if !errors.As(err, &ue) {
			t.Fatalf("err = %T %v, want a *url.Error", err, err)
		}
		if !errors.Is(err, middleware.ErrCircuitOpen) {
			t.Errorf("errors.Is(%v, ErrCircuitOpen) = false", err)
		}
		var ce *middleware.CircuitOpenError
		if !errors.As(err, &ce) || ce.RetryIn != 6*time.Second || ce.Host != "" {
			t.Fatalf("CircuitOpenError = %+v, want RetryIn 6s, no host", ce)
		}
		if want := "switchboard: circuit breaker is open: next probe in 6s"; ce.Error() != want {
			t.Errorf("Error() = %q, want %q", ce.Error(), want)
		}
		if !body.closed.Load() {
			t.Error("the request body of a rejected call was not closed")
		}
		if h.f.count() != before {
			t.Error("a rejected call reached the backend")
		}
	})
}

func TestBreakerLeavesRequestUnchanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newBk(bkSettings(func(s *middleware.BreakerSettings) { s.Scope = middleware.ScopeHost }), middleware.BreakerOptions{})
		ctx := context.Background()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/a?x=1", nil)
		req.Header.Set("X-Test", "1")
		var seen *http.Request
		rt := h.b.Middleware()(middleware.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
			seen = r
			return &http.Response{StatusCode: 200, Body: http.NoBody, Request: r}, nil
		}))
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if seen != req || req.URL.String() != "http://svc.test/a?x=1" || req.Header.Get("X-Test") != "1" || req.Context() != ctx {
			t.Error("the breaker changed or replaced the request")
		}
	})
}

func TestBreakerDisabledPassesThrough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newBk(middleware.BreakerSettings{}, middleware.BreakerOptions{})
		h.calls(t, 50, 500)
		if h.f.count() != 50 {
			t.Fatalf("backend calls = %d, want 50", h.f.count())
		}
		h.wantState(t, middleware.BreakerClosed)
	})
}

func TestBreakerStateString(t *testing.T) {
	tests := []struct {
		s    middleware.BreakerState
		want string
	}{
		{middleware.BreakerClosed, "closed"},
		{middleware.BreakerOpen, "open"},
		{middleware.BreakerHalfOpen, "half_open"},
		{middleware.BreakerState(7), "BreakerState(7)"},
	}
	for _, tt := range tests {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("%d.String() = %q, want %q", int(tt.s), got, tt.want)
		}
	}
}
