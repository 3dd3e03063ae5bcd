package config_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-http/switchboard/config"
)

// TestEnvKubeletServiceLinks is the pod of a Service named like the
// prefix: the kubelet's links (SVC_PORT, SVC_SERVICE_HOST, …) sit beside
// the operator's SVC_CLIENTS__… overrides, and only the latter are read.
func TestEnvKubeletServiceLinks(t *testing.T) {
	env := []string{
		"SVC_PORT=tcp://10.0.0.1:80",
		"SVC_PORT_80_TCP=tcp://10.0.0.1:80",
		"SVC_PORT_80_TCP_ADDR=10.0.0.1",
		"SVC_PORT_80_TCP_PORT=80",
		"SVC_PORT_80_TCP_PROTO=tcp",
		"SVC_SERVICE_HOST=10.0.0.1",
		"SVC_SERVICE_PORT=80",
		"SVC_CLIENTS__BILLING__TIMEOUT=2s",
		"svc_defaults__retry__max_retries=1",
	}
	l := config.Loader{File: writeConfig(t, "clients:\n  billing: {}\n"), EnvPrefix: "SVC_", Environ: environ(env...)}
	cfg, err := l.Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got := cfg.Clients["billing"].Timeout.String(); got != "2s" {
		t.Errorf("billing timeout: got %s, want 2s", got)
	}
	if got := cfg.Defaults.Retry.MaxRetries; got != 1 {
		t.Errorf("defaults max_retries: got %d, want 1 (any case)", got)
	}
	want := []string{"SVC_PORT", "SVC_PORT_80_TCP", "SVC_PORT_80_TCP_ADDR", "SVC_PORT_80_TCP_PORT", "SVC_PORT_80_TCP_PROTO", "SVC_SERVICE_HOST", "SVC_SERVICE_PORT"}
	if !slices.Equal(cfg.EnvIgnored, want) {
		t.Errorf("EnvIgnored: got %q, want %q", cfg.EnvIgnored, want)
	}
	// An ignored variable is no input: changing it changes no hash.
	env[0] = "SVC_PORT=tcp://10.0.0.2:80"
	again, err := l.Load()
	if err != nil || again.InputHash != cfg.InputHash {
		t.Errorf("InputHash after an ignored variable changed: got %s (err %v), want %s", again.InputHash, err, cfg.InputHash)
	}
	// A variable of switchboard's shape that names no key stays an error.
	l.Environ = environ(append(env, "SVC_CLIENTS__BILLING__TIMEOUTS=1s")...)
	mustFail(t, l, "env SVC_CLIENTS__BILLING__TIMEOUTS: unknown key", "did you mean TIMEOUT?")
}

// TestEnvKubeletSectionNamedServices is the pod beside Services named
// svc-clients and svc-defaults: their links start with the prefix and a
// section name followed by one "_" (SVC_CLIENTS_SERVICE_HOST), which is not
// switchboard's shape and is ignored; only a name that, "_" repaired to
// "__", names a real key is a misspelling worth an error.
func TestEnvKubeletSectionNamedServices(t *testing.T) {
	env := []string{
		"SVC_CLIENTS_PORT=tcp://10.0.0.1:80",
		"SVC_CLIENTS_PORT_8080_TCP_ADDR=10.0.0.1",
		"SVC_CLIENTS_SERVICE_HOST=10.0.0.1",
		"SVC_DEFAULTS_SERVICE_HOST=10.0.0.2",
		"SVC_CLIENTS__BILLING__TIMEOUT=2s",
	}
	l := config.Loader{File: writeConfig(t, "clients:\n  billing: {}\n"), EnvPrefix: "SVC_", Environ: environ(env...)}
	cfg, err := l.Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got := cfg.Clients["billing"].Timeout.String(); got != "2s" {
		t.Errorf("billing timeout: got %s, want 2s", got)
	}
	want := []string{"SVC_CLIENTS_PORT", "SVC_CLIENTS_PORT_8080_TCP_ADDR", "SVC_CLIENTS_SERVICE_HOST", "SVC_DEFAULTS_SERVICE_HOST"}
	if !slices.Equal(cfg.EnvIgnored, want) {
		t.Errorf("EnvIgnored: got %q, want %q", cfg.EnvIgnored, want)
	}
	l.Environ = environ(append(env, "SVC_CLIENTS_BILLING__TIMEOUT=1s")...)
	mustFail(t, l, "env SVC_CLIENTS_BILLING__TIMEOUT: names no key", "did you mean SVC_CLIENTS__BILLING__TIMEOUT?")
}

