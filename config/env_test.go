package config_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/middleware"
)

func TestEnvLayer(t *testing.T) {
	file := "clients:\n  billing-v2: {}\n  search: {}\n"
	tests := []struct {
		name  string
		env   []string
		check func(t *testing.T, cfg config.Config)
	}{
		{
			name: "client name matches with _ for - and any case",
			env:  []string{"SWITCHBOARD_CLIENTS__BILLING_V2__RETRY__MAX_RETRIES=5", "switchboard_clients__Search__timeout=3s"},
			check: func(t *testing.T, cfg config.Config) {
				if got, want := client(t, cfg, "billing-v2").Retry.MaxRetries, 5; got != want {
					t.Errorf("billing-v2 max_retries: got %d, want %d", got, want)
				}
				if got, want := client(t, cfg, "search").Timeout, 3*time.Second; got != want {
					t.Errorf("search timeout: got %v, want %v", got, want)
				}
				if got, want := len(cfg.Clients), 2; got != want {
					t.Errorf("clients: got %v, want %d", keys(cfg.Clients), want)
				}
			},
		},
		{
			name: "a client not in the file is created in lower case with _ read as -",
			env:  []string{"SWITCHBOARD_CLIENTS__BILLING_V2__TIMEOUT=4s"},
			check: func(t *testing.T, cfg config.Config) {
				if got, want := client(t, cfg, "billing-v2").Timeout, 4*time.Second; got != want {
					t.Errorf("billing-v2 timeout: got %v, want %v", got, want)
				}
			},
		},
		{
			name: "comma-separated lists and the empty list",
			env: []string{
				"SWITCHBOARD_CLIENTS__SEARCH__RETRY__RETRYABLE_STATUS=502, 503",
				"SWITCHBOARD_CLIENTS__SEARCH__RETRY__RETRYABLE_METHODS=GET,POST",
				"SWITCHBOARD_DEFAULTS__RETRY__RETRYABLE_STATUS=",
			},
			check: func(t *testing.T, cfg config.Config) {
				s := client(t, cfg, "search")
				if got, want := s.Retry.RetryableStatus, []int{502, 503}; !reflect.DeepEqual(got, want) {
					t.Errorf("search retryable_status: got %v, want %v", got, want)
				}
				if got, want := s.Retry.RetryableMethods, []string{"GET", "POST"}; !reflect.DeepEqual(got, want) {
					t.Errorf("search retryable_methods: got %v, want %v", got, want)
				}
				if got := client(t, cfg, "billing-v2").Retry.RetryableStatus; got == nil || len(got) != 0 {
					t.Errorf("billing-v2 retryable_status: got %#v, want []int{}", got)
				}
			},
		},
		{
			name: "header names: _ becomes - in canonical form",
			env:  []string{"SWITCHBOARD_CLIENTS__SEARCH__HEADERS__X_REQUEST_SOURCE=abc"},
			check: func(t *testing.T, cfg config.Config) {
				if got, want := client(t, cfg, "search").Headers, (config.Headers{"X-Request-Source": "abc"}); !reflect.DeepEqual(got, want) {
					t.Errorf("headers: got %v, want %v", got, want)
				}
			},
		},
		{
			name: "every kind parses",
			env: []string{
				"SWITCHBOARD_DEFAULTS__CIRCUIT_BREAKER__ENABLED=true",
				"SWITCHBOARD_DEFAULTS__CIRCUIT_BREAKER__FAILURE_RATE_THRESHOLD=1",
				"SWITCHBOARD_DEFAULTS__RETRY__JITTER=none",
				"SWITCHBOARD_DEFAULTS__RETRY__MAX_BUFFERED_BODY=10",
				"SWITCHBOARD_DEFAULTS__AUTH__HOST=a.internal",
				"SWITCHBOARD_DEFAULTS__AUTH__BASIC__USERNAME=svc",
			},
			check: func(t *testing.T, cfg config.Config) {
				d := cfg.Defaults
				if !d.CircuitBreaker.Enabled || d.CircuitBreaker.FailureRateThreshold != 1 ||
					d.Retry.Jitter != middleware.JitterNone || d.Retry.MaxBufferedBody != 10 ||
					d.Auth.Host != "a.internal" || d.Auth.Basic.Username != "svc" {
					t.Errorf("defaults: got %+v, want the env values", d)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, mustLoad(t, config.Loader{File: writeConfig(t, file), EnvPrefix: "SWITCHBOARD_", Environ: environ(tt.env...)}))
		})
	}
}

func TestEnvLayerErrors(t *testing.T) {
	tests := []struct {
		name  string
		env   string
		wants []string
	}{
		{"unknown key with suggestion", "SWITCHBOARD_CLIENTS__BILLING__RETRY__MAX_RETIRES=5",
			[]string{"env SWITCHBOARD_CLIENTS__BILLING__RETRY__MAX_RETIRES: unknown key clients.billing.retry.max_retires; did you mean MAX_RETRIES?"}},
		{"unknown top level", "SWITCHBOARD_DEFAULT__TIMEOUT=1s", []string{"env SWITCHBOARD_DEFAULT__TIMEOUT: unknown key", "did you mean DEFAULTS?"}},
		{"prefix only names nothing", "SWITCHBOARD_LISTEN=:8080", []string{"env SWITCHBOARD_LISTEN: unknown key"}},
		{"a section is not a key", "SWITCHBOARD_DEFAULTS__RETRY=5", []string{"env SWITCHBOARD_DEFAULTS__RETRY: defaults.retry is a section"}},
		{"bad integer names the variable", "SWITCHBOARD_CLIENTS__BILLING__RETRY__MAX_RETRIES=abc",
			[]string{`env SWITCHBOARD_CLIENTS__BILLING__RETRY__MAX_RETRIES: must be an integer, got "abc"`}},
		{"bad duration", "SWITCHBOARD_DEFAULTS__TIMEOUT=500", []string{`env SWITCHBOARD_DEFAULTS__TIMEOUT: must be a duration string like "500ms", got "500"`}},
		{"bad list item", "SWITCHBOARD_DEFAULTS__RETRY__RETRYABLE_STATUS=502,x", []string{`env SWITCHBOARD_DEFAULTS__RETRY__RETRYABLE_STATUS: item 2 must be an integer, got "x"`}},
		{"bad value is validated with the variable named", "SWITCHBOARD_CLIENTS__BILLING__RETRY__MAX_RETRIES=-1",
			[]string{"clients.billing.retry.max_retries: must be >= 0, got -1 (set by env SWITCHBOARD_CLIENTS__BILLING__RETRY__MAX_RETRIES)"}},
		{"bad client name", "SWITCHBOARD_CLIENTS__A.B__TIMEOUT=1s", []string{"env SWITCHBOARD_CLIENTS__A.B__TIMEOUT: client name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := config.Loader{File: writeConfig(t, "clients:\n  billing: {}\n"), EnvPrefix: "SWITCHBOARD_", Environ: environ(tt.env)}
			err := mustFail(t, l, tt.wants...)
			for _, fe := range config.FieldErrors(err) {
				if fe.Path == "" {
					t.Errorf("FieldError %q: got empty Path, want a key path", fe)
				}
			}
		})
	}
}

func TestEnvLayerAmbiguousClient(t *testing.T) {
	l := config.Loader{
		File:      writeConfig(t, "clients:\n  a-b: {}\n  a_b: {}\n"),
		EnvPrefix: "SB_", Environ: environ("SB_CLIENTS__A_B__TIMEOUT=1s"),
	}
	mustFail(t, l, "matches several clients")
}
