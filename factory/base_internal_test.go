package factory

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/switchboard-http/switchboard/config"
)

func TestBaseTransportIsBuiltOnFirstUse(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	d := config.Default()
	cfg := config.Config{Defaults: d, Clients: map[string]config.ClientConfig{"used": d, "idle": d}}
	r, err := New(cfg, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	pipe := func(name string) *pipeline {
		for i, n := range r.names {
			if n == name {
				return r.gen.Load().pipes[i]
			}
		}
		t.Fatalf("no client %q", name)
		return nil
	}
	if pipe("used").base.t.Load() != nil || pipe("idle").base.t.Load() != nil {
		t.Fatal("a transport was built at load time")
	}
	resp, err := r.Get("used").Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if pipe("used").base.t.Load() == nil {
		t.Error("the called client has no transport")
	}
	if pipe("idle").base.t.Load() != nil {
		t.Error("the client never called has a transport")
	}
	// A reload that changes nothing keeps the built transport, and its
	// connections.
	built := pipe("used").base.t.Load()
	cfg.Clients["idle"] = func() config.ClientConfig { c := d; c.Retry.MaxRetries = 1; return c }()
	if err := r.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	if pipe("used").base.t.Load() != built {
		t.Error("an unchanged client's transport was rebuilt by a reload")
	}
}
