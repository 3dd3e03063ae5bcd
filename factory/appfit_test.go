package factory_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/atomicfile"
	"github.com/switchboard-http/switchboard/internal/eventrec"
	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/internal/logcapture"
	"github.com/switchboard-http/switchboard/middleware"
)

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestOpenBesideKubeletEnv is a pod of a Service named like the prefix:
// Open neither fails on the kubelet's links nor reads them, and says so in
// one DEBUG record.
func TestOpenBesideKubeletEnv(t *testing.T) {
	log, capture := logcapture.New()
	env := []string{
		"SVC_PORT=tcp://10.0.0.1:80", "SVC_PORT_80_TCP=tcp://10.0.0.1:80", "SVC_PORT_80_TCP_ADDR=10.0.0.1",
		"SVC_SERVICE_HOST=10.0.0.1", "SVC_SERVICE_PORT=80", "SVC_CLIENTS__BILLING__TIMEOUT=2s", "PATH=/bin",
	}
	r, err := factory.Open(context.Background(), factory.Options{
		File: writeTemp(t, "clients:\n  billing: {}\n"), NoWatch: true, EnvPrefix: "SVC_",
		Environ: func() []string { return env }, Logger: log,
	})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer r.Close()
	if got := clientStatus(t, r, "billing").Config.Timeout.String(); got != "2s" {
		t.Errorf("billing timeout: got %s, want 2s from SVC_CLIENTS__BILLING__TIMEOUT", got)
	}
	var recs []map[string]any
	for _, rec := range capture.Records(t, "") {
		if strings.Contains(rec["msg"].(string), "not switchboard's") {
			recs = append(recs, rec)
		}
	}
	if len(recs) != 1 || recs[0]["level"] != "DEBUG" {
		t.Fatalf("records about ignored env: got %v, want one DEBUG", recs)
	}
	names := recs[0]["names"].([]any)
	if len(names) != 5 || names[0] != "SVC_PORT" || slices.Contains(names, any("PATH")) {
		t.Errorf("ignored names: got %v, want the five SVC_ links only", names)
	}
}

// TestOpenBesideSectionNamedServices is a pod beside Services named
// svc-clients and svc-defaults: their links (SVC_CLIENTS_SERVICE_HOST, …)
// look like switchboard's names with one "_", and Open ignores them too.
func TestOpenBesideSectionNamedServices(t *testing.T) {
	env := []string{
		"SVC_CLIENTS_SERVICE_HOST=10.0.0.1", "SVC_CLIENTS_PORT=tcp://10.0.0.1:8080",
		"SVC_CLIENTS_PORT_8080_TCP_ADDR=10.0.0.1", "SVC_DEFAULTS_SERVICE_HOST=10.0.0.2",
		"SVC_CLIENTS__BILLING__TIMEOUT=2s",
	}
	r, err := factory.Open(context.Background(), factory.Options{
		File: writeTemp(t, "clients:\n  billing: {}\n"), NoWatch: true, EnvPrefix: "SVC_",
		Environ: func() []string { return env },
	})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer r.Close()
	if got := clientStatus(t, r, "billing").Config.Timeout.String(); got != "2s" {
		t.Errorf("billing timeout: got %s, want 2s from SVC_CLIENTS__BILLING__TIMEOUT", got)
	}
}

// TestRemovedClientWithEnvOverride removes a client from a watched file
// while an env variable tunes it: the reload applies, with one WARN
// naming the variable, and a second reload warns again.
func TestRemovedClientWithEnvOverride(t *testing.T) {
	log, capture := logcapture.New()
	file := writeTemp(t, "clients:\n  backend: {}\n  backend2: {}\n")
	env := []string{"SVC_CLIENTS__BACKEND__TIMEOUT=2s"}
	got := newReloads()
	r, err := factory.Open(context.Background(), factory.Options{
		File: file, EnvPrefix: "SVC_", Environ: func() []string { return env }, Logger: log,
		Debounce: testDebounce, OnReload: got.on,
	})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer r.Close()
	atomicfile.Write(t, file, "clients:\n  backend2: {timeout: 3s}\n")
	if e := got.next(t); e.Err != nil {
		t.Fatalf("reload after removing backend: got %v, want applied", e.Err)
	}
	if _, ok := r.Lookup("backend"); ok {
		t.Error("Lookup(backend): got defined, want removed")
	}
	if got := clientStatus(t, r, "backend2").Config.Timeout.String(); got != "3s" {
		t.Errorf("backend2 timeout: got %s, want 3s", got)
	}
	warns := capture.Records(t, "config: ignoring env variables and flags that name a client the config no longer defines; remove them at the next deploy")
	if len(warns) != 1 || warns[0]["level"] != "WARN" || !strings.Contains(capture.String(), "env SVC_CLIENTS__BACKEND__TIMEOUT") {
		t.Fatalf("WARNs: got %v, want one naming env SVC_CLIENTS__BACKEND__TIMEOUT", warns)
	}
	atomicfile.Write(t, file, "clients:\n  backend2: {timeout: 4s}\n")
	if e := got.next(t); e.Err != nil {
		t.Fatalf("second reload: %v", e.Err)
	}
	if n := len(capture.Records(t, warns[0]["msg"].(string))); n != 2 {
		t.Errorf("WARNs after two reloads: got %d, want one per reload", n)
	}
}

