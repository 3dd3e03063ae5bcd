package config_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/middleware"
)

const (
	testToken    = "tok-s3cr3t-1"
	testPassword = "pw-s3cr3t-2"
)

// withSecrets returns the built-in defaults with a bearer token and a
// basic password set.
func withSecrets() config.ClientConfig {
	c := config.Default()
	c.Auth = middleware.AuthSettings{
		Host:        "api.test",
		BearerToken: testToken,
		Basic:       middleware.BasicAuth{Username: "alice", Password: testPassword},
	}
	return c
}

func TestConfigPrintsNoSecret(t *testing.T) {
	c := withSecrets()
	cfg := config.Config{Defaults: c, Clients: map[string]config.ClientConfig{"billing": c}}
	jsonOf := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	logOf := func(text bool, v any) string {
		var buf bytes.Buffer
		var h slog.Handler = slog.NewJSONHandler(&buf, nil)
		if text {
			h = slog.NewTextHandler(&buf, nil)
		}
		slog.New(h).Info("config", slog.Any("cfg", v))
		return buf.String()
	}
	tests := []struct {
		name string
		out  string
	}{
		{"ClientConfig json", jsonOf(c)},
		{"ClientConfig slog json", logOf(false, c)},
		{"ClientConfig slog text", logOf(true, c)},
		{"Config json", jsonOf(cfg)},
		{"Config slog json", logOf(false, cfg)},
		{"Config slog text", logOf(true, cfg)},
	}
	// Every verb, through a variable so that vet lets %x and %d of a struct be.
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
		tests = append(tests,
			struct{ name, out string }{"ClientConfig " + verb, fmt.Sprintf(verb, c)},
			struct{ name, out string }{"*ClientConfig " + verb, fmt.Sprintf(verb, &c)},
			struct{ name, out string }{"Config " + verb, fmt.Sprintf(verb, cfg)})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, secret := range []string{testToken, testPassword, fmt.Sprintf("%x", testToken), fmt.Sprintf("%x", testPassword), "s3cr3t"} {
				if strings.Contains(strings.ToLower(tt.out), strings.ToLower(secret)) {
					t.Fatalf("got output holding %q:\n%s", secret, tt.out)
				}
			}
			if !strings.Contains(tt.out, middleware.Redacted) && !strings.Contains(tt.out, fmt.Sprintf("%x", middleware.Redacted)) {
				t.Fatalf("got output without %s:\n%s", middleware.Redacted, tt.out)
			}
		})
	}
}

func TestSecretsDecodeFromEveryLayer(t *testing.T) {
	const file = "clients:\n  billing:\n    auth:\n      host: api.test\n      bearer_token: file-token\n      basic: {username: alice, password: file-pass}\n"
	tests := []struct {
		name      string
		l         func(t *testing.T) config.Loader
		wantToken string
		wantPass  string
	}{
		{"file", func(t *testing.T) config.Loader {
			return config.Loader{File: writeConfig(t, file)}
		}, "file-token", "file-pass"},
		{"env", func(t *testing.T) config.Loader {
			return config.Loader{File: writeConfig(t, file), EnvPrefix: "SB_", Environ: environ(
				"SB_CLIENTS__BILLING__AUTH__BEARER_TOKEN=env-token",
				"SB_CLIENTS__BILLING__AUTH__BASIC__PASSWORD=env-pass")}
		}, "env-token", "env-pass"},
		{"flags", func(t *testing.T) config.Loader {
			return config.Loader{File: writeConfig(t, file), EnvPrefix: "SB_",
				Environ: environ("SB_CLIENTS__BILLING__AUTH__BEARER_TOKEN=env-token"),
				Flags: flagSet(t, nil, "--set", "clients.billing.auth.bearer_token=flag-token",
					"--set", "clients.billing.auth.basic.password=flag-pass")}
		}, "flag-token", "flag-pass"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mustLoad(t, tt.l(t))
			a := cfg.Clients["billing"].Auth
			if got := a.BearerToken.Reveal(); got != tt.wantToken {
				t.Errorf("bearer_token: got %q, want %q", got, tt.wantToken)
			}
			if got := a.Basic.Password.Reveal(); got != tt.wantPass {
				t.Errorf("basic.password: got %q, want %q", got, tt.wantPass)
			}
			for _, s := range cfg.Clients["billing"].Settings() {
				if s.Key == "auth.bearer_token" || s.Key == "auth.basic.password" {
					if s.Text != config.Redacted || !s.Redacted {
						t.Errorf("Settings %s: got %q (redacted %v), want %s", s.Key, s.Text, s.Redacted, config.Redacted)
					}
				}
			}
			if out := fmt.Sprintf("%+v", cfg); strings.Contains(out, tt.wantToken) || strings.Contains(out, tt.wantPass) {
				t.Errorf("got %%+v of the loaded config holding a secret:\n%s", out)
			}
		})
	}
}

