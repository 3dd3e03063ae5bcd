package config_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/config"
)

const routesYAML = `
defaults:
  timeout: 20s
  headers: {User-Agent: svc/1}
clients:
  billing:
    retry: {max_retries: 5, initial_backoff: 1s}
    routes:
      "POST /v1/charges": {timeout: 10s, retry: {max_retries: 0}}
      "GET /v1/reports/{id}":
        timeout: 60s
        headers: {X-Route: reports}
        retry: {attempt_timeout: 20s}
        hedge: {enabled: true, delay: 2s}
`

func TestRoutesMergeOverTheClient(t *testing.T) {
	path := writeConfig(t, routesYAML)
	cfg := mustLoad(t, config.Loader{File: path})
	c := client(t, cfg, "billing")
	if got := len(c.Routes); got != 2 {
		t.Fatalf("routes: got %d, want 2", got)
	}
	charges := c.Routes["POST /v1/charges"]
	if charges.Timeout != 10*time.Second || charges.Retry.MaxRetries != 0 || charges.Retry.InitialBackoff != time.Second {
		t.Errorf("charges: got timeout %v, max_retries %d, initial_backoff %v; want 10s, 0, 1s (the client's)",
			charges.Timeout, charges.Retry.MaxRetries, charges.Retry.InitialBackoff)
	}
	if charges.Retry.Budget != c.Retry.Budget {
		t.Errorf("charges budget: got %+v, want the client's %+v", charges.Retry.Budget, c.Retry.Budget)
	}
	reports := c.Routes["GET /v1/reports/{id}"]
	if reports.Timeout != time.Minute || reports.Retry.MaxRetries != 5 || reports.Retry.AttemptTimeout != 20*time.Second ||
		!reports.Hedge.Enabled || reports.Hedge.Delay != 2*time.Second || reports.Hedge.MaxHedges != 1 {
		t.Errorf("reports: got %+v", reports)
	}
	if got := reports.Headers; got["User-Agent"] != "svc/1" || got["X-Route"] != "reports" {
		t.Errorf("reports headers: got %v, want defaults' User-Agent and its own X-Route (maps merge)", got)
	}
	if cfg.Defaults.Routes != nil {
		t.Errorf("defaults routes: got %v, want none", cfg.Defaults.Routes)
	}

	tests := []struct {
		key       string
		wantLayer config.Layer
		wantPath  string
		wantLine  int
	}{
		{config.RouteKey("POST /v1/charges", "timeout"), config.LayerFile, `clients.billing.routes."POST /v1/charges".timeout`, 9},
		{config.RouteKey("POST /v1/charges", "retry.max_retries"), config.LayerFile, `clients.billing.routes."POST /v1/charges".retry.max_retries`, 9},
		{config.RouteKey("POST /v1/charges", "retry.initial_backoff"), config.LayerFile, "clients.billing.retry.initial_backoff", 7},
		{config.RouteKey("GET /v1/reports/{id}", "headers.User-Agent"), config.LayerFile, "defaults.headers.User-Agent", 4},
		{config.RouteKey("GET /v1/reports/{id}", "hedge.delay"), config.LayerFile, `clients.billing.routes."GET /v1/reports/{id}".hedge.delay`, 14},
		{config.RouteKey("GET /v1/reports/{id}", "hedge.max_hedges"), config.LayerBuiltin, "defaults.hedge.max_hedges", 0},
	}
	for _, tt := range tests {
		o, ok := cfg.Provenance.Of("billing", tt.key)
		if !ok || o.Layer != tt.wantLayer || o.Path != tt.wantPath || o.Line != tt.wantLine {
			t.Errorf("provenance of %s: got %+v, %v; want layer %v, path %s, line %d", tt.key, o, ok, tt.wantLayer, tt.wantPath, tt.wantLine)
		}
	}
	if _, ok := cfg.Provenance.Of("billing", config.RouteKey("POST /v1/charges", "retry.budget.ttl")); ok {
		t.Errorf("provenance: a route has no retry.budget keys")
	}
}

