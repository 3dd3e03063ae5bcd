package factory_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
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
