package middleware_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/internal/logcapture"
	"github.com/switchboard-http/switchboard/middleware"
)

// credHeaders are the `headers:` of the tests below: three credentials and
// one header that is none.
var credHeaders = map[string]string{
	"X-Api-Key":     "key-zzz",
	"Cookie":        "session=ck-zzz",
	"Authorization": "Bearer authz-zzz",
	"X-Trace-Tag":   "tag-1",
}

// TestCredentialHeadersAreNotSentToAnotherOriginOnRedirect: credential
// headers from `headers:` (Authorization, Cookie, X-Api-Key) used to be
// added on every redirect hop, to any host, where net/http itself drops
// them when a redirect leaves the domain. They follow auth's origin rule:
// sent on the call's first request and on hops to that request's origin
// (scheme, host and port), to no other host, port or subdomain; one WARN
// per pair of hosts names both, never a value. Real redirects between two
// host names and two ports on 127.0.0.1.
func TestCredentialHeadersAreNotSentToAnotherOriginOnRedirect(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]http.Header{} // host+path -> the headers it got
	var p1, p2 string                // the two listeners' ports
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Host+r.URL.Path] = r.Header.Clone()
		mu.Unlock()
		switch r.URL.Path {
		case "/to-same":
			http.Redirect(w, r, "/landing-same", http.StatusFound)
		case "/to-other-host":
			http.Redirect(w, r, "http://b.test:"+p1+"/landing-host", http.StatusFound)
		case "/to-other-port":
			http.Redirect(w, r, "http://a.test:"+p2+"/landing-port", http.StatusFound)
		case "/to-subdomain":
			http.Redirect(w, r, "http://sub.a.test:"+p1+"/landing-sub", http.StatusFound)
		case "/via-other-host":
			http.Redirect(w, r, "http://b.test:"+p1+"/back", http.StatusFound)
		case "/back":
			http.Redirect(w, r, "http://a.test:"+p1+"/landing-back", http.StatusFound)
		}
	})
	srv1, srv2 := httptest.NewServer(handler), httptest.NewServer(handler)
	t.Cleanup(srv1.Close)
	t.Cleanup(srv2.Close)
	_, p1, _ = net.SplitHostPort(srv1.Listener.Addr().String())
	_, p2, _ = net.SplitHostPort(srv2.Listener.Addr().String())

	base := http.DefaultTransport.(*http.Transport).Clone()
	base.Proxy = nil
	var d net.Dialer
	base.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		return d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port)) // every name is the loopback
	}
	t.Cleanup(base.CloseIdleConnections)
	logger, logs := logcapture.New()
	ev := &middleware.Events{Client: "billing", Logger: logger}
	c := &http.Client{Transport: middleware.Headers(credHeaders, middleware.HeadersOptions{Events: ev})(base)}
	for _, path := range []string{"/to-same", "/to-other-host", "/to-other-port", "/to-subdomain", "/via-other-host"} {
		resp, err := c.Get("http://a.test:" + p1 + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}

	mu.Lock()
	defer mu.Unlock()
	want := map[string]bool{ // host+path -> credentials expected
		"a.test:" + p1 + "/to-same":         true, // the first request
		"a.test:" + p1 + "/landing-same":    true, // the same origin
		"a.test:" + p1 + "/to-other-host":   true,
		"b.test:" + p1 + "/landing-host":    false, // another host name, same port
		"a.test:" + p1 + "/to-other-port":   true,
		"a.test:" + p2 + "/landing-port":    false, // another port, same name
		"a.test:" + p1 + "/to-subdomain":    true,
		"sub.a.test:" + p1 + "/landing-sub": false, // net/http would keep them for a subdomain
		"a.test:" + p1 + "/via-other-host":  true,
		"b.test:" + p1 + "/back":            false,
		"a.test:" + p1 + "/landing-back":    true, // back on the first request's origin
	}
	for hop, cred := range want {
		h, ok := seen[hop]
		if !ok {
			t.Errorf("%s: never reached", hop)
			continue
		}
		if h.Get("X-Trace-Tag") != "tag-1" {
			t.Errorf("%s: got X-Trace-Tag %q, want tag-1 on every hop", hop, h.Get("X-Trace-Tag"))
		}
		for _, name := range []string{"X-Api-Key", "Cookie", "Authorization"} {
			if got := h.Get(name) == credHeaders[name]; got != cred {
				t.Errorf("%s: got %s %q, want it sent: %v", hop, name, h.Get(name), cred)
			}
		}
	}
	recs := logs.Records(t, "credential headers withheld: redirect left the origin of the call's first request")
	if len(recs) != 3 { // a.test:p1 > b.test:p1, > a.test:p2, > sub.a.test:p1; the second a > b is remembered
		t.Errorf("got %d WARNs, want 3 (one per pair of hosts):\n%s", len(recs), logs)
	}
	for _, r := range recs {
		if r["first_host"] != "http://a.test:"+p1 || r["host"] == nil || r["client"] != "billing" || r["headers"] != "Authorization,Cookie,X-Api-Key" {
			t.Errorf("WARN %v: want first_host, host, the client and the header names", r)
		}
	}
	if strings.Contains(logs.String(), "zzz") {
		t.Errorf("the log holds a credential:\n%s", logs)
	}
}