func TestRouteValidationErrors(t *testing.T) {
	tests := []struct {
		name, routes string
		wants        []string
	}{
		{"stateful key", `"POST /v1/charges": {bulkhead: {max_concurrent: 1}}`,
			[]string{`clients.billing.routes."POST /v1/charges".bulkhead: not allowed in a route`}},
		{"breaker", `"POST /v1/charges": {circuit_breaker: {enabled: true}}`,
			[]string{`clients.billing.routes."POST /v1/charges".circuit_breaker: not allowed in a route`}},
		{"coalesce is the client's", `"GET /v1/items": {coalesce: {enabled: true}}`,
			[]string{`clients.billing.routes."GET /v1/items".coalesce: not allowed in a route`}},
		{"transport", `"GET /": {transport: {max_conns_per_host: 1}}`,
			[]string{`clients.billing.routes."GET /".transport: not allowed in a route`}},
		{"retry budget", `"GET /": {retry: {budget: {ratio: 1}}}`,
			[]string{`clients.billing.routes."GET /".retry.budget: not allowed in a route`}},
		{"typo", `"GET /": {timeuot: 1s}`,
			[]string{`clients.billing.routes."GET /".timeuot: unknown key`, "timeout"}},
		{"bad value", `"GET /": {retry: {max_retries: -1}}`,
			[]string{`clients.billing.routes."GET /".retry.max_retries: must be >= 0, got -1`}},
		{"route contradiction", `"GET /": {timeout: 1s, retry: {attempt_timeout: 2s}}`,
			[]string{`clients.billing.routes."GET /".retry.attempt_timeout: must be less than timeout (1s), got 2s`}},
		{"invalid pattern", `"GET /v1/{id": {timeout: 1s}`,
			[]string{`clients.billing.routes."GET /v1/{id": invalid route pattern`}},
		{"bad method", `"get /v1": {timeout: 1s}`, nil}, // lower-case methods are valid ServeMux patterns
		{"conflicting patterns", `{"GET /a/{x}": {timeout: 1s}, "GET /{y}/b": {timeout: 2s}}`, []string{"invalid route pattern", "conflicts"}},
		{"not a section", `"GET /": 5`, []string{`clients.billing.routes."GET /": must be a route section`}},
		{"port not a number", `"POST billing.test:https/v1/charges": {timeout: 1s}`,
			[]string{`clients.billing.routes."POST billing.test:https/v1/charges": invalid route pattern: host "billing.test:https": port must be a number`}},
		{"host with a port", `"POST billing.test:8443/v1/charges": {retry: {max_retries: 0}}`, nil}, // matched on host and port
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			routes := "      " + tt.routes
			if tt.routes[0] == '{' {
				routes = " " + tt.routes
			} else {
				routes = "\n" + routes
			}
			l := config.Loader{File: writeConfig(t, "clients:\n  billing:\n    routes:"+routes+"\n")}
			if tt.wants == nil {
				mustLoad(t, l)
				return
			}
			mustFail(t, l, tt.wants...)
		})
	}
	t.Run("routes in defaults", func(t *testing.T) {
		mustFail(t, config.Loader{File: writeConfig(t, "defaults:\n  routes: {\"GET /\": {timeout: 1s}}\nclients: {a: {}}\n")},
			"defaults.routes: only a client section may set routes")
	})
	t.Run("an inherited error is reported once", func(t *testing.T) {
		err := mustFail(t, config.Loader{File: writeConfig(t, `
clients:
  billing:
    timeout: 1s
    retry: {attempt_timeout: 2s}
    routes: {"GET /": {headers: {X-A: b}}}
`)}, "clients.billing.retry.attempt_timeout")
		if got := config.FieldErrors(err); len(got) != 1 {
			t.Errorf("errors: got %d (%v), want 1", len(got), err)
		}
	})
}

