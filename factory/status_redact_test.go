package factory_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
)

// TestStatusPrintsNoSecretByAnyVerbOrEncoder puts one secret at a time in a
// client's config (a sensitive header of the client or of a route, a proxy
// password, a proxy ?token=) and prints every value the registry hands out
// about it — Status, ClientStatus, ClientStatus.Config, the status JSON, the
// ReloadEvent and Plan of a reload that changes the secret, and the
// LastError of a rejected one — with every fmt verb, slog's text and JSON
// handlers and encoding/json: the secret never shows.
func TestStatusPrintsNoSecretByAnyVerbOrEncoder(t *testing.T) {
	cases := []struct {
		name string
		set  func(c *config.ClientConfig, secret string)
	}{
		{"X-Api-Key header", func(c *config.ClientConfig, s string) { c.Headers["X-Api-Key"] = s }},
		{"Cookie header", func(c *config.ClientConfig, s string) { c.Headers["Cookie"] = "session=" + s }},
		{"Authorization header", func(c *config.ClientConfig, s string) { c.Headers["Authorization"] = "Bearer " + s }},
		{"proxy_url user:password", func(c *config.ClientConfig, s string) {
			c.Transport.ProxyURL = "http://proxyuser:" + s + "@proxy.test:3128"
		}},
		{"proxy_url ?token=", func(c *config.ClientConfig, s string) {
			c.Transport.ProxyURL = "http://proxy.test:3128/?token=" + s
		}},
		{"route X-Api-Key header", func(c *config.ClientConfig, s string) {
			c.Routes = map[string]config.RouteConfig{"GET /v1/": {
				Timeout: c.Timeout, Retry: c.Retry, Hedge: c.Hedge,
				Headers: map[string]string{"X-Api-Key": s, "User-Agent": "route-ua"},
			}}
		}},
	}
	printers := []struct {
		name  string
		print func(t *testing.T, v any) string
	}{
		{"%v", func(_ *testing.T, v any) string { return fmt.Sprintf("%v", v) }},
		{"%+v", func(_ *testing.T, v any) string { return fmt.Sprintf("%+v", v) }},
		{"%#v", func(_ *testing.T, v any) string { return fmt.Sprintf("%#v", v) }},
		{"%s", func(_ *testing.T, v any) string { return fmt.Sprintf("%s", v) }},
		{"slog text", func(_ *testing.T, v any) string {
			var b bytes.Buffer
			slog.New(slog.NewTextHandler(&b, nil)).Info("status", "value", v)
			return b.String()
		}},
		{"slog json", func(_ *testing.T, v any) string {
			var b bytes.Buffer
			slog.New(slog.NewJSONHandler(&b, nil)).Info("status", "value", v)
			return b.String()
		}},
		{"encoding/json", func(t *testing.T, v any) string {
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatalf("json.Marshal(%T): %v", v, err)
			}
			return string(b)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			const oldSecret, newSecret, badSecret = "old-zzz-secret", "new-zzz-secret", "bad-zzz-secret"
			cfgWith := func(secret string) config.Config {
				c := config.Default()
				c.Headers = map[string]string{"User-Agent": "status-test"}
				tc.set(&c, secret)
				return config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": c}}
			}
			var mu sync.Mutex
			var events []factory.ReloadEvent
			r, err := factory.New(cfgWith(oldSecret), factory.Options{Base: okTransport, Logger: discard(),
				OnReload: func(e factory.ReloadEvent) { mu.Lock(); events = append(events, e); mu.Unlock() }})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			plan, err := r.Plan(cfgWith(newSecret))
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Apply(cfgWith(newSecret)); err != nil {
				t.Fatal(err)
			}
			bad := cfgWith(badSecret)
			bad.Defaults.Retry.MaxRetries = -1
			if err := r.Apply(bad); err == nil {
				t.Fatal("Apply of an invalid config succeeded")
			}
			mu.Lock()
			defer mu.Unlock()
			if len(events) != 2 || events[0].Err != nil || len(events[0].Plan) == 0 || events[1].Err == nil {
				t.Fatalf("got reload events %d, want an applied one with a plan and a rejected one", len(events))
			}
			if !strings.Contains(fmt.Sprint(plan), "REDACTED") {
				t.Fatalf("the plan does not show the secret's change as REDACTED: %v", plan)
			}
			st := r.Status()
			if len(st.Clients) != 1 || st.LastError == nil {
				t.Fatalf("got %d clients, last error %v; want 1 and the rejection", len(st.Clients), st.LastError)
			}
			values := map[string]any{
				"Status": st, "ClientStatus": st.Clients[0], "ClientStatus.Config": st.Clients[0].Config,
				"applied ReloadEvent": events[0], "rejected ReloadEvent": events[1], "Plan": plan,
				"LastError": st.LastError,
			}
			for vname, v := range values {
				for _, p := range printers {
					out := p.print(t, v)
					for _, secret := range []string{oldSecret, newSecret, badSecret, "zzz", "proxyuser"} {
						if strings.Contains(out, secret) {
							t.Errorf("%s printed by %s holds %q:\n%s", vname, p.name, secret, out)
						}
					}
				}
			}
			rec := httptest.NewRecorder()
			r.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/status", nil))
			if body := rec.Body.String(); strings.Contains(body, "zzz") || strings.Contains(body, "proxyuser") {
				t.Errorf("the status JSON holds the secret:\n%s", body)
			}
			if !strings.Contains(fmt.Sprintf("%+v", st.Clients[0].Config), "REDACTED") {
				t.Errorf("ClientStatus.Config does not show the configured secret as REDACTED: %+v", st.Clients[0].Config)
			}
		})
	}
}