// TestCredentialHeadersWithheldFromARedirectOfUnknownOrigin: a redirect
// hop whose chain is broken (a Response without its Request) gets no
// credential header: the layer fails closed, as Auth does.
func TestCredentialHeadersWithheldFromARedirectOfUnknownOrigin(t *testing.T) {
	rt := fakert.New()
	h := middleware.Headers(credHeaders, middleware.HeadersOptions{})(rt)
	req, _ := http.NewRequest(http.MethodGet, "https://a.test/", nil)
	req.Response = &http.Response{StatusCode: http.StatusFound} // no Request
	resp, err := h.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := rt.Requests()[0].Header
	if got.Get("Authorization") != "" || got.Get("Cookie") != "" || got.Get("X-Api-Key") != "" || got.Get("X-Trace-Tag") != "tag-1" {
		t.Fatalf("got headers %v, want only X-Trace-Tag", got)
	}
	// A scheme change on the same host is another origin too.
	rt = fakert.New()
	h = middleware.Headers(credHeaders, middleware.HeadersOptions{})(rt)
	resp, err = h.RoundTrip(redirectOf(t, redirectOf(t, nil, "https://a.test/"), "http://a.test/"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := rt.Requests()[0].Header; got.Get("Authorization") != "" {
		t.Fatalf("https -> http: got Authorization %q, want none", got.Get("Authorization"))
	}
}

// TestHeadersAndAuthPinCredentialsToTheirOwnOrigins: Headers' doc said its
// credential headers follow "the origin rule of Auth", but the two pin to
// different origins: Headers to the origin of the call's first request,
// Auth to auth.host with the scheme of the call's first request to it. A
// call that starts on another host and is redirected to auth.host shows
// the difference, which the docs now state.
func TestHeadersAndAuthPinCredentialsToTheirOwnOrigins(t *testing.T) {
	var sent []http.Header
	rt := middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		sent = append(sent, req.Header.Clone())
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
	})
	layers := middleware.Chain(
		middleware.Headers(map[string]string{"X-Api-Key": "k"}, middleware.HeadersOptions{}),
		middleware.Auth(middleware.AuthSettings{Host: "svc.test"}, middleware.AuthOptions{Credential: middleware.Credential{Bearer: "tok"}}),
	)(rt)
	first, _ := http.NewRequest(http.MethodGet, "http://other.test/", nil)
	resp, err := layers.RoundTrip(first)
	if err != nil {
		t.Fatal(err)
	}
	next, _ := http.NewRequest(http.MethodGet, "https://svc.test/", nil)
	next.Response = &http.Response{StatusCode: http.StatusFound, Request: resp.Request}
	if _, err := layers.RoundTrip(next); err != nil {
		t.Fatal(err)
	}
	if len(sent) != 2 {
		t.Fatalf("%d requests sent, want 2", len(sent))
	}
	if sent[0].Get("X-Api-Key") != "k" || sent[0].Get("Authorization") != "" {
		t.Errorf("first request to other.test: %v, want X-Api-Key only", sent[0])
	}
	if sent[1].Get("X-Api-Key") != "" || sent[1].Get("Authorization") != "Bearer tok" {
		t.Errorf("redirect to auth.host: %v, want Authorization only", sent[1])
	}
}