func TestEnvIsOurs(t *testing.T) {
	for name, want := range map[string]bool{
		"SVC_CLIENTS__BILLING__TIMEOUT": true,
		"svc_defaults__timeout":         true,
		"SVC_CLIENTS_BILLING__TIMEOUT":  false,
		"SVC_CLIENTSBILLING__TIMEOUT":   false,
		"SVC_CLIENTS_SERVICE_HOST":      false,
		"SVC_PORT":                      false,
		"SB_CLIENTS__BILLING__TIMEOUT":  false,
		"SVC":                           false,
	} {
		if got := config.EnvIsOurs("SVC_", name); got != want {
			t.Errorf("EnvIsOurs(SVC_, %s): got %t, want %t", name, got, want)
		}
	}
}

func TestDropUndefinedClients(t *testing.T) {
	file := writeConfig(t, "clients:\n  backend2: {}\n")
	env := environ("SVC_CLIENTS__BACKEND__TIMEOUT=2s", "SVC_CLIENTS__BACKEND2__TIMEOUT=3s")
	flags := flagSet(t, nil, "--set", "clients.backend.retry.max_retries=1")
	l := config.Loader{File: file, EnvPrefix: "SVC_", Environ: env, Flags: flags}
	mustFail(t, l, `env SVC_CLIENTS__BACKEND__TIMEOUT: no client "backend"; did you mean backend2?`,
		`--set clients.backend.retry.max_retries`)

	l.DropUndefinedClients = true
	cfg, err := l.Load()
	if err != nil {
		t.Fatalf("Load with DropUndefinedClients: %v", err)
	}
	if got := cfg.Clients["backend2"].Timeout.String(); got != "3s" {
		t.Errorf("backend2 timeout: got %s, want 3s: the other variables still apply", got)
	}
	want := []string{"--set clients.backend.retry.max_retries", "env SVC_CLIENTS__BACKEND__TIMEOUT"}
	if !slices.Equal(cfg.Dropped, want) {
		t.Errorf("Dropped: got %q, want %q", cfg.Dropped, want)
	}
	if _, ok := cfg.Clients["backend"]; ok {
		t.Error("client backend: got defined, want no client made by a dropped variable")
	}
}

const appFile = `server:
  listen: :8080
db:
  dsn: postgres://db
http_clients:
  defaults:
    timeout: 5s
  clients:
    billing:
      base_url: https://billing.internal/api/
      retry:
        max_retries: -1
`

func TestSection(t *testing.T) {
	file := writeConfig(t, appFile)
	l := config.Loader{File: file, Section: "http_clients"}
	err := mustFail(t, l, "http_clients.clients.billing.retry.max_retries: must be >= 0, got -1")
	fes := config.FieldErrors(err)
	if len(fes) != 1 || fes[0].Line != 12 {
		t.Fatalf("FieldErrors: got %v, want one on line 12 of the app's file", fes)
	}

	good := strings.Replace(appFile, "max_retries: -1", "max_retries: 2", 1)
	l.File = writeConfig(t, good)
	l.EnvPrefix, l.Environ = "SVC_", environ("SVC_CLIENTS__BILLING__TIMEOUT=2s")
	l.Flags = flagSet(t, nil, "--set", "http_clients.clients.billing.retry.initial_backoff=1s")
	cfg, err := l.Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	b := cfg.Clients["billing"]
	if b.BaseURL != "https://billing.internal/api/" || b.Retry.MaxRetries != 2 || b.Timeout.String() != "2s" || b.Retry.InitialBackoff.String() != "1s" {
		t.Errorf("billing: got base_url %q, max_retries %d, timeout %s, initial_backoff %s; want the section's, the env's and the flag's",
			b.BaseURL, b.Retry.MaxRetries, b.Timeout, b.Retry.InitialBackoff)
	}
	o := cfg.Provenance.Clients["billing"]
	if got := o["retry.max_retries"]; got.Path != "http_clients.clients.billing.retry.max_retries" || got.Line != 12 {
		t.Errorf("provenance of retry.max_retries: got %+v, want the full path, line 12", got)
	}
	if got := o["retry.initial_backoff"]; got.Layer != config.LayerFlag {
		t.Errorf("provenance of retry.initial_backoff: got %+v, want the flag (a --set key may carry the section)", got)
	}
	if got := o["transport.dial_timeout"]; got.Path != "http_clients.defaults.transport.dial_timeout" {
		t.Errorf("provenance of an inherited key: got %+v, want its full defaults path", got)
	}
}

