package factory_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/logcapture"
	"github.com/switchboard-http/switchboard/middleware"
)

// TestClientTimeoutBoundsItsRedirects runs the whole pipeline (retries,
// hooks and all) over a base that answers /a with a redirect to /b, each
// hop after 600ms: the client's 1s timeout fires at 1s, across both hops,
// where it used to start again at the second hop and let the call answer
// 200 after 1.2s.
func TestClientTimeoutBoundsItsRedirects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			select {
			case <-time.After(600 * time.Millisecond):
			case <-req.Context().Done():
				return nil, req.Context().Err()
			}
			resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: req}
			if req.URL.Path == "/a" {
				resp.StatusCode = http.StatusFound
				resp.Header.Set("Location", "/b")
			}
			return resp, nil
		})
		c := config.Default()
		c.Timeout = time.Second
		r, err := factory.New(config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": c}},
			factory.Options{Base: base, Logger: discard()})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://billing.test/a", nil)
		start := time.Now()
		resp, err := r.Get("billing").Do(req)
		if err == nil {
			resp.Body.Close()
		}
		var te *middleware.TimeoutError
		if elapsed := time.Since(start); !errors.As(err, &te) || elapsed != time.Second {
			t.Fatalf("got %v after %v, want the client's timeout after 1s", err, elapsed)
		}
	})
}

// TestHeadersCredentialsStayOnTheCallsOrigin: a client's `headers:` that
// carry credentials (Authorization, Cookie, X-Api-Key) reach the call's
// first host and not the host a redirect sends the call to, which gets the
// other headers; one WARN names both hosts. They used to be added on every
// hop, to any host.
func TestHeadersCredentialsStayOnTheCallsOrigin(t *testing.T) {
	var mu sync.Mutex
	got := map[string]http.Header{}
	base := middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		mu.Lock()
		got[req.URL.Host] = req.Header.Clone()
		mu.Unlock()
		resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: req}
		if req.URL.Host == "billing.test" {
			resp.StatusCode = http.StatusFound
			resp.Header.Set("Location", "https://cdn.test/receipt")
		}
		return resp, nil
	})
	logger, logs := logcapture.New()
	r, _ := openFile(t, `
clients:
  billing:
    headers: {Authorization: "Bearer authz-zzz", Cookie: "sid=ck-zzz", X-Api-Key: key-zzz, User-Agent: billing/1}
`, factory.Options{Base: base, Logger: logger, NoWatch: true})
	resp, err := r.Get("billing").Get("https://billing.test/v1/charges/7")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	first, hop := got["billing.test"], got["cdn.test"]
	if first.Get("Authorization") != "Bearer authz-zzz" || first.Get("Cookie") != "sid=ck-zzz" || first.Get("X-Api-Key") != "key-zzz" {
		t.Errorf("the first request got %v, want every credential header", first)
	}
	if hop.Get("Authorization") != "" || hop.Get("Cookie") != "" || hop.Get("X-Api-Key") != "" || hop.Get("User-Agent") != "billing/1" {
		t.Errorf("the redirect to another host got %v, want User-Agent and no credential", hop)
	}
	recs := logs.Records(t, "credential headers withheld: redirect left the origin of the call's first request")
	if len(recs) != 1 || recs[0]["first_host"] != "https://billing.test" || recs[0]["host"] != "https://cdn.test" {
		t.Errorf("got WARNs %v, want one naming both hosts", recs)
	}
	if strings.Contains(logs.String(), "zzz") {
		t.Errorf("the log holds a credential:\n%s", logs)
	}
}
