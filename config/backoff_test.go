package config_test

import (
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/middleware"
)

func TestBackoffFamilyKeysLoad(t *testing.T) {
	cfg := mustLoad(t, config.Loader{File: writeConfig(t, `
clients:
  billing:
    retry:
      multiplier: 3
      rate_limited: {initial_backoff: 5s, max_backoff: 60s, multiplier: 3, jitter: equal}
      attempt_header: X-Attempt
`)})
	r := client(t, cfg, "billing").Retry
	want := middleware.BackoffSettings{InitialBackoff: 5 * time.Second, MaxBackoff: time.Minute, Multiplier: 3, Jitter: middleware.JitterEqual}
	if r.Multiplier != 3 || r.RateLimited != want || r.AttemptHeader != "X-Attempt" {
		t.Fatalf("retry: got multiplier %v, rate_limited %+v, attempt_header %q; want 3, %+v, X-Attempt",
			r.Multiplier, r.RateLimited, r.AttemptHeader, want)
	}
	if d := cfg.Defaults.Retry; d.Multiplier != middleware.DefaultMultiplier || d.RateLimited != (middleware.BackoffSettings{}) {
		t.Fatalf("defaults: got multiplier %v, rate_limited %+v; want 2 and the main schedule", d.Multiplier, d.RateLimited)
	}
}

func TestBackoffFamilyValidation(t *testing.T) {
	tests := []struct {
		name, yaml string
		wants      []string
	}{
		{"multiplier below 1", "retry: {multiplier: 0.5}", []string{"clients.billing.retry.multiplier: must be >= 1, got 0.5"}},
		{"multiplier 0 in a file", "retry: {multiplier: 0}", []string{"clients.billing.retry.multiplier: must be >= 1, got 0"}},
		{"rate_limited multiplier", "retry: {rate_limited: {multiplier: 0.5}}",
			[]string{"clients.billing.retry.rate_limited.multiplier: must be 0 (the main multiplier) or >= 1, got 0.5"}},
		{"rate_limited jitter", "retry: {rate_limited: {jitter: wild}}",
			[]string{`clients.billing.retry.rate_limited.jitter: must be one of full, equal, decorrelated, none, got "wild"`}},
		{"rate_limited initial above its max", "retry: {rate_limited: {initial_backoff: 2m}}",
			[]string{"clients.billing.retry.rate_limited.initial_backoff: must be <= the rate-limited max_backoff (30s), got 2m0s"}},
		{"rate_limited negative", "retry: {rate_limited: {max_backoff: -1s}}",
			[]string{"clients.billing.retry.rate_limited.max_backoff: must be >= 0, got -1s"}},
		{"attempt_header not a token", `retry: {attempt_header: "X Attempt"}`,
			[]string{`clients.billing.retry.attempt_header: must be an HTTP header name, got "X Attempt"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustFail(t, config.Loader{File: writeConfig(t, "clients:\n  billing:\n    "+tt.yaml+"\n")}, tt.wants...)
		})
	}
	// In code a zero multiplier means the default.
	c := config.Default()
	c.Retry.Multiplier = 0
	if err := (config.Config{Defaults: c}).Validate(); err != nil {
		t.Fatalf("zero multiplier in code: got %v, want nil", err)
	}
}
