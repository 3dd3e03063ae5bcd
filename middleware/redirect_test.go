package middleware_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-http/switchboard/middleware"
)

// hop returns a request to url that follows resp, as http.Client links a
// redirect hop.
func hop(url string, resp *http.Response) *http.Request {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Response = resp
	return req
}

// chain returns a request after n redirect hops from first.
func chain(first *http.Request, n int) *http.Request {
	req := first
	for range n {
		req = hop("http://svc.test/next", &http.Response{StatusCode: http.StatusFound, Request: req})
	}
	return req
}

func TestRedirects(t *testing.T) {
	first, _ := http.NewRequest(http.MethodGet, "http://svc.test/", nil)
	// A broken link, as httptest.ResponseRecorder.Result() gives: a
	// Response without its Request.
	rec := httptest.NewRecorder()
	rec.WriteHeader(http.StatusFound)
	broken := hop("http://svc.test/b", rec.Result())
	for _, tt := range []struct {
		name      string
		req       *http.Request
		wantFirst *http.Request
		wantHops  int
		wantOK    bool
	}{
		{"no redirect", first, first, 0, true},
		{"two hops", chain(first, 2), first, 2, true},
		{"the longest chain followed", chain(first, middleware.MaxRedirectChain), first, middleware.MaxRedirectChain, true},
		{"a longer chain", chain(first, middleware.MaxRedirectChain+1), nil, middleware.MaxRedirectChain, false},
		{"broken at the previous hop", broken, nil, 1, false},
		{"broken further back", chain(broken, 2), nil, 3, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, hops, ok := middleware.Redirects(tt.req)
			if f != tt.wantFirst || hops != tt.wantHops || ok != tt.wantOK {
				t.Errorf("got first %p, %d hops, ok %v; want %p, %d, %v", f, hops, ok, tt.wantFirst, tt.wantHops, tt.wantOK)
			}
		})
	}
}

// TestBrokenRedirectChainIsReadAlikeByEveryLayer: the redirect chain was
// walked in four places with their own depth limits and their own answer
// for a broken chain, so a hop whose chain broke further back got no
// credential from Auth or Headers while Timeout counted it from the start
// it found one hop back, and a chain of 150 hops failed the credential
// rules closed while the Timeout layer went on. Every layer now reads the
// chain through Redirects: a broken or endless chain gets no credential
// and a deadline of its own.
func TestBrokenRedirectChainIsReadAlikeByEveryLayer(t *testing.T) {
	rec := httptest.NewRecorder()
	rec.WriteHeader(http.StatusFound)
	brokenFirst := func(url string) *http.Request { return hop(url, rec.Result()) }
	endless := func(url string) *http.Request {
		first, _ := http.NewRequest(http.MethodGet, "http://svc.test/", nil)
		return hop(url, &http.Response{StatusCode: http.StatusFound, Request: chain(first, middleware.MaxRedirectChain+50)})
	}
	for _, tt := range []struct {
		name  string
		start func(url string) *http.Request
	}{
		{"broken further back", brokenFirst},
		{"longer than MaxRedirectChain", endless},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var sent []*http.Request
				rt := middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
					sent = append(sent, req)
					if err := req.Context().Err(); err != nil {
						return nil, err
					}
					resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: req}
					if req.URL.Path == "/a" {
						resp.StatusCode = http.StatusFound
						resp.Header.Set("Location", "/b")
					}
					return resp, nil
				})
				layers := middleware.Chain(
					middleware.Timeout(time.Second, middleware.TimeoutOptions{}),
					middleware.Headers(map[string]string{"X-Api-Key": "k"}, middleware.HeadersOptions{}),
					middleware.Auth(middleware.AuthSettings{Host: "svc.test"}, middleware.AuthOptions{Credential: middleware.Credential{Bearer: "tok"}}),
				)(rt)
				// A hop on a chain that is already broken (or endless):
				// its redirect response carries the Timeout's call start.
				resp, err := layers.RoundTrip(tt.start("http://svc.test/a"))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				time.Sleep(time.Minute) // that start is long past
				resp, err = layers.RoundTrip(hop("http://svc.test/b", resp))
				if err != nil {
					t.Fatalf("the next hop failed at once: %v", err)
				}
				resp.Body.Close()
				for i, req := range sent {
					if req.Header.Get("Authorization") != "" || req.Header.Get("X-Api-Key") != "" {
						t.Errorf("hop %d on a broken chain got a credential: %v", i+1, req.Header)
					}
				}
			})
		})
	}
}
