package config_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/middleware"
)

func TestValidateConfigInCode(t *testing.T) {
	good := config.Default()
	bad := config.Default()
	bad.Retry.MaxRetries = -1
	bad.Timeout = 2 * time.Second
	bad.Retry.AttemptTimeout = 5 * time.Second
	bad.CircuitBreaker.HalfOpenMaxRequests = -1
	bad.TLS.MinVersion = "1.4"
	bad.Headers = map[string]string{"Bad Header": "x"}

	tests := []struct {
		name  string
		cfg   config.Config
		wants []string
	}{
		{"defaults only", config.Config{Defaults: good}, nil},
		{"good client", config.Config{Defaults: good, Clients: map[string]config.ClientConfig{"billing": good}}, nil},
		{"bad client", config.Config{Defaults: good, Clients: map[string]config.ClientConfig{"billing": bad}}, []string{
			"clients.billing.retry.max_retries: must be >= 0, got -1",
			"clients.billing.retry.attempt_timeout: must be less than timeout (2s), got 5s",
			"clients.billing.circuit_breaker.half_open_max_requests: must be >= 1, got -1",
			`clients.billing.tls.min_version: must be one of 1.0, 1.1, 1.2, 1.3, got "1.4"`,
			"clients.billing.headers.Bad Header: header name must be an HTTP token",
		}},
		{"bad defaults", config.Config{Defaults: bad}, []string{"defaults.retry.max_retries: must be >= 0, got -1"}},
		{"bad client name", config.Config{Defaults: good, Clients: map[string]config.ClientConfig{"a.b": good}}, []string{
			`clients.a.b: client name "a.b" must match`,
		}},
		// In code a zero breaker number stands for its default, as it does
		// for middleware.NewBreaker, so factory.New accepts a literal.
		{"zero ClientConfig is valid", config.Config{Defaults: config.ClientConfig{}, Clients: map[string]config.ClientConfig{"billing": {}}}, nil},
		{"negative breaker numbers in code", config.Config{Defaults: config.ClientConfig{CircuitBreaker: middleware.BreakerSettings{
			FailureThreshold: -1, FailureRateThreshold: 1.5, Window: -time.Second,
		}}}, []string{
			"defaults.circuit_breaker.failure_threshold: must be >= 1, got -1",
			"defaults.circuit_breaker.failure_rate_threshold: must be in (0, 1], got 1.5",
			"defaults.circuit_breaker.window: must be > 0, got -1s",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if len(tt.wants) == 0 {
				if err != nil {
					t.Fatalf("Validate: got %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate: got nil, want errors %q", tt.wants)
			}
			for _, w := range tt.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate error:\n%v\ngot no %q, want it", err, w)
				}
			}
			if got, want := len(config.FieldErrors(err)), len(tt.wants); got < want {
				t.Errorf("FieldErrors: got %d, want at least %d", got, want)
			}
		})
	}
}

