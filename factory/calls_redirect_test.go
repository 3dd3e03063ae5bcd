package factory_test

import (
	"net/http"
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
