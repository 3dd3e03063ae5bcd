package config_test

import (
	"testing"

	"github.com/switchboard-http/switchboard/config"
)

func TestProvenance(t *testing.T) {
	path := writeConfig(t, `defaults:
  timeout: 10s
  headers:
    User-Agent: a/1
clients:
  billing:
    retry:
      max_retries: 2
    headers: {x-team: billing}
`)
	cfg := mustLoad(t, config.Loader{
		File: path, EnvPrefix: "SB_",
		Environ: environ("SB_CLIENTS__BILLING__RETRY__JITTER=none", "SB_DEFAULTS__RETRY__MAX_BACKOFF=5s"),
		Flags:   flagSet(t, nil, "--set", "clients.billing.logging.level=info"),
	})
	tests := []struct {
		client, key string
		want        config.Origin
	}{
		{"billing", "retry.max_retries", config.Origin{Layer: config.LayerFile, Name: path, Line: 8, Path: "clients.billing.retry.max_retries"}},
		{"billing", "headers.X-Team", config.Origin{Layer: config.LayerFile, Name: path, Line: 9, Path: "clients.billing.headers.X-Team"}},
		{"billing", "timeout", config.Origin{Layer: config.LayerFile, Name: path, Line: 2, Path: "defaults.timeout"}},
		{"billing", "headers.User-Agent", config.Origin{Layer: config.LayerFile, Name: path, Line: 4, Path: "defaults.headers.User-Agent"}},
		{"billing", "retry.jitter", config.Origin{Layer: config.LayerEnv, Name: "SB_CLIENTS__BILLING__RETRY__JITTER", Path: "clients.billing.retry.jitter"}},
		{"billing", "retry.max_backoff", config.Origin{Layer: config.LayerEnv, Name: "SB_DEFAULTS__RETRY__MAX_BACKOFF", Path: "defaults.retry.max_backoff"}},
		{"billing", "logging.level", config.Origin{Layer: config.LayerFlag, Name: "--set clients.billing.logging.level", Path: "clients.billing.logging.level"}},
		{"billing", "retry.budget.ttl", config.Origin{Layer: config.LayerBuiltin, Path: "defaults.retry.budget.ttl"}},
		{"billing", "retry.retryable_status", config.Origin{Layer: config.LayerBuiltin, Path: "defaults.retry.retryable_status"}},
	}
	for _, tt := range tests {
		t.Run(tt.client+"/"+tt.key, func(t *testing.T) {
			got, ok := cfg.Provenance.Of(tt.client, tt.key)
			if !ok {
				t.Fatalf("Of(%q, %q): got none, want %+v", tt.client, tt.key, tt.want)
			}
			if got != tt.want {
				t.Errorf("Of(%q, %q):\ngot  %+v\nwant %+v", tt.client, tt.key, got, tt.want)
			}
		})
	}

	if got, want := cfg.Provenance.Defaults["timeout"].Line, 2; got != want {
		t.Errorf("defaults timeout line: got %d, want %d", got, want)
	}
	if o, ok := cfg.Provenance.Default("retry.max_backoff"); !ok || o.Layer != config.LayerEnv {
		t.Errorf("Default(retry.max_backoff): got %+v %v, want the env layer", o, ok)
	}
	// Every effective key has an origin; each header is its own key.
	billing := cfg.Provenance.Clients["billing"]
	for _, key := range []string{"transport.proxy_url", "tls.min_version", "auth.basic.password", "circuit_breaker.scope"} {
		if _, ok := billing[key]; !ok {
			t.Errorf("billing provenance: got no %q, want every key", key)
		}
	}
	if _, ok := billing["headers"]; ok {
		t.Errorf("billing provenance: got a key %q, want each header as its own key", "headers")
	}
	var nilProv *config.Provenance
	if _, ok := nilProv.Of("billing", "timeout"); ok {
		t.Error("nil Provenance Of: got ok, want false")
	}
}

func TestLayerString(t *testing.T) {
	tests := []struct {
		l    config.Layer
		want string
	}{
		{config.LayerBuiltin, "built-in"}, {config.LayerFile, "file"}, {config.LayerEnv, "env"}, {config.LayerFlag, "flag"},
	}
	for _, tt := range tests {
		if got := tt.l.String(); got != tt.want {
			t.Errorf("Layer(%d).String(): got %q, want %q", tt.l, got, tt.want)
		}
	}
}