func TestValidateRules(t *testing.T) {
	readable := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(readable, []byte("t"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		mutate func(c *config.ClientConfig)
		want   string // "" = valid
	}{
		{"negative duration", func(c *config.ClientConfig) { c.Transport.DialTimeout = -time.Second }, "defaults.transport.dial_timeout: must be >= 0, got -1s"},
		{"max_redirects", func(c *config.ClientConfig) { c.Transport.MaxRedirects = -1 }, "defaults.transport.max_redirects: must be >= 0, got -1"},
		{"attempt_timeout equal to timeout", func(c *config.ClientConfig) { c.Retry.AttemptTimeout = c.Timeout }, "must be less than timeout (30s), got 30s"},
		{"attempt_timeout without timeout", func(c *config.ClientConfig) { c.Timeout = 0; c.Retry.AttemptTimeout = time.Hour }, ""},
		{"initial above max backoff", func(c *config.ClientConfig) { c.Retry.InitialBackoff = time.Minute }, "defaults.retry.initial_backoff: must be <= max_backoff (30s), got 1m0s"},
		{"status code", func(c *config.ClientConfig) { c.Retry.RetryableStatus = []int{99} }, "item 1 must be a status code in 100..599, got 99"},
		{"method token", func(c *config.ClientConfig) { c.Retry.RetryableMethods = []string{"GET", "BAD METHOD"} }, `item 2 must be an HTTP method, got "BAD METHOD"`},
		{"coalesce method token", func(c *config.ClientConfig) { c.Coalesce.Methods = []string{"GET", "BAD METHOD"} }, `coalesce.methods: item 2 must be an HTTP method, got "BAD METHOD"`},
		{"coalesce vary header token", func(c *config.ClientConfig) { c.Coalesce.VaryHeaders = []string{"Accept", "X: Y"} }, `coalesce.vary_headers: item 2 must be an HTTP header name, got "X: Y"`},
		{"max_buffered_body", func(c *config.ClientConfig) { c.Retry.MaxBufferedBody = -1 }, "defaults.retry.max_buffered_body: must be >= 0, got -1"},
		{"budget ratio", func(c *config.ClientConfig) { c.Retry.Budget.Ratio = -0.1 }, "defaults.retry.budget.ratio: must be >= 0, got -0.1"},
		{"budget min_per_second", func(c *config.ClientConfig) { c.Retry.Budget.MinPerSecond = -1 }, "defaults.retry.budget.min_per_second: must be >= 0, got -1"},
		{"breaker mode", func(c *config.ClientConfig) { c.CircuitBreaker.Mode = "sometimes" }, `defaults.circuit_breaker.mode: must be one of consecutive, rate, adaptive, got "sometimes"`},
		{"rate threshold 1 is fine", func(c *config.ClientConfig) { c.CircuitBreaker.FailureRateThreshold = 1 }, ""},
		{"minimum_calls", func(c *config.ClientConfig) { c.CircuitBreaker.MinimumCalls = -1 }, "defaults.circuit_breaker.minimum_calls: must be >= 1, got -1"},
		{"minimum_calls 0 in code is the default", func(c *config.ClientConfig) { c.CircuitBreaker.MinimumCalls = 0 }, ""},
		{"success_threshold", func(c *config.ClientConfig) { c.CircuitBreaker.SuccessThreshold = -2 }, "defaults.circuit_breaker.success_threshold: must be >= 1, got -2"},
		{"breaker scope", func(c *config.ClientConfig) { c.CircuitBreaker.Scope = "global" }, `defaults.circuit_breaker.scope: must be one of client, host, got "global"`},
		{"bulkhead max_wait", func(c *config.ClientConfig) { c.Bulkhead.MaxWait = -1 }, "defaults.bulkhead.max_wait: must be >= 0"},
		{"bulkhead mode", func(c *config.ClientConfig) { c.Bulkhead.Mode = "learned" }, `defaults.bulkhead.mode: must be one of static, adaptive, got "learned"`},
		{"bulkhead min_limit", func(c *config.ClientConfig) { c.Bulkhead.MinLimit = -1 }, "defaults.bulkhead.min_limit: must be >= 1, got -1"},
		{"bulkhead min above max", func(c *config.ClientConfig) { c.Bulkhead.MinLimit, c.Bulkhead.MaxLimit = 50, 10 }, "defaults.bulkhead.min_limit: must be <= max_limit (10), got 50"},
		{"bulkhead initial below min", func(c *config.ClientConfig) { c.Bulkhead.MinLimit = 30 }, "defaults.bulkhead.initial_limit: must be >= min_limit (30), got 20"},
		{"bulkhead initial above max", func(c *config.ClientConfig) { c.Bulkhead.MaxLimit = 10 }, "defaults.bulkhead.initial_limit: must be <= max_limit (10), got 20"},
		{"bulkhead limits checked in mode static too", func(c *config.ClientConfig) {
			c.Bulkhead.Mode, c.Bulkhead.InitialLimit = middleware.BulkheadStatic, 300
		}, "defaults.bulkhead.initial_limit: must be <= max_limit (200), got 300"},
		{"bulkhead zero limits in code are the defaults", func(c *config.ClientConfig) {
			c.Bulkhead = middleware.BulkheadSettings{Mode: middleware.BulkheadAdaptive}
		}, ""},
		{"bulkhead min = initial = max", func(c *config.ClientConfig) {
			c.Bulkhead.MinLimit, c.Bulkhead.InitialLimit, c.Bulkhead.MaxLimit = 4, 4, 4
		}, ""},
		{"rate limit rps", func(c *config.ClientConfig) { c.RateLimit.RequestsPerSecond = -1 }, "defaults.rate_limit.requests_per_second: must be >= 0, got -1"},
		{"burst 0 without rate", func(c *config.ClientConfig) { c.RateLimit.Burst = 0 }, ""},
		{"logging level", func(c *config.ClientConfig) { c.Logging.Level = "trace" }, `defaults.logging.level: must be one of debug, info, off, got "trace"`},
		{"key without cert", func(c *config.ClientConfig) { c.TLS.KeyFile = readable }, "defaults.tls.cert_file: must be set when key_file is set"},
		{"cert and key", func(c *config.ClientConfig) { c.TLS.CertFile, c.TLS.KeyFile = pemPair(t) }, ""},
		{"unreadable ca", func(c *config.ClientConfig) { c.TLS.CAFile = "/nonexistent/ca.pem" }, "defaults.tls.ca_file: cannot read file: open /nonexistent/ca.pem"},
		{"directory as file", func(c *config.ClientConfig) { c.TLS.CAFile = os.TempDir() }, "is a directory"},
		{"proxy socks5", func(c *config.ClientConfig) { c.Transport.ProxyURL = "socks5://p:1080" }, ""},
		{"proxy without host", func(c *config.ClientConfig) { c.Transport.ProxyURL = "http://" }, "defaults.transport.proxy_url: must be an http, https or socks5 URL with a host"},
		{"auth host with scheme", func(c *config.ClientConfig) { c.Auth.Host = "https://a.internal" }, "defaults.auth.host: must be a bare host[:port]"},
		{"basic credential without host", func(c *config.ClientConfig) { c.Auth.Basic.Username = "u" }, "defaults.auth.host: must be set when a credential is set"},
		{"password and password_file", func(c *config.ClientConfig) {
			c.Auth.Host, c.Auth.Basic.Username, c.Auth.Basic.Password, c.Auth.Basic.PasswordFile = "h", "u", "p", readable
		}, "defaults.auth.basic.password_file: cannot be set together with basic.password"},
		{"token file readable", func(c *config.ClientConfig) { c.Auth.Host, c.Auth.BearerTokenFile = "h:1", readable }, ""},
		{"header value with newline", func(c *config.ClientConfig) { c.Headers = map[string]string{"X-A": "a\r\nb"} }, "defaults.headers.X-A: header value must not contain CR, LF or NUL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := config.Default()
			tt.mutate(&c)
			err := config.Config{Defaults: c}.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate: got %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate: got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestSecretsNeverInErrors(t *testing.T) {
	const secret = "s3cr3t-Zq9"
	tests := []struct {
		name string
		l    func(t *testing.T) config.Loader
	}{
		{"token without host", func(t *testing.T) config.Loader {
			return config.Loader{File: writeConfig(t, "clients:\n  b:\n    auth: {bearer_token: "+secret+"}\n")}
		}},
		{"token and token file", func(t *testing.T) config.Loader {
			return config.Loader{File: writeConfig(t, "clients:\n  b:\n    auth: {host: h, bearer_token: "+secret+", bearer_token_file: /nonexistent/t}\n")}
		}},
		{"password without host, wrong-typed token", func(t *testing.T) config.Loader {
			return config.Loader{File: writeConfig(t, "defaults:\n  auth:\n    bearer_token: ["+secret+"]\n    basic: {username: u, password: "+secret+"}\n")}
		}},
		{"secret typed as a number", func(t *testing.T) config.Loader {
			return config.Loader{File: writeConfig(t, "defaults:\n  auth:\n    basic: {password: {x: "+secret+"}}\n")}
		}},
		{"header value that is a list", func(t *testing.T) config.Loader {
			return config.Loader{File: writeConfig(t, "defaults:\n  headers: {Authorization: ["+secret+"]}\n")}
		}},
		{"header value with a newline", func(t *testing.T) config.Loader {
			return config.Loader{File: writeConfig(t, "defaults:\n  headers: {Authorization: \"Bearer "+secret+"\\n\"}\n")}
		}},
		{"env with a typo in a secret key", func(t *testing.T) config.Loader {
			return config.Loader{EnvPrefix: "SB_", Environ: environ("SB_DEFAULTS__AUTH__BEARER_TOKN=" + secret)}
		}},
		{"env secret without host", func(t *testing.T) config.Loader {
			return config.Loader{EnvPrefix: "SB_", Environ: environ("SB_CLIENTS__B__AUTH__BEARER_TOKEN=" + secret)}
		}},
		{"--set without =", func(t *testing.T) config.Loader {
			return config.Loader{Flags: flagSet(t, nil, "--set", "defaults.auth.bearer_token:"+secret)}
		}},
		{"--set secret with a typo", func(t *testing.T) config.Loader {
			return config.Loader{Flags: flagSet(t, nil, "--set", "defaults.auth.bearer_tokn="+secret)}
		}},
		{"proxy URL with a password", func(t *testing.T) config.Loader {
			return config.Loader{File: writeConfig(t, "defaults:\n  transport: {proxy_url: \"ftp://u:"+secret+"@p\"}\n")}
		}},
		{"proxy URL that does not parse", func(t *testing.T) config.Loader {
			return config.Loader{File: writeConfig(t, "defaults:\n  transport: {proxy_url: \"http://u:"+secret+"@p:x:y%\"}\n")}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.l(t).Load()
			if err == nil {
				t.Fatal("Load: got nil error, want one")
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(fmt.Sprintf("%+v", config.FieldErrors(err)), secret) {
				t.Errorf("Load error: got the secret in\n%v\nwant it absent", err)
			}
		})
	}
}

func TestFieldErrors(t *testing.T) {
	a := &config.FieldError{Path: "defaults.timeout", Msg: "must be >= 0, got -1s", Line: 3}
	b := &config.FieldError{Path: "clients.b.retry.max_retires", Msg: "unknown key", Hint: "max_retries"}
	c := &config.FieldError{Path: "clients.b.timeout", Input: "env SB_CLIENTS__B__TIMEOUT", Msg: `must be a duration string like "500ms", got "x"`}
	d := &config.FieldError{Path: "clients.b.timeout", SetBy: "--set clients.b.timeout", Msg: "must be >= 0, got -1s"}
	err := fmt.Errorf("load: %w", errors.Join(a, fmt.Errorf("wrapped: %w", b), errors.New("plain"), errors.Join(c, d)))
	got := config.FieldErrors(err)
	if len(got) != 4 || got[0] != a || got[1] != b || got[2] != c || got[3] != d {
		t.Fatalf("FieldErrors: got %v, want [a b c d]", got)
	}
	tests := []struct {
		fe   *config.FieldError
		want string
	}{
		{a, "defaults.timeout: must be >= 0, got -1s (line 3)"},
		{b, "clients.b.retry.max_retires: unknown key; did you mean max_retries?"},
		{c, `env SB_CLIENTS__B__TIMEOUT: must be a duration string like "500ms", got "x"`},
		{d, "clients.b.timeout: must be >= 0, got -1s (set by --set clients.b.timeout)"},
	}
	for _, tt := range tests {
		if got := tt.fe.Error(); got != tt.want {
			t.Errorf("Error(): got %q, want %q", got, tt.want)
		}
	}
	if got := config.FieldErrors(nil); got != nil {
		t.Errorf("FieldErrors(nil): got %v, want nil", got)
	}
}

func TestConfigClient(t *testing.T) {
	def := config.Default()
	billing := config.Default()
	billing.Timeout = time.Second
	cfg := config.Config{Defaults: def, Clients: map[string]config.ClientConfig{"billing": billing}}
	if got, ok := cfg.Client("billing"); !ok || got.Timeout != time.Second {
		t.Errorf("Client(billing): got %v %v, want 1s true", got.Timeout, ok)
	}
	if got, ok := cfg.Client("nope"); ok || got.Timeout != def.Timeout {
		t.Errorf("Client(nope): got %v %v, want the defaults' %v and false", got.Timeout, ok, def.Timeout)
	}
}