func TestRoutesInEqualHashAndChangedKeys(t *testing.T) {
	a := mustLoad(t, config.Loader{File: writeConfig(t, routesYAML)})
	b := mustLoad(t, config.Loader{File: writeConfig(t, routesYAML)})
	ca, cb := client(t, a, "billing"), client(t, b, "billing")
	if !ca.Equal(cb) || ca.Hash() != cb.Hash() {
		t.Fatal("the same file: got unequal configs, want equal")
	}
	cb.Routes = map[string]config.RouteConfig{"POST /v1/charges": cb.Routes["POST /v1/charges"], "GET /v1/reports/{id}": cb.Routes["GET /v1/reports/{id}"]}
	r := cb.Routes["POST /v1/charges"]
	r.Timeout = 15 * time.Second
	cb.Routes["POST /v1/charges"] = r
	if ca.Equal(cb) || ca.Hash() == cb.Hash() {
		t.Fatal("a route's timeout changed: got equal configs, want different")
	}
	got := config.ChangedKeys(ca, cb)
	if len(got) != 1 || got[0].Key != `routes."POST /v1/charges".timeout` || got[0].Old != "10s" || got[0].New != "15s" {
		t.Fatalf("ChangedKeys: got %+v, want the route's timeout 10s -> 15s", got)
	}
	delete(cb.Routes, "GET /v1/reports/{id}")
	if got := config.ChangedKeys(ca, cb); len(got) < 2 {
		t.Fatalf("ChangedKeys after removing a route: got %+v, want its keys too", got)
	}
	noRoutes := config.Default()
	withNil := noRoutes
	withNil.Routes = map[string]config.RouteConfig{}
	if !noRoutes.Equal(withNil) || noRoutes.Hash() != withNil.Hash() {
		t.Fatal("nil and empty routes: got different, want alike")
	}
}

func TestValidateRoutesInCode(t *testing.T) {
	c := config.Default()
	r := config.RouteConfig{Timeout: time.Second, Retry: c.Retry, Hedge: c.Hedge}
	r.Retry.AttemptTimeout = 2 * time.Second
	c.Routes = map[string]config.RouteConfig{"GET /a/{x": r}
	err := (config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": c}}).Validate()
	for _, want := range []string{
		`clients.billing.routes."GET /a/{x": invalid route pattern`,
		`clients.billing.routes."GET /a/{x".retry.attempt_timeout: must be less than timeout (1s), got 2s`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: got %v, want %q", err, want)
		}
	}
}

// TestRoutePatternPortOutOfRangeFailsLoadAtItsKey: a route pattern's port
// only had to be digits, so "billing.test:99999/" loaded and never
// matched. It fails the load, naming the route's key path and the
// pattern as written; a pattern whose host has upper-case letters loads
// (it matches ignoring case).
func TestRoutePatternPortOutOfRangeFailsLoadAtItsKey(t *testing.T) {
	for _, pattern := range []string{"POST billing.test:99999/v1/charges", "POST Billing.Test:0/v1/charges", "billing.test:08443/"} {
		t.Run(pattern, func(t *testing.T) {
			_, host, _ := strings.Cut(pattern, " ")
			if host == "" {
				host = pattern
			}
			host, _, _ = strings.Cut(host, "/")
			l := config.Loader{File: writeConfig(t, "clients:\n  billing:\n    routes:\n      "+strconv.Quote(pattern)+": {timeout: 1s}\n")}
			mustFail(t, l, `clients.billing.routes.`+strconv.Quote(pattern)+`: invalid route pattern: host `+strconv.Quote(host)+`: port must be a number from 1 to 65535`)
		})
	}
	mustLoad(t, config.Loader{File: writeConfig(t, "clients:\n  billing:\n    routes:\n      \"POST Billing.Test:8443/v1/charges\": {timeout: 1s}\n")})
}
