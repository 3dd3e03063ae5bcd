package config_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/switchboard-http/switchboard/config"
)

// TestConfigTypesPrintSecretsRedactedByEveryVerbAndEncoder: Config,
// ClientConfig, RouteConfig, TransportConfig and Headers, printed with
// every fmt verb, encoding/json and slog's text and JSON handlers, show
// neither a sensitive header's value nor a proxy URL's password or
// ?token= value, and show REDACTED in their place.
func TestConfigTypesPrintSecretsRedactedByEveryVerbAndEncoder(t *testing.T) {
	const (
		apiKey  = "key-a1b2c3"
		bearer  = "tok-d4e5f6"
		cookie  = "sid-g7h8i9"
		proxyPw = "pw-j0k1l2"
		query   = "qt-m3n4o5"
	)
	headers := map[string]string{"Authorization": "Bearer " + bearer, "X-Api-Key": apiKey, "Cookie": "sid=" + cookie, "User-Agent": "svc/1"}
	c := config.Default()
	c.Headers = headers
	c.Transport.ProxyURL = "http://user:" + proxyPw + "@proxy.test:3128/?token=" + query
	c.Auth.BearerToken = bearer
	route := config.RouteConfig{Timeout: c.Timeout, Headers: headers, Retry: c.Retry, Hedge: c.Hedge}
	c.Routes = map[string]config.RouteConfig{"GET /v1/": route}
	cfg := config.Config{Defaults: c, Clients: map[string]config.ClientConfig{"billing": c}}

	values := map[string]any{
		"Config": cfg, "*Config": &cfg, "ClientConfig": c, "RouteConfig": route,
		"TransportConfig": c.Transport, "Headers": c.Headers,
	}
	printers := map[string]func(any) string{
		"%v":  func(v any) string { return fmt.Sprintf("%v", v) },
		"%+v": func(v any) string { return fmt.Sprintf("%+v", v) },
		"%#v": func(v any) string { return fmt.Sprintf("%#v", v) },
		"%s":  func(v any) string { return fmt.Sprintf("%s", v) },
		"%q":  func(v any) string { return fmt.Sprintf("%q", v) },
		"%x":  func(v any) string { return fmt.Sprintf("%x", v) },
		"json": func(v any) string {
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatalf("json.Marshal: %v", err)
			}
			return string(b)
		},
		"slog text": func(v any) string {
			var b bytes.Buffer
			slog.New(slog.NewTextHandler(&b, nil)).Info("cfg", "v", v)
			return b.String()
		},
		"slog json": func(v any) string {
			var b bytes.Buffer
			slog.New(slog.NewJSONHandler(&b, nil)).Info("cfg", "v", v)
			return b.String()
		},
	}
	secrets := []string{apiKey, bearer, cookie, proxyPw, query}
	for name, v := range values {
		for how, print := range printers {
			out := print(v)
			for _, s := range secrets {
				for _, form := range []string{s, fmt.Sprintf("%x", s)} {
					if strings.Contains(out, form) {
						t.Errorf("%s printed with %s shows a secret (%s): %s", name, how, s, out)
					}
				}
			}
			want := "REDACTED"
			if how == "%x" {
				want = fmt.Sprintf("%x", want)
			}
			if !strings.Contains(out, want) {
				t.Errorf("%s printed with %s shows no %s: %s", name, how, want, out)
			}
		}
	}
	// %#v still reads as the types it prints.
	if got := fmt.Sprintf("%#v", c.Transport); !strings.HasPrefix(got, "config.TransportConfig{") {
		t.Errorf("%%#v of TransportConfig: %s", got)
	}
	if got := fmt.Sprintf("%#v", c.Headers); !strings.HasPrefix(got, "config.Headers{") {
		t.Errorf("%%#v of Headers: %s", got)
	}
	// The values themselves are unchanged.
	if c.Headers["X-Api-Key"] != apiKey || !strings.Contains(c.Transport.ProxyURL, proxyPw) {
		t.Error("printing changed the config")
	}
}
