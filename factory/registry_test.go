package factory_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/atomicfile"
	"github.com/switchboard-http/switchboard/middleware"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// server is an httptest server that counts requests and connections.
type server struct {
	*httptest.Server
	hits     atomic.Int64
	newConns atomic.Int64
	closed   atomic.Int64
}

// newServer starts a server answering with handler; it is closed at cleanup.
func newServer(t *testing.T, handler http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		handler(w, r)
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			s.newConns.Add(1)
		case http.StateClosed, http.StateHijacked:
			s.closed.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func status(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(code)
	}
}

// fastRetry is a retry block with tiny backoffs for tests over real sockets.
const fastRetry = `initial_backoff: 1ms, max_backoff: 2ms`

func openFile(t *testing.T, yaml string, o factory.Options) (*factory.Registry, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "clients.yaml")
	atomicfile.Write(t, path, yaml)
	o.File = path
	r, err := factory.Open(context.Background(), o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r, path
}

func get(t *testing.T, c *http.Client, url string) *http.Response {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func defaultsWithRetries(n int) config.Config {
	d := config.Default()
	d.Retry.MaxRetries = n
	d.Retry.InitialBackoff = time.Millisecond
	d.Retry.MaxBackoff = 2 * time.Millisecond
	return config.Config{Defaults: d, Clients: map[string]config.ClientConfig{"billing": d, "search": d}}
}

func TestGetReturnsSamePointerAcross100Reloads(t *testing.T) {
	srv := newServer(t, status(503))
	r, err := factory.New(defaultsWithRetries(0), factory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	billing := r.Get("billing")
	for i := 1; i <= 100; i++ {
		if err := r.Apply(defaultsWithRetries(i % 4)); err != nil {
			t.Fatalf("Apply %d: %v", i, err)
		}
		if got := r.Get("billing"); got != billing {
			t.Fatalf("after reload %d: Get returned a new pointer", i)
		}
	}
	if got, want := r.Status().Generation, uint64(101); got != want {
		t.Fatalf("generation: got %d, want %d", got, want)
	}
	// The kept pointer runs the latest config: 100 % 4 = 0 retries, then 3.
	get(t, billing, srv.URL)
	if got := srv.hits.Load(); got != 1 {
		t.Fatalf("with max_retries 0: got %d attempts, want 1", got)
	}
	if err := r.Apply(defaultsWithRetries(3)); err != nil {
		t.Fatal(err)
	}
	get(t, billing, srv.URL)
	if got := srv.hits.Load(); got != 1+4 {
		t.Fatalf("with max_retries 3: got %d attempts in all, want 5", got)
	}
}

func TestGetUnknownNameFollowsDefaultsAndWarnsOnce(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))
	srv := newServer(t, status(503))
	cfg := defaultsWithRetries(2)
	r, err := factory.New(cfg, factory.Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	c1, c2 := r.Get("unknown"), r.Get("unknown")
	if c1 != c2 {
		t.Fatal("Get of an unknown name returned two pointers")
	}
	mu.Lock()
	warns := strings.Count(logs.String(), "level=WARN")
	mu.Unlock()
	if warns != 1 || !strings.Contains(logs.String(), "client=unknown") {
		t.Fatalf("got %d WARN records (%q), want 1 naming the client", warns, logs.String())
	}
	if c, ok := r.Lookup("unknown"); ok || c != nil {
		t.Fatalf("Lookup(unknown): got %v, %v; want nil, false", c, ok)
	}
	if c, ok := r.Lookup("billing"); !ok || c != r.Get("billing") {
		t.Fatalf("Lookup(billing): got %v, %v; want the Get pointer, true", c, ok)
	}
	get(t, c1, srv.URL)
	if got := srv.hits.Load(); got != 3 {
		t.Fatalf("unknown client follows defaults (2 retries): got %d attempts, want 3", got)
	}

	// A reload that adds a section for the name moves the same client to it.
	cfg = defaultsWithRetries(2)
	own := cfg.Defaults
	own.Retry.MaxRetries = 0
	cfg.Clients["unknown"] = own
	if err := r.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Lookup("unknown"); !ok {
		t.Fatal("after a reload defining it, Lookup(unknown) = false")
	}
	get(t, c1, srv.URL)
	if got := srv.hits.Load(); got != 4 {
		t.Fatalf("after its own section (0 retries): got %d attempts in all, want 4", got)
	}
	if got, want := strings.Join(r.Names(), ","), "billing,search,unknown"; got != want {
		t.Fatalf("Names: got %q, want %q", got, want)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestReloadThatChangesOneClientLeavesOthersUntouched(t *testing.T) {
	var events []factory.ReloadEvent
	r, err := factory.New(defaultsWithRetries(1), factory.Options{OnReload: func(e factory.ReloadEvent) { events = append(events, e) }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	before := clientGens(r.Status())

	cfg := defaultsWithRetries(1)
	b := cfg.Clients["billing"]
	b.Retry.MaxRetries = 5
	cfg.Clients["billing"] = b
	if err := r.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	after := clientGens(r.Status())
	if after["search"] != before["search"] {
		t.Fatalf("search was rebuilt (generation %d → %d) though its config did not change", before["search"], after["search"])
	}
	if after["billing"] == before["billing"] {
		t.Fatal("billing was not rebuilt though its config changed")
	}
	if len(events) != 1 || strings.Join(events[0].Changed, ",") != "billing" || events[0].Err != nil {
		t.Fatalf("OnReload: got %+v, want one event with Changed [billing]", events)
	}
}

func clientGens(s factory.Status) map[string]uint64 {
	m := map[string]uint64{}
	for _, c := range s.Clients {
		m[c.Name] = c.Generation
	}
	return m
}

func TestBadEditKeepsOldConfigServing(t *testing.T) {
	srv := newServer(t, status(503))
	var got []factory.ReloadEvent
	var mu sync.Mutex
	r, path := openFile(t, `
clients:
  billing:
    retry: {max_retries: 2, `+fastRetry+`}
`, factory.Options{NoWatch: true, Logger: discard(), OnReload: func(e factory.ReloadEvent) {
		mu.Lock()
		got = append(got, e)
		mu.Unlock()
	}})
	billing := r.Get("billing")

	atomicfile.Write(t, path, `
clients:
  billing:
    retry: {max_retries: -1}
`)
	err := r.Reload()
	if err == nil || !strings.Contains(err.Error(), "clients.billing.retry.max_retries") {
		t.Fatalf("Reload of a bad edit: got %v, want an error naming clients.billing.retry.max_retries", err)
	}
	st := r.Status()
	if st.LastError == nil || st.Generation != 1 {
		t.Fatalf("Status after a bad edit: got generation %d, error %v; want 1 and the error", st.Generation, st.LastError)
	}
	mu.Lock()
	if len(got) != 1 || got[0].Err == nil || got[0].Generation != 1 {
		t.Fatalf("OnReload: got %+v, want one rejected event at generation 1", got)
	}
	mu.Unlock()
	get(t, billing, srv.URL)
	if n := srv.hits.Load(); n != 3 {
		t.Fatalf("after a rejected edit: got %d attempts, want 3 (the old max_retries 2)", n)
	}

	// An empty file and a missing file are rejected the same way.
	atomicfile.Write(t, path, "")
	if err := r.Reload(); err == nil {
		t.Fatal("Reload of an empty file: got nil error")
	}
	os.Remove(path)
	if err := r.Reload(); err == nil {
		t.Fatal("Reload of a missing file: got nil error")
	}
	if g := r.Status().Generation; g != 1 {
		t.Fatalf("generation after rejected reloads: got %d, want 1", g)
	}

	// A good edit applies and clears the error.
	atomicfile.Write(t, path, "clients:\n  billing:\n    retry: {max_retries: 0}\n")
	if err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	if st := r.Status(); st.LastError != nil || st.Generation != 2 {
		t.Fatalf("after a good edit: got generation %d, error %v; want 2, nil", st.Generation, st.LastError)
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestWatchedAtomicRenameTriggersReload(t *testing.T) {
	srv := newServer(t, status(503))
	reloaded := make(chan factory.ReloadEvent, 10)
	r, path := openFile(t, "clients:\n  billing:\n    retry: {max_retries: 0}\n", factory.Options{
		Debounce: 10 * time.Millisecond,
		Logger:   discard(),
		OnReload: func(e factory.ReloadEvent) { reloaded <- e },
	})
	atomicfile.Write(t, path, "clients:\n  billing:\n    retry: {max_retries: 2, "+fastRetry+"}\n")
	select {
	case e := <-reloaded:
		if e.Err != nil || e.Generation != 2 {
			t.Fatalf("reload event: got %+v, want generation 2 applied", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no reload within 10s of an atomic-rename save")
	}
	get(t, r.Get("billing"), srv.URL)
	if n := srv.hits.Load(); n != 3 {
		t.Fatalf("after the reload: got %d attempts, want 3", n)
	}
}

func TestEnvOverridesFileAndDefaultsDoNotBeatClientKeys(t *testing.T) {
	srv := newServer(t, status(503))
	env := []string{
		"SWITCHBOARD_CLIENTS__BILLING_V2__RETRY__MAX_RETRIES=1",
		"SWITCHBOARD_DEFAULTS__RETRY__MAX_RETRIES=0",
	}
	r, _ := openFile(t, `
defaults:
  retry: {`+fastRetry+`}
clients:
  billing-v2:
    retry: {max_retries: 4}
  search:
    retry: {max_retries: 4}
`, factory.Options{NoWatch: true, EnvPrefix: "SWITCHBOARD_", Environ: func() []string { return env }})
	get(t, r.Get("billing-v2"), srv.URL)
	if n := srv.hits.Load(); n != 2 {
		t.Fatalf("billing-v2 with env max_retries 1: got %d attempts, want 2", n)
	}
	get(t, r.Get("search"), srv.URL)
	if n := srv.hits.Load(); n != 2+5 {
		t.Fatalf("search keeps its file max_retries 4 over env defaults: got %d attempts, want 5", n-2)
	}
}

func TestMaxRedirects(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/a":
			http.Redirect(w, r, "/b", http.StatusFound)
		case "/b":
			http.Redirect(w, r, "/c", http.StatusFound)
		default:
			w.WriteHeader(http.StatusOK)
		}
	})
	tests := []struct {
		max     int
		want    int
		wantErr bool
	}{
		{max: 0, want: http.StatusFound},
		{max: 1, wantErr: true},
		{max: 2, want: http.StatusOK},
	}
	for _, tt := range tests {
		cfg := defaultsWithRetries(0)
		c := cfg.Clients["billing"]
		c.Transport.MaxRedirects = tt.max
		cfg.Clients["billing"] = c
		r, err := factory.New(cfg, factory.Options{})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := r.Get("billing").Get(srv.URL + "/a")
		if tt.wantErr {
			if err == nil || !strings.Contains(err.Error(), "max_redirects") {
				t.Errorf("max_redirects %d: got %v, want an error naming max_redirects", tt.max, err)
			}
		} else if err != nil || resp.StatusCode != tt.want {
			t.Errorf("max_redirects %d: got %v, %v; want status %d", tt.max, resp, err, tt.want)
		}
		if resp != nil {
			resp.Body.Close()
		}
		r.Close()
	}
}

func TestHeadersAreAddedButCallerWins(t *testing.T) {
	seen := make(chan http.Header, 2)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { seen <- r.Header.Clone() })
	cfg := defaultsWithRetries(0)
	c := cfg.Clients["billing"]
	c.Headers = map[string]string{"User-Agent": "billing-svc/1.4", "x-team": "payments"}
	cfg.Clients["billing"] = c
	r, err := factory.New(cfg, factory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	get(t, r.Get("billing"), srv.URL)
	h := <-seen
	if h.Get("User-Agent") != "billing-svc/1.4" || h.Get("X-Team") != "payments" {
		t.Fatalf("headers: got %v, want the configured User-Agent and X-Team", h)
	}
	req, _ := http.NewRequest("GET", srv.URL, nil)
	req.Header.Set("X-Team", "mine")
	resp, err := r.Get("billing").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if h := <-seen; h.Get("X-Team") != "mine" {
		t.Fatalf("caller's header: got %q, want %q", h.Get("X-Team"), "mine")
	}
	if len(req.Header) != 1 {
		t.Fatalf("the caller's request was changed: %v", req.Header)
	}
}

func TestTransportKeptUnlessTransportSettingsChange(t *testing.T) {
	srv := newServer(t, status(200))
	cfg := defaultsWithRetries(0)
	r, err := factory.New(cfg, factory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	billing := r.Get("billing")
	get(t, billing, srv.URL)

	// A retry change keeps the warm connection.
	cfg = defaultsWithRetries(2)
	if err := r.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	get(t, billing, srv.URL)
	if n := srv.newConns.Load(); n != 1 {
		t.Fatalf("after a retry-only reload: got %d connections, want 1 (kept)", n)
	}

	// A transport change replaces the transport; the old idle connection closes.
	c := cfg.Clients["billing"]
	c.Transport.IdleConnTimeout = time.Minute
	cfg.Clients["billing"] = c
	if err := r.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	get(t, billing, srv.URL)
	if n := srv.newConns.Load(); n != 2 {
		t.Fatalf("after a transport reload: got %d connections, want 2", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for srv.closed.Load() < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the retired transport's idle connection was not closed within 10s")
		}
		time.Sleep(5 * time.Millisecond) // polling an event with a deadline
	}
}

func TestApplyInvalidConfigChangesNothing(t *testing.T) {
	r, err := factory.New(defaultsWithRetries(1), factory.Options{Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	bad := defaultsWithRetries(1)
	b := bad.Clients["billing"]
	b.Retry.MaxRetries = -1
	bad.Clients["billing"] = b
	err = r.Apply(bad)
	if err == nil || !strings.Contains(err.Error(), "clients.billing.retry.max_retries") {
		t.Fatalf("Apply: got %v, want an error naming clients.billing.retry.max_retries", err)
	}
	if st := r.Status(); st.Generation != 1 || st.LastError == nil {
		t.Fatalf("Status: got generation %d, error %v; want 1 and the error", st.Generation, st.LastError)
	}
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	bad := defaultsWithRetries(1)
	b := bad.Clients["billing"]
	b.Retry.Jitter = "sometimes"
	bad.Clients["billing"] = b
	if _, err := factory.New(bad, factory.Options{}); err == nil {
		t.Fatal("New with jitter \"sometimes\": got nil error")
	}
}

func TestOpenRejectsBadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clients.yaml")
	atomicfile.Write(t, path, "clients:\n  billing:\n    retry: {max_retires: 2}\n")
	_, err := factory.Open(context.Background(), factory.Options{File: path})
	if err == nil || !strings.Contains(err.Error(), "max_retries") {
		t.Fatalf("Open: got %v, want an error suggesting max_retries", err)
	}
}

func TestReloadWithoutSource(t *testing.T) {
	r, err := factory.New(defaultsWithRetries(0), factory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Reload(); !errors.Is(err, factory.ErrNoSource) {
		t.Fatalf("Reload on New: got %v, want ErrNoSource", err)
	}
}

func TestOnReloadPanicIsRecovered(t *testing.T) {
	r, err := factory.New(defaultsWithRetries(0), factory.Options{Logger: discard(), OnReload: func(factory.ReloadEvent) { panic("boom") }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Apply(defaultsWithRetries(1)); err != nil {
		t.Fatalf("Apply with a panicking OnReload: %v", err)
	}
	if g := r.Status().Generation; g != 2 {
		t.Fatalf("generation: got %d, want 2", g)
	}
}

func TestApplyAfterClose(t *testing.T) {
	r, err := factory.New(defaultsWithRetries(0), factory.Options{Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if err := r.Apply(defaultsWithRetries(1)); !errors.Is(err, factory.ErrClosed) {
		t.Fatalf("Apply after Close: got %v, want ErrClosed", err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// Status read the names and the generation apart, so a Get adding a name in
// between made it index past the end of the names.
func TestStatusWhileGetAddsNames(t *testing.T) {
	r, err := factory.New(defaultsWithRetries(0), factory.Options{Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 3000; i++ {
			r.Get(fmt.Sprintf("n%d", i))
		}
	}()
	for {
		select {
		case <-done:
			if got := len(r.Status().Clients); got != 2+3000 {
				t.Fatalf("Status lists %d clients, want %d", got, 2+3000)
			}
			return
		default:
			for _, c := range r.Status().Clients {
				if c.Name == "" {
					t.Fatal("Status listed a client without a name")
				}
			}
		}
	}
}

// A Config literal with zero values is usable: each zero means what its field
// doc says (mostly "off"), and a zero breaker number means its default.
func TestNewFromAZeroValuedLiteral(t *testing.T) {
	srv := newServer(t, status(503))
	r, err := factory.New(config.Config{Clients: map[string]config.ClientConfig{
		"billing": {Retry: middleware.RetrySettings{MaxRetries: 1}, CircuitBreaker: middleware.BreakerSettings{Enabled: true}},
	}}, factory.Options{Logger: discard()})
	if err != nil {
		t.Fatalf("New with a zero-valued literal: %v", err)
	}
	defer r.Close()
	get(t, r.Get("billing"), srv.URL)
	if n := srv.hits.Load(); n != 2 {
		t.Fatalf("max_retries 1 with zero backoff: got %d attempts, want 2", n)
	}
}