func TestSectionErrors(t *testing.T) {
	tests := []struct {
		name, file, section string
		wants               []string
	}{
		{"missing section, with a hint", appFile, "http_client", []string{"no section http_client (Section); did you mean http_clients?"}},
		{"nested missing section", "platform:\n  htpp: {clients: {}}\n", "platform.http", []string{"no section platform.http", "did you mean platform.htpp?"}},
		{"section not a map", "http_clients: [1]\n", "http_clients", []string{"line 1: http_clients must be a map holding the client config, got a list"}},
		{"siblings of the section's keys are still checked", "http_clients:\n  clients: {}\n  server: {}\n", "http_clients", []string{"http_clients.server: unknown key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustFail(t, config.Loader{File: writeConfig(t, tt.file), Section: tt.section}, tt.wants...)
		})
	}
	// Without Section, the app's file says how to read it.
	mustFail(t, config.Loader{File: writeConfig(t, appFile)}, "http_clients: unknown key", `did you mean Section: "http_clients"`)
}

func TestSectionOfSources(t *testing.T) {
	src := mapSource{name: "store", tree: map[string]any{"http_clients": map[string]any{"clients": map[string]any{"billing": map[string]any{"timeout": "9s"}}}, "other": 1}}
	empty := mapSource{name: "app-only", tree: map[string]any{"feature": true}}
	cfg, err := config.Loader{File: writeConfig(t, "http_clients: {clients: {billing: {}}}\n"), Section: "http_clients", Sources: []config.Source{src, empty}}.Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got := cfg.Clients["billing"].Timeout.String(); got != "9s" {
		t.Errorf("billing timeout: got %s, want 9s from the Source's section", got)
	}
}

func TestBaseURLValidation(t *testing.T) {
	tests := []struct{ url, want string }{
		{"https://billing.internal/api/", ""},
		{"http://127.0.0.1:8080", ""},
		{"billing.internal/api", "base_url: must be an absolute http or https URL, got scheme"},
		{"ftp://billing.internal/", `got scheme "ftp"`},
		{"https:///api", "with a host"},
		{"https://user:hunter2@billing.internal/", "must not hold userinfo"},
		{"https://billing.internal/api?token=x", "must not hold a query"},
		{"https://billing.internal/api#top", "must not hold a fragment"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			_, err := config.Loader{Flags: flagSet(t, nil, "--set", "defaults.base_url="+tt.url)}.Load()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Load: got %v, want no error", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Load: got %v, want an error containing %q", err, tt.want)
			case err != nil && strings.Contains(err.Error(), "hunter2"):
				t.Errorf("Load: got %v, which shows the password", err)
			}
		})
	}
}

// TestSyntaxErrorPositions checks each kind of YAML syntax error against
// the real line and column of the offending character.
func TestSyntaxErrorPositions(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       string // "line:column: what"
	}{
		{"tab indentation", "clients:\n  billing:\n\ttimeout: 2s\n", ":3:1: not valid YAML: found character that cannot start any token (a tab"},
		{"bad indentation", "clients:\n  billing:\n    timeout: 2s\n    retry:\n      max_retries: 3\n      initial_backoff: 1s\n     jitter: full\n",
			":7:6: not valid YAML: did not find expected key"},
		{"unclosed flow", "clients:\n  billing:\n    retry: {retryable_status: [502, 503}\n", ":3:40: not valid YAML: did not find expected ',' or ']' (flow sequence opened at 3:31)"},
		{"duplicate key", "clients:\n  billing:\n    timeout: 2s\n    timeout: 3s\n", `:4:5: not valid YAML: mapping key "timeout" already defined at line 3`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Loader{File: writeConfig(t, tt.yaml)}.Load()
			if err == nil || !strings.Contains(err.Error(), "clients.yaml"+tt.want) {
				t.Fatalf("Load: got %v, want file%s", err, tt.want)
			}
			if !errors.Is(err, config.ErrSyntax) {
				t.Errorf("Load: got %v, want errors.Is ErrSyntax", err)
			}
		})
	}
}

func TestHintForAPartOfAKey(t *testing.T) {
	mustFail(t, config.Loader{File: writeConfig(t, "defaults:\n  retry:\n    backof: 1s\n")},
		"defaults.retry.backof: unknown key (line 3); did you mean initial_backoff or max_backoff?")
	mustFail(t, config.Loader{Flags: flagSet(t, nil, "--set", "defaults.retry.backof=1s")},
		"did you mean initial_backoff or max_backoff?")
}