func TestEqualAndHashSeeAChangedSecret(t *testing.T) {
	base := withSecrets()
	tests := []struct {
		name   string
		change func(c *config.ClientConfig)
	}{
		{"bearer_token", func(c *config.ClientConfig) { c.Auth.BearerToken = testToken + "x" }},
		{"basic.password", func(c *config.ClientConfig) { c.Auth.Basic.Password = testPassword + "x" }},
		{"bearer_token cleared", func(c *config.ClientConfig) { c.Auth.BearerToken = "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := withSecrets()
			tt.change(&c)
			if base.Equal(c) {
				t.Errorf("Equal: got true, want false")
			}
			if base.Hash() == c.Hash() {
				t.Errorf("Hash: got equal digests, want different")
			}
			if !base.Equal(withSecrets()) || base.Hash() != withSecrets().Hash() {
				t.Errorf("an unchanged config: got Equal false or different digests, want equal")
			}
		})
	}
}

// TestMalformedAuthSectionErrorNeverQuotesTheCredential: a section that
// holds a secret (auth, auth.basic, headers, a client, defaults, routes,
// clients) written as a scalar is reported by its path, never by its
// value, from the file and from a Source.
func TestMalformedAuthSectionErrorNeverQuotesTheCredential(t *testing.T) {
	const cred = "svc:" + testPassword
	tests := []struct{ name, yaml, path string }{
		{"basic as text", "clients:\n  billing:\n    auth: {host: api.test, basic: \"" + cred + "\"}\n", "clients.billing.auth.basic"},
		{"auth as text", "clients:\n  billing:\n    auth: \"Bearer " + cred + "\"\n", "clients.billing.auth"},
		{"client as text", "clients:\n  billing: \"Bearer " + cred + "\"\n", "clients.billing"},
		{"defaults as text", "defaults: \"Bearer " + cred + "\"\n", "defaults"},
		{"clients as text", "clients: \"Bearer " + cred + "\"\n", "clients"},
		{"route as text", "clients:\n  billing:\n    routes:\n      \"GET /\": \"Bearer " + cred + "\"\n", `clients.billing.routes."GET /"`},
		{"routes as text", "clients:\n  billing:\n    routes: \"Bearer " + cred + "\"\n", "clients.billing.routes"},
		{"basic as a number", "clients:\n  billing:\n    auth: {host: api.test, basic: 12345678}\n", "clients.billing.auth.basic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := mustFail(t, config.Loader{File: writeConfig(t, tt.yaml)}, tt.path)
			for _, secret := range []string{testPassword, "12345678"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("load error quotes the credential: %v", err)
				}
			}
		})
	}
	src := mapSource{name: "mem", tree: map[string]any{"clients": map[string]any{"billing": map[string]any{
		"auth": map[string]any{"host": "api.test", "basic": cred},
	}}}}
	err := mustFail(t, config.Loader{Sources: []config.Source{src}}, "clients.billing.auth.basic", "source mem")
	if strings.Contains(err.Error(), testPassword) {
		t.Errorf("load error from a Source quotes the credential: %v", err)
	}
}

// TestInlineSecretWithALineBreakIsRejectedAtLoad: a bearer token or basic
// password with a CR or LF would fail every call; it is rejected at load,
// naming the key and where it was set, without quoting it.
func TestInlineSecretWithALineBreakIsRejectedAtLoad(t *testing.T) {
	path := writeConfig(t, "clients:\n  billing:\n    auth:\n      host: api.test\n      bearer_token: \""+testToken+"\\n\"\n")
	err := mustFail(t, config.Loader{File: path}, "clients.billing.auth.bearer_token", "line break", "line 5")
	if strings.Contains(err.Error(), testToken) {
		t.Errorf("load error quotes the token: %v", err)
	}
	err = mustFail(t, config.Loader{
		File:      writeConfig(t, "clients:\n  billing:\n    auth: {host: api.test, basic: {username: alice}}\n"),
		EnvPrefix: "SB_", Environ: environ("SB_CLIENTS__BILLING__AUTH__BASIC__PASSWORD=" + testPassword + "\r"),
	}, "clients.billing.auth.basic.password", "line break", "env SB_CLIENTS__BILLING__AUTH__BASIC__PASSWORD")
	if strings.Contains(err.Error(), testPassword) {
		t.Errorf("load error quotes the password: %v", err)
	}
}