func TestOpenFailsOnEnvNamingUndefinedClient(t *testing.T) {
	_, err := factory.Open(context.Background(), factory.Options{
		File: writeTemp(t, "clients:\n  backend2: {}\n"), NoWatch: true, EnvPrefix: "SVC_",
		Environ: func() []string { return []string{"SVC_CLIENTS__BACKEND__TIMEOUT=2s"} },
	})
	if err == nil || !strings.Contains(err.Error(), `no client "backend"; did you mean backend2?`) {
		t.Fatalf("Open: got %v, want the typo caught at start-up", err)
	}
}

func TestRequire(t *testing.T) {
	file := writeTemp(t, "clients:\n  billing: {}\n")
	_, err := factory.Open(context.Background(), factory.Options{File: file, NoWatch: true, Require: []string{"billing", "search"}})
	if !errors.Is(err, factory.ErrRequiredClient) || !strings.Contains(err.Error(), `"search"`) {
		t.Fatalf("Open: got %v, want ErrRequiredClient naming search", err)
	}
	cfg := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": config.Default()}}
	if _, err := factory.New(config.Config{Defaults: config.Default()}, factory.Options{Require: []string{"billing"}}); !errors.Is(err, factory.ErrRequiredClient) {
		t.Fatalf("New: got %v, want ErrRequiredClient", err)
	}
	r, err := factory.Open(context.Background(), factory.Options{File: file, NoWatch: true, Require: []string{"billing"}})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer r.Close()
	atomicfile.Write(t, file, "clients:\n  other: {}\n")
	if err := r.Reload(); !errors.Is(err, factory.ErrRequiredClient) {
		t.Fatalf("Reload without billing: got %v, want rejected with ErrRequiredClient", err)
	}
	if _, ok := r.Lookup("billing"); !ok {
		t.Error("Lookup(billing) after the rejected reload: got undefined, want the old config serving")
	}
	if err := r.Apply(cfg); err != nil {
		t.Errorf("Apply with billing: %v", err)
	}
}

func TestOpenSection(t *testing.T) {
	file := writeTemp(t, "server:\n  listen: :8080\nhttp_clients:\n  clients:\n    billing:\n      timeout: 7s\n")
	r, err := factory.Open(context.Background(), factory.Options{File: file, NoWatch: true, Section: "http_clients"})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer r.Close()
	if got := clientStatus(t, r, "billing").Config.Timeout.String(); got != "7s" {
		t.Errorf("billing timeout: got %s, want 7s", got)
	}
	atomicfile.Write(t, file, "http_clients:\n  clients:\n    billing:\n      timeout: -1s\n")
	err = r.Reload()
	if err == nil || !strings.Contains(err.Error(), "http_clients.clients.billing.timeout") || !strings.Contains(err.Error(), "line 4") {
		t.Errorf("Reload: got %v, want the full path and the app file's line", err)
	}
}

