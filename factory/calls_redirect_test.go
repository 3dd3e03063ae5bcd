package factory_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/fakert"
)

// TestCallsCountRedirectOnce checks that a Do redirected once is one
// logical call in Status, though http.Client runs the pipeline twice.
func TestCallsCountRedirectOnce(t *testing.T) {
	ft := fakert.New(
		fakert.Step{Status: http.StatusFound, Header: http.Header{"Location": {"/b"}}},
		fakert.Step{Status: http.StatusOK},
	)
	r, err := factory.New(config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": config.Default()}},
		factory.Options{Base: ft, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	resp, err := r.Get("billing").Get("https://billing.internal/a")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := ft.Calls(); n != 2 {
		t.Fatalf("transport saw %d requests, want 2 (a redirect and its hop)", n)
	}
	if got := clientStatus(t, r, "billing"); got.Calls != 1 || got.Failures != 0 || got.Rejections != 0 {
		t.Errorf("Status: calls %d, failures %d, rejections %d; want 1, 0, 0", got.Calls, got.Failures, got.Rejections)
	}
}

// TestCallsCountRedirectLimit checks that a redirect answer that ends the
// call, because transport.max_redirects stops the chain (0: the redirect
// is returned), or because http.Client cannot resend the body of a 307,
// is counted.
func TestCallsCountRedirectLimit(t *testing.T) {
	tests := []struct {
		name   string
		max    int
		status int
		body   bool
	}{
		{"max_redirects 0", 0, http.StatusFound, false},
		{"max_redirects 1, chain of 2", 1, http.StatusFound, false},
		{"307 with a body not resendable", 10, http.StatusTemporaryRedirect, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := fakert.New(fakert.Step{Status: tt.status, Header: http.Header{"Location": {"/b"}}})
			cc := config.Default()
			cc.Transport.MaxRedirects = tt.max
			r, err := factory.New(config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": cc}},
				factory.Options{Base: ft, Logger: discard()})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			req, _ := http.NewRequest(http.MethodGet, "https://billing.internal/a", nil)
			if tt.body {
				req, _ = http.NewRequest(http.MethodPost, "https://billing.internal/a", io.NopCloser(strings.NewReader("x")))
			}
			if resp, err := r.Get("billing").Do(req); err == nil {
				resp.Body.Close()
			}
			if got := clientStatus(t, r, "billing"); got.Calls != 1 {
				t.Errorf("Status: calls %d after %d requests, want 1", got.Calls, ft.Calls())
			}
		})
	}
}
