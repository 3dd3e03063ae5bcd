package factory_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
)

// wrappedDefault stands for a process-wide wrapper of http.DefaultTransport
// (global tracing, an HTTP mocking library).
type wrappedDefault struct{ http.RoundTripper }

func TestDefaultTransportNotAnHTTPTransportIsALoadError(t *testing.T) {
	// Base transports are built on first use, but what can go wrong with
	// them is found at load time: here, nothing to clone.
	orig := http.DefaultTransport
	http.DefaultTransport = wrappedDefault{orig}
	defer func() { http.DefaultTransport = orig }()
	d := config.Default()
	_, err := factory.New(config.Config{Defaults: d, Clients: map[string]config.ClientConfig{"billing": d}}, factory.Options{Logger: discard()})
	if err == nil || !strings.Contains(err.Error(), "clients.billing.transport") || !strings.Contains(err.Error(), "DefaultTransport") {
		t.Fatalf("got %v, want a load error naming clients.billing.transport and http.DefaultTransport", err)
	}
}

func TestStatusShowsNoHashForAClientThatFailedToBuild(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := config.Default()
	d.Auth.Host = "billing.internal"
	d.Auth.BearerTokenFile = tok
	r, err := factory.New(config.Config{Defaults: d, Clients: map[string]config.ClientConfig{"billing": d}}, factory.Options{Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := os.Remove(tok); err != nil {
		t.Fatal(err)
	}
	// A name first seen now follows defaults, whose token file is gone.
	if _, err := r.Get("newcomer").Get("http://billing.internal/"); err == nil {
		t.Fatal("got no error from a client that failed to build")
	}
	found := false
	for _, cs := range r.Status().Clients {
		switch cs.Name {
		case "newcomer":
			found = true
			if cs.ConfigHash != "" {
				t.Errorf("newcomer: ConfigHash %q, want none: it runs no config", cs.ConfigHash)
			}
		case "billing":
			if cs.ConfigHash == "" {
				t.Error("billing: no ConfigHash for a client that runs its config")
			}
		}
	}
	if !found {
		t.Error("newcomer not in Status")
	}
}
