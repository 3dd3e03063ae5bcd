package factory_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/middleware"
)

// statusBreakers serves r's status and returns each client's "breaker"
// member as decoded JSON.
func statusBreakers(t *testing.T, r *factory.Registry) map[string]any {
	t.Helper()
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	var doc struct {
		Clients []map[string]any `json:"clients"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatalf("decode: %v\n%s", err, rec.Body)
	}
	out := map[string]any{}
	for _, c := range doc.Clients {
		out[c["name"].(string)] = c["breaker"]
	}
	return out
}

// TestHandlerNamesBreakerState guards the status JSON's breaker shape:
// {"state": …} for scope client, the worst state and a hosts map for scope
// host, nothing when the breaker is off.
func TestHandlerNamesBreakerState(t *testing.T) {
	down := middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if req.URL.Host == "down.test" {
			return nil, errors.New("connection refused")
		}
		return okTransport(req)
	})
	breaker := func(scope middleware.BreakerScope, mode middleware.BreakerMode) config.ClientConfig {
		c := config.Default()
		c.Retry.MaxRetries = 0
		c.CircuitBreaker.Enabled = true
		c.CircuitBreaker.Scope = scope
		c.CircuitBreaker.Mode = mode
		c.CircuitBreaker.FailureThreshold = 1
		return c
	}
	cfg := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{
		"off":      config.Default(),
		"client":   breaker(middleware.ScopeClient, middleware.BreakerConsecutive),
		"hosts":    breaker(middleware.ScopeHost, middleware.BreakerConsecutive),
		"adaptive": breaker(middleware.ScopeClient, middleware.BreakerAdaptive),
	}}
	r, err := factory.New(cfg, factory.Options{Base: down, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	for _, u := range []string{"http://up.test/", "http://down.test/"} {
		resp, err := r.Get("hosts").Get(u)
		if err == nil {
			resp.Body.Close()
		}
	}

	got := statusBreakers(t, r)
	// The open host's time to its probe shrinks as the test runs: it is
	// within the cooldown, and the soonest host's is the breaker's.
	hosts := got["hosts"].(map[string]any)
	in, ok := hosts["probe_in_seconds"].(float64)
	if !ok || in <= 0 || in > 30 {
		t.Fatalf("hosts' probe_in_seconds: got %v, want in (0, 30]", hosts["probe_in_seconds"])
	}
	if per := hosts["hosts_probe_in_seconds"]; !reflect.DeepEqual(per, map[string]any{"down.test": in}) {
		t.Fatalf("hosts_probe_in_seconds: got %v, want down.test only, %v", per, in)
	}
	delete(hosts, "probe_in_seconds")
	delete(hosts, "hosts_probe_in_seconds")
	want := map[string]any{
		"off":      nil,
		"client":   map[string]any{"state": "closed"},
		"hosts":    map[string]any{"state": "open", "hosts": map[string]any{"up.test": "closed", "down.test": "open"}},
		"adaptive": map[string]any{"state": "closed", "reject_probability": 0.0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("breakers:\ngot  %v\nwant %v", got, want)
	}
}
