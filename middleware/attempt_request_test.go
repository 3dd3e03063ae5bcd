package middleware_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/middleware"
)

// TestRetryClonedEveryAttemptThatNothingChanges: Retry gave every attempt
// its own Request.Clone (3 allocations for a GET) even when no layer below
// changed the request. With ReadOnlyBelow an attempt is sent as net/http's
// client sends a request: the caller's request itself when nothing
// differs, a shallow copy where the context or body differs, its own
// Header where the attempt header is set; the caller's request is never
// changed.
func TestRetryClonedEveryAttemptThatNothingChanges(t *testing.T) {
	for _, tc := range []struct {
		name      string
		method    string
		body      func() (*strings.Reader, *opaqueBody) // a GetBody body, or an opaque one (buffered)
		header    string
		retries   int
		steps     []fakert.Step
		sameFirst bool // attempt 1 is the caller's request itself
	}{
		{name: "success at once", method: "GET", retries: 3, steps: []fakert.Step{{}}, sameFirst: true},
		{name: "retry off", method: "GET", retries: 0, steps: []fakert.Step{{}}, sameFirst: true},
		{name: "503 then 200", method: "GET", retries: 3, steps: []fakert.Step{{Status: 503}, {}}, sameFirst: true},
		{name: "GetBody body", method: "PUT", retries: 3, steps: []fakert.Step{{Status: 503}, {}}, sameFirst: true,
			body: func() (*strings.Reader, *opaqueBody) { return strings.NewReader("payload"), nil }},
		{name: "buffered body", method: "PUT", retries: 3, steps: []fakert.Step{{Status: 503}, {}},
			body: func() (*strings.Reader, *opaqueBody) { return nil, &opaqueBody{r: strings.NewReader("payload")} }},
		{name: "attempt header", method: "GET", retries: 3, header: "X-Attempt", steps: []fakert.Step{{Status: 503}, {}}},
		{name: "attempt header, retry off", method: "GET", retries: 0, header: "X-Attempt", steps: []fakert.Step{{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				req := newReq(t, context.Background(), tc.method, "")
				wantBody := ""
				if tc.body != nil {
					sr, ob := tc.body()
					if sr != nil {
						var err error
						if req, err = http.NewRequest(tc.method, req.URL.String(), sr); err != nil {
							t.Fatal(err)
						}
					} else {
						req.Body, req.ContentLength = ob, 7
					}
					wantBody = "payload"
				}
				req.Header.Set("X-Caller", "1")
				wantGetBody := req.GetBody != nil
				rt := fakert.New(tc.steps...)
				s := fixedSettings()
				s.MaxRetries, s.AttemptHeader = tc.retries, tc.header
				resp, err := middleware.Retry(s, middleware.RetryOptions{ReadOnlyBelow: true})(rt).RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
				seen := rt.Requests()
				if len(seen) != len(tc.steps) {
					t.Fatalf("attempts: got %d, want %d", len(seen), len(tc.steps))
				}
				for i, r := range seen {
					n := i + 1
					if got := r.Req == req; got != (n == 1 && tc.sameFirst) {
						t.Errorf("attempt %d is the caller's request: %v, want %v", n, got, !got)
					}
					if got := middleware.AttemptFrom(r.Req.Context()); got != n {
						t.Errorf("attempt %d: AttemptFrom = %d", n, got)
					}
					if got := string(r.Body); got != wantBody {
						t.Errorf("attempt %d sent body %q, want %q", n, got, wantBody)
					}
					if got := r.Header.Get("X-Caller"); got != "1" {
						t.Errorf("attempt %d: X-Caller = %q, want the caller's 1", n, got)
					}
					if tc.header != "" {
						if got, want := r.Header.Get(tc.header), string(rune('0'+n)); got != want {
							t.Errorf("attempt %d: %s = %q, want %q", n, tc.header, got, want)
						}
					}
				}
				// The caller's request is as the caller made it.
				if len(req.Header) != 1 || req.Header.Get("X-Caller") != "1" {
					t.Errorf("caller's header changed: %v", req.Header)
				}
				if req.Context() != context.Background() {
					t.Error("caller's context changed")
				}
				if got := req.GetBody != nil; got != wantGetBody {
					t.Errorf("caller's GetBody set: %v, want %v", got, wantGetBody)
				}
			})
		})
	}
}

// TestRetryWithoutReadOnlyBelowClonesEveryAttempt: the zero value keeps
// the clone per attempt that layers below may change in place.
func TestRetryWithoutReadOnlyBelowClonesEveryAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		req := newReq(t, context.Background(), "GET", "")
		change := func(r *http.Request) { r.Header.Set("X-Changed", "1"); r.URL.Path = "/changed" }
		rt := fakert.New(fakert.Step{Status: 503, OnRequest: change}, fakert.Step{OnRequest: change})
		resp, err := middleware.Retry(fixedSettings(), middleware.RetryOptions{})(rt).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		for i, r := range rt.Requests() {
			if r.Req == req {
				t.Errorf("attempt %d is the caller's request, want a clone", i+1)
			}
		}
		if req.Header.Get("X-Changed") != "" || req.URL.Path != "/v1/items" {
			t.Errorf("caller's request changed: %v %s", req.Header, req.URL.Path)
		}
	})
}

// TestHedgeReadOnlyBelowGivesEveryCopyItsOwnRequest: hedged copies run
// concurrently, each with its own context, so each is its own request
// even when nothing below writes; with an attempt header each has its own
// Header. The caller's request is never changed.
func TestHedgeReadOnlyBelowGivesEveryCopyItsOwnRequest(t *testing.T) {
	for _, header := range []string{"", "X-Attempt"} {
		t.Run("header="+header, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := fakert.New(
					fakert.Step{Delay: time.Second, Body: "slow"},
					fakert.Step{Delay: 10 * ms, Body: "fast"},
				)
				r := retryFor(1)
				r.AttemptHeader = header
				h := middleware.Hedge(hedgeOn(100*ms, 1), r, middleware.HedgeOptions{ReadOnlyBelow: true})(rt)
				req := newReq(t, context.Background(), "GET", "")
				resp, err := h.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				if got := readAll(t, resp); got != "fast" {
					t.Errorf("body: got %q, want fast", got)
				}
				synctest.Wait()
				seen := rt.Requests()
				if len(seen) != 2 {
					t.Fatalf("copies: got %d, want 2", len(seen))
				}
				if seen[0].Req == req || seen[1].Req == req || seen[0].Req == seen[1].Req {
					t.Error("the copies share a request: each needs its own")
				}
				for i, s := range seen {
					if got := middleware.AttemptFrom(s.Req.Context()); got != i+1 {
						t.Errorf("copy %d: AttemptFrom = %d", i+1, got)
					}
					if header != "" {
						if got, want := s.Header.Get(header), string(rune('1'+i)); got != want {
							t.Errorf("copy %d: %s = %q, want %q", i+1, header, got, want)
						}
					}
				}
				if len(req.Header) != 0 || req.Context() != context.Background() {
					t.Errorf("caller's request changed: header %v", req.Header)
				}
			})
		})
	}
}
