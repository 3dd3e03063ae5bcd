package factory_test

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/atomicfile"
	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/middleware"
)

const routesFile = `
clients:
  billing:
    retry: {max_retries: 2, ` + fastRetry + `}
    circuit_breaker: {enabled: true, failure_threshold: 3, cooldown: 1h}
    routes:
      "GET /v1/charges": {retry: {max_retries: 0}}
      "GET /v1/reports/{id}": {retry: {max_retries: 4}, timeout: 10s}
`

func TestRoutesPickTheirRetrySettings(t *testing.T) {
	srv := newServer(t, status(503))
	r, _ := openFile(t, routesFile, factory.Options{Logger: discard()})
	tests := []struct {
		path string
		want int64
	}{
		{"/v1/charges", 1},   // route: no retries
		{"/v1/reports/7", 5}, // route: 4 retries
		{"/v1/other", 3},     // no route: the client's 2
	}
	for _, tt := range tests {
		before := srv.hits.Load()
		resp, err := r.Get("billing").Get(srv.URL + tt.path)
		if err != nil {
			t.Fatalf("GET %s: %v", tt.path, err)
		}
		resp.Body.Close()
		if got := srv.hits.Load() - before; got != tt.want {
			t.Errorf("GET %s: got %d attempts, want %d", tt.path, got, tt.want)
		}
	}
	var st factory.ClientStatus
	for _, c := range r.Status().Clients {
		if c.Name == "billing" {
			st = c
		}
	}
	if want := []string{"GET /v1/charges", "GET /v1/reports/{id}"}; !slices.Equal(st.Routes, want) {
		t.Errorf("Status routes: got %v, want %v", st.Routes, want)
	}
}

func TestOverridesWinOverARoute(t *testing.T) {
	srv := newServer(t, status(503))
	r, _ := openFile(t, routesFile, factory.Options{Logger: discard()})
	three := 3
	req, _ := http.NewRequest("GET", srv.URL+"/v1/charges", nil)
	req = req.WithContext(middleware.WithOverrides(req.Context(), middleware.Overrides{MaxRetries: &three}))
	resp, err := r.Get("billing").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := srv.hits.Load(); got != 4 {
		t.Fatalf("attempts: got %d, want 4 (the override's 3 retries over the route's 0)", got)
	}
}

// TestRouteChangeKeepsBreakerAndConnections reloads a change of one
// route's settings: the plan retunes routes alone, and the client's
// connections and its open breaker stay.
func TestRouteChangeKeepsBreakerAndConnections(t *testing.T) {
	ok := newServer(t, status(200))
	r, path := openFile(t, routesFile, factory.Options{Logger: discard(), NoWatch: true})
	get(t, r.Get("billing"), ok.URL+"/v1/charges")
	get(t, r.Get("billing"), ok.URL+"/v1/reports/1")

	changed := `
clients:
  billing:
    retry: {max_retries: 2, ` + fastRetry + `}
    circuit_breaker: {enabled: true, failure_threshold: 3, cooldown: 1h}
    routes:
      "GET /v1/charges": {retry: {max_retries: 0}, timeout: 5s}
      "GET /v1/reports/{id}": {retry: {max_retries: 4}, timeout: 10s}
`
	var plan []factory.ClientPlan
	r2, path2 := openFile(t, routesFile, factory.Options{Logger: discard(), NoWatch: true,
		OnReload: func(e factory.ReloadEvent) { plan = e.Plan }})
	atomicfile.Write(t, path, changed)
	if err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	get(t, r.Get("billing"), ok.URL+"/v1/charges")
	if got := ok.newConns.Load(); got != 1 {
		t.Errorf("connections after a route change: got %d new, want 1 (kept)", got)
	}

	atomicfile.Write(t, path2, changed)
	if err := r2.Reload(); err != nil {
		t.Fatal(err)
	}
	var billing factory.ClientPlan
	for _, p := range plan {
		if p.Name == "billing" {
			billing = p
		}
	}
	if len(billing.Keys) != 1 || billing.Keys[0].Key != `routes."GET /v1/charges".timeout` {
		t.Errorf("plan keys: got %+v, want the route's timeout only", billing.Keys)
	}
	for _, c := range billing.Components {
		want := factory.Unchanged
		switch c.Component {
		case factory.ComponentRoutes:
			want = factory.Retuned
		case factory.ComponentBulkhead, factory.ComponentRateLimit:
			want = factory.Off
		}
		if c.Change != want {
			t.Errorf("plan %s: got %s, want %s", c.Component, c.Change, want)
		}
	}

	// An open breaker stays open across a route change.
	bad := newServer(t, status(500))
	for range 3 {
		get(t, r.Get("billing"), bad.URL+"/v1/charges")
	}
	if _, err := r.Get("billing").Get(bad.URL + "/v1/charges"); !errors.Is(err, middleware.ErrCircuitOpen) {
		t.Fatalf("after 3 failures: got %v, want ErrCircuitOpen", err)
	}
	atomicfile.Write(t, path, routesFile)
	if err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get("billing").Get(bad.URL + "/v1/reports/1"); !errors.Is(err, middleware.ErrCircuitOpen) {
		t.Fatalf("after a route change: got %v, want the shared breaker still open", err)
	}
	if got := breakerState(r, "billing"); got != "open" {
		t.Errorf("breaker: got %s, want open", got)
	}
}

// TestRoutePatternWithPortMatchesSoAPaymentIsSentOnce: a route whose
// pattern names a port ("POST billing.test:8443/v1/charges") with
// retry.max_retries 0 serves the calls to that host and port; they used
// to match no route and ran under the client's retries (the payment was
// sent three times). A call to another port still runs with the client's.
func TestRoutePatternWithPortMatchesSoAPaymentIsSentOnce(t *testing.T) {
	const file = `
clients:
  billing:
    retry: {max_retries: 2, retryable_methods: [GET, POST], ` + fastRetry + `}
    routes:
      "POST billing.test:8443/v1/charges": {retry: {max_retries: 0}}
`
	tests := []struct {
		url  string
		want int
	}{
		{"https://billing.test:8443/v1/charges", 1}, // the route: never retried
		{"https://billing.test:9443/v1/charges", 3}, // another port: the client's 2 retries
		{"https://billing.test/v1/charges", 3},      // 443 implied: not the route's port
	}
	for _, tt := range tests {
		base := fakert.Status(503)
		r, _ := openFile(t, file, factory.Options{Logger: discard(), Base: base, NoWatch: true})
		resp, err := r.Get("billing").Post(tt.url, "application/json", strings.NewReader(`{"amount":1}`))
		if err != nil {
			t.Fatalf("POST %s: %v", tt.url, err)
		}
		resp.Body.Close()
		if got := base.Calls(); got != tt.want {
			t.Errorf("POST %s: sent %d times, want %d", tt.url, got, tt.want)
		}
	}
}
