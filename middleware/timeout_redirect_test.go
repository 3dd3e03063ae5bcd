package middleware_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-http/switchboard/middleware"
)

// redirecting answers each request after delay: a 302 to next[path] when
// the path has a next hop, else 200. It sets Response.Request, as
// http.Transport does, and honours the request's context while it waits.
func redirecting(delay time.Duration, next map[string]string) http.RoundTripper {
	return middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if req.Body != nil {
			req.Body.Close()
		}
		timer := time.NewTimer(delay)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
		resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: req}
		if loc, ok := next[req.URL.Path]; ok {
			resp.StatusCode = http.StatusFound
			resp.Header.Set("Location", loc)
		}
		return resp, nil
	})
}

// TestTimeoutIsNotRestartedOnEveryRedirectHop: http.Client runs the
// transport once per redirect hop, and the Timeout layer used to start its
// deadline again at each, so a 1s timeout let two 600ms hops answer 200
// after 1.2s. The timeout bounds the whole call, as http.Client.Timeout
// does: it fires at 1s. Overrides still replace it, and a hop on another
// route counts that route's timeout from the start of the call.
func TestTimeoutIsNotRestartedOnEveryRedirectHop(t *testing.T) {
	tests := []struct {
		name     string
		rt       func(next http.RoundTripper) http.RoundTripper
		ctx      func(context.Context) context.Context
		path     string
		wantErr  bool
		wantTime time.Duration
	}{
		{name: "1s over two 600ms hops", path: "/a", wantErr: true, wantTime: time.Second,
			rt: func(next http.RoundTripper) http.RoundTripper {
				return middleware.Timeout(time.Second, middleware.TimeoutOptions{})(next)
			}},
		{name: "1.5s over two 600ms hops", path: "/a", wantTime: 1200 * time.Millisecond,
			rt: func(next http.RoundTripper) http.RoundTripper {
				return middleware.Timeout(1500*time.Millisecond, middleware.TimeoutOptions{})(next)
			}},
		{name: "1s over three 400ms hops", path: "/x", wantErr: true, wantTime: time.Second,
			rt: func(next http.RoundTripper) http.RoundTripper {
				return middleware.Timeout(time.Second, middleware.TimeoutOptions{})(next)
			}},
		{name: "an override of 1s over a configured minute", path: "/a", wantErr: true, wantTime: time.Second,
			rt: func(next http.RoundTripper) http.RoundTripper {
				return middleware.Timeout(time.Minute, middleware.TimeoutOptions{})(next)
			},
			ctx: func(ctx context.Context) context.Context {
				d := time.Second
				return middleware.WithOverrides(ctx, middleware.Overrides{Timeout: &d})
			}},
		{name: "a route of 1s after a hop on a route of 5s", path: "/b5", wantErr: true, wantTime: time.Second,
			rt: routedTimeouts},
		{name: "a route of 5s after a hop on a route of 1s", path: "/a1", wantTime: 1200 * time.Millisecond,
			rt: routedTimeouts},
		{name: "a route of 1s after a hop on a route without a timeout", path: "/n0", wantErr: true, wantTime: time.Second,
			rt: routedTimeouts},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				delay := 600 * time.Millisecond
				next := map[string]string{"/a": "/b", "/b5": "/a1x", "/a1": "/b5x", "/n0": "/a1x"}
				if tt.path == "/x" {
					delay, next = 400*time.Millisecond, map[string]string{"/x": "/y", "/y": "/z"}
				}
				client := &http.Client{Transport: tt.rt(redirecting(delay, next))}
				ctx := context.Background()
				if tt.ctx != nil {
					ctx = tt.ctx(ctx)
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test"+tt.path, nil)
				start := time.Now()
				resp, err := client.Do(req)
				elapsed := time.Since(start)
				if err == nil {
					resp.Body.Close()
				}
				var te *middleware.TimeoutError
				if tt.wantErr != errors.As(err, &te) || elapsed != tt.wantTime {
					t.Fatalf("got %v after %v; want a *TimeoutError %v after %v", err, elapsed, tt.wantErr, tt.wantTime)
				}
			})
		})
	}
}

// routedTimeouts routes /a1… to a 1s timeout, /b5… to a 5s one and /n0 to
// none.
func routedTimeouts(next http.RoundTripper) http.RoundTripper {
	routes, err := middleware.NewRoutes("/a1", "/a1x", "/b5", "/b5x", "/n0")
	if err != nil {
		panic(err)
	}
	one := middleware.Timeout(time.Second, middleware.TimeoutOptions{})(next)
	five := middleware.Timeout(5*time.Second, middleware.TimeoutOptions{})(next)
	none := middleware.Timeout(0, middleware.TimeoutOptions{})(next)
	return middleware.Router(routes, map[string]http.RoundTripper{"/a1": one, "/a1x": one, "/b5": five, "/b5x": five, "/n0": none}, next)
}

// TestResentRedirectedRequestStartsItsOwnTimeout: the Timeout layer left
// the call's start on the chain of the response the caller got back, so a
// later call that re-sent a request of that chain (a Clone of
// resp.Request keeps its req.Response), or that linked its request to the
// redirect itself, inherited the old call's start and
// timed out at once. Each call starts its own timeout, as
// http.Client.Timeout starts on every Do; only the hop http.Client sends
// next counts from the call's start.
func TestResentRedirectedRequestStartsItsOwnTimeout(t *testing.T) {
	for _, resend := range []struct {
		name string
		req  func(ctx context.Context, resp *http.Response) *http.Request
	}{
		{"a clone", func(ctx context.Context, resp *http.Response) *http.Request { return resp.Request.Clone(ctx) }},
		{"a request linked to the redirect by its caller", func(ctx context.Context, resp *http.Response) *http.Request {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/b", nil)
			req.Response = resp.Request.Response
			return req
		}},
	} {
		t.Run(resend.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				client := &http.Client{Transport: middleware.Timeout(time.Second, middleware.TimeoutOptions{})(
					redirecting(400*time.Millisecond, map[string]string{"/a": "/b"}))}
				resp, err := client.Get("http://svc.test/a")
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.Request.Response == nil {
					t.Fatal("the response of the second hop has no chain")
				}
				time.Sleep(time.Minute) // the first call's timeout is long past
				start := time.Now()
				resp2, err := client.Do(resend.req(context.Background(), resp))
				if err != nil {
					t.Fatalf("a new call failed after %v: %v", time.Since(start), err)
				}
				resp2.Body.Close()
				if got := time.Since(start); got != 400*time.Millisecond {
					t.Errorf("the new call took %v, want 400ms", got)
				}
			})
		})
	}
}