// host echoes the URL each request reached, with the server's name.
func echoServer(t *testing.T, name string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/api/relative":
			http.Redirect(w, req, "landed", http.StatusFound)
			return
		case "/api/rooted":
			http.Redirect(w, req, "/landed", http.StatusFound)
			return
		}
		io.WriteString(w, name+" "+req.URL.Path)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func getText(t *testing.T, c *http.Client, url string) string {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("Get %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestBaseURL(t *testing.T) {
	a, b := echoServer(t, "a"), echoServer(t, "b")
	withBase := func(base string) config.Config {
		c := config.Default()
		c.BaseURL = base
		c.Routes = map[string]config.RouteConfig{}
		return config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": c}}
	}
	rec := &eventrec.Recorder{}
	r, err := factory.New(withBase(a.URL+"/api/"), factory.Options{Observer: rec})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer r.Close()
	c := r.Get("billing")
	tests := []struct{ url, want string }{
		{"v1/invoices", "a /api/v1/invoices"},
		{"/v1/invoices", "a /v1/invoices"},
		{b.URL + "/v1/x", "b /v1/x"}, // a URL with a host is untouched
		{"relative", "a /api/landed"},
		{"rooted", "a /landed"},
	}
	for _, tt := range tests {
		if got := getText(t, c, tt.url); got != tt.want {
			t.Errorf("Get %q: got %q, want %q", tt.url, got, tt.want)
		}
	}
	// A reload repoints it live, the same *http.Client.
	if err := r.Apply(withBase(b.URL + "/api/")); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if got := getText(t, c, "v1/invoices"); got != "b /api/v1/invoices" {
		t.Errorf("after repointing: got %q, want b's", got)
	}
	if got := clientStatus(t, r, "billing").Config.BaseURL; got != b.URL+"/api/" {
		t.Errorf("Status base_url: got %q, want %q", got, b.URL+"/api/")
	}
	// Without base_url a host-less URL fails, as before.
	if err := r.Apply(withBase("")); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if _, err := c.Get("v1/invoices"); err == nil {
		t.Error("Get of a host-less URL without base_url: got no error, want one")
	}
}

// TestBaseURLRoutesMatchResolvedURL: a route with a host in its pattern
// matches a host-less call, because the route layer sees the resolved URL.
func TestBaseURLRoutesMatchResolvedURL(t *testing.T) {
	ft := fakert.Status(503, 503, 503, 503, 503, 503)
	c := config.Default()
	c.BaseURL = "https://billing.internal/api/"
	c.Retry.MaxRetries = 5
	c.Retry.InitialBackoff, c.Retry.MaxBackoff = 1, 1
	cfg := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": c}}
	rt := config.RouteConfig{Timeout: c.Timeout, Headers: c.Headers, Retry: c.Retry, Hedge: c.Hedge}
	rt.Retry.MaxRetries = 0
	c.Routes = map[string]config.RouteConfig{"POST billing.internal/api/v1/charges": rt}
	cfg.Clients["billing"] = c
	r, err := factory.New(cfg, factory.Options{Base: ft})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer r.Close()
	resp, err := r.Get("billing").Post("v1/charges", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatalf("Post: %v", err)
	}
	resp.Body.Close()
	reqs := ft.Requests()
	if len(reqs) != 1 || reqs[0].URL != "https://billing.internal/api/v1/charges" {
		t.Errorf("attempts: got %v, want one (the route's max_retries 0) to the resolved URL", reqs)
	}
}

func TestLoggingEvents(t *testing.T) {
	for _, tt := range []struct {
		events    middleware.LogEvents
		wantInfo  bool // retry.attempt records
		wantWarns bool // retry.exhausted records
	}{
		{middleware.EventsAll, true, true},
		{middleware.EventsWarn, false, true},
		{middleware.EventsOff, false, false},
	} {
		t.Run(string(tt.events), func(t *testing.T) {
			log, capture := logcapture.New()
			rec := &eventrec.Recorder{}
			c := config.Default()
			c.Retry.MaxRetries, c.Retry.InitialBackoff, c.Retry.MaxBackoff = 1, 1, 1
			c.Logging.Events = tt.events
			cfg := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": c}}
			r, err := factory.New(cfg, factory.Options{Base: fakert.Status(503, 503), Logger: log, Observer: rec})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			defer r.Close()
			resp, err := r.Get("billing").Get("http://x/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := len(capture.Records(t, middleware.EventRetryAttempt)) > 0; got != tt.wantInfo {
				t.Errorf("retry.attempt records: got %v, want %v", got, tt.wantInfo)
			}
			if got := len(capture.Records(t, middleware.EventRetryExhausted)) > 0; got != tt.wantWarns {
				t.Errorf("retry.exhausted records: got %v, want %v", got, tt.wantWarns)
			}
			if got := len(capture.Records(t, "http attempt")); got != 2 {
				t.Errorf("per-attempt records (logging.level debug): got %d, want 2 whatever events says", got)
			}
			if len(rec.Named(middleware.EventRetryAttempt)) != 1 || len(rec.Named(middleware.EventRetryExhausted)) != 1 {
				t.Errorf("Observer: got %v, want every event regardless of logging.events", rec.Names())
			}
		})
	}
}
