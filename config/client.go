package config

import (
	"time"

	"github.com/switchboard-http/switchboard/middleware"
)

// ClientConfig is the effective configuration of one named client: every key
// of a `clients.<name>` section after `defaults` and the built-in defaults
// were merged under it. Zero values mean what each field's doc says (mostly
// "off"); a ClientConfig built in code should start from Default(). It is a
// plain value: safe for concurrent reads; its Headers map and lists are
// shared by copies, so do not change them once the value is handed out.
type ClientConfig struct {
	// Timeout is the total deadline of one logical call, all attempts and
	// waits included. Zero means none.
	Timeout time.Duration `koanf:"timeout" json:"timeout"`
	// BaseURL, when not "", is an absolute http or https URL without
	// userinfo, query or fragment: a request whose URL has no host is
	// resolved against it (RFC 3986) before any layer sees it. "" leaves
	// every request as it is.
	BaseURL string `koanf:"base_url" json:"base_url" secret:"url"`
	// Headers are set on every request that does not already carry them.
	// They print with sensitive values redacted (see Headers).
	Headers Headers `koanf:"headers" json:"headers" secret:"headers"`
	// Transport configures the base *http.Transport.
	Transport TransportConfig `koanf:"transport" json:"transport"`
	// TLS configures the base transport's TLS.
	TLS TLSConfig `koanf:"tls" json:"tls"`
	// Retry configures the retry layer and its budget.
	Retry middleware.RetrySettings `koanf:"retry" json:"retry"`
	// CircuitBreaker configures the circuit breaker layer.
	CircuitBreaker middleware.BreakerSettings `koanf:"circuit_breaker" json:"circuit_breaker"`
	// Bulkhead configures the bulkhead layer.
	Bulkhead middleware.BulkheadSettings `koanf:"bulkhead" json:"bulkhead"`
	// RateLimit configures the rate limit layer.
	RateLimit middleware.RateLimitSettings `koanf:"rate_limit" json:"rate_limit"`
	// Auth configures host-pinned credentials.
	Auth middleware.AuthSettings `koanf:"auth" json:"auth"`
	// Logging configures the per-attempt log.
	Logging middleware.LoggingSettings `koanf:"logging" json:"logging"`
	// Hedge configures hedged requests, in place of retry when enabled.
	Hedge middleware.HedgeSettings `koanf:"hedge" json:"hedge"`
	// Fault configures fault injection, for game days; off by default.
	Fault middleware.FaultSettings `koanf:"fault" json:"fault"`
	// Coalesce configures request coalescing: concurrent identical calls
	// share one trip through the pipeline; off by default. Client-level
	// only: routes cannot set it.
	Coalesce middleware.CoalesceSettings `koanf:"coalesce" json:"coalesce"`
	// Deadline sends each attempt's time left to the backend in a header.
	// It is the client's: a route cannot set it (the header a backend
	// reads is the backend's, and the value already follows the route's
	// timeout and attempt_timeout).
	Deadline middleware.DeadlineSettings `koanf:"deadline" json:"deadline"`
	// Routes maps http.ServeMux patterns to the effective settings of the
	// calls they match (see RouteConfig); a call that matches none runs
	// with the client's. Nil means no routes. Only a `clients.<name>`
	// section sets routes, in the file or a Source (env and flags cannot
	// spell a pattern); `defaults` has none.
	Routes map[string]RouteConfig `koanf:"-" json:"routes,omitempty"`
}

// TransportConfig is the `transport` block: the settings of the base
// *http.Transport, which is cloned from http.DefaultTransport and then set
// from these fields. Zero values mean what the field docs say. A plain value,
// safe for concurrent reads.
type TransportConfig struct {
	DialTimeout           time.Duration `koanf:"dial_timeout" json:"dial_timeout"`                                   // 0 = no dial timeout
	KeepAlive             time.Duration `koanf:"keep_alive" json:"keep_alive"`                                       // 0 = Go's default (15s)
	TLSHandshakeTimeout   time.Duration `koanf:"tls_handshake_timeout" json:"tls_handshake_timeout"`                 // 0 = none
	ResponseHeaderTimeout time.Duration `koanf:"response_header_timeout" json:"response_header_timeout"`             // 0 = none
	IdleConnTimeout       time.Duration `koanf:"idle_conn_timeout" json:"idle_conn_timeout"`                         // 0 = idle connections kept forever
	MaxIdleConns          int           `koanf:"max_idle_conns" json:"max_idle_conns" minimum:"0"`                   // 0 = unlimited
	MaxIdleConnsPerHost   int           `koanf:"max_idle_conns_per_host" json:"max_idle_conns_per_host" minimum:"0"` // 0 = Go's default (2)
	MaxConnsPerHost       int           `koanf:"max_conns_per_host" json:"max_conns_per_host" minimum:"0"`           // 0 = unlimited
	DisableKeepAlives     bool          `koanf:"disable_keep_alives" json:"disable_keep_alives"`
	ForceHTTP2            bool          `koanf:"force_http2" json:"force_http2"`
	ProxyURL              string        `koanf:"proxy_url" json:"proxy_url" secret:"url"`        // "" = HTTP_PROXY / HTTPS_PROXY / NO_PROXY
	MaxRedirects          int           `koanf:"max_redirects" json:"max_redirects" minimum:"0"` // 0 = do not follow redirects
	MaxConnAge            time.Duration `koanf:"max_conn_age" json:"max_conn_age" minimum:"0"`   // 0 = forever; an older connection serves one last request
}

// TLSConfig is the `tls` block. The zero value uses the system roots and no
// client certificate, with TLS 1.2 as the minimum version. A plain value,
// safe for concurrent reads.
type TLSConfig struct {
	CAFile             string `koanf:"ca_file" json:"ca_file"`     // PEM bundle that replaces the system roots
	CertFile           string `koanf:"cert_file" json:"cert_file"` // with KeyFile: client certificate (mTLS)
	KeyFile            string `koanf:"key_file" json:"key_file"`
	ServerName         string `koanf:"server_name" json:"server_name"`
	MinVersion         string `koanf:"min_version" json:"min_version" enum:"1.0,1.1,1.2,1.3"` // "1.0" … "1.3"; "" = 1.2
	InsecureSkipVerify bool   `koanf:"insecure_skip_verify" json:"insecure_skip_verify"`
}

// Built-in defaults of the top-level and transport keys. The middleware
// package exports the defaults of the blocks it owns.
const (
	DefaultTimeout               = 30 * time.Second
	DefaultDialTimeout           = 5 * time.Second
	DefaultKeepAlive             = 30 * time.Second
	DefaultTLSHandshakeTimeout   = 10 * time.Second
	DefaultResponseHeaderTimeout = 0
	DefaultIdleConnTimeout       = 90 * time.Second
	DefaultMaxIdleConns          = 100
	DefaultMaxIdleConnsPerHost   = 16
	DefaultMaxConnsPerHost       = 0
	DefaultForceHTTP2            = true
	DefaultMaxRedirects          = 10
	DefaultTLSMinVersion         = "1.2"
)

// Default returns the built-in client configuration, the bottom layer under
// every file. Each call returns fresh maps and slices. Safe for concurrent use.
func Default() ClientConfig {
	return ClientConfig{
		Timeout: DefaultTimeout,
		Headers: map[string]string{},
		Transport: TransportConfig{
			DialTimeout:           DefaultDialTimeout,
			KeepAlive:             DefaultKeepAlive,
			TLSHandshakeTimeout:   DefaultTLSHandshakeTimeout,
			ResponseHeaderTimeout: DefaultResponseHeaderTimeout,
			IdleConnTimeout:       DefaultIdleConnTimeout,
			MaxIdleConns:          DefaultMaxIdleConns,
			MaxIdleConnsPerHost:   DefaultMaxIdleConnsPerHost,
			MaxConnsPerHost:       DefaultMaxConnsPerHost,
			ForceHTTP2:            DefaultForceHTTP2,
			MaxRedirects:          DefaultMaxRedirects,
		},
		TLS:            TLSConfig{MinVersion: DefaultTLSMinVersion},
		Retry:          middleware.DefaultRetrySettings(),
		CircuitBreaker: middleware.DefaultBreakerSettings(),
		Bulkhead:       middleware.DefaultBulkheadSettings(),
		RateLimit:      middleware.DefaultRateLimitSettings(),
		Logging:        middleware.DefaultLoggingSettings(),
		Hedge:          middleware.DefaultHedgeSettings(),
		Fault:          middleware.DefaultFaultSettings(),
		Coalesce:       middleware.DefaultCoalesceSettings(),
		Deadline:       middleware.DefaultDeadlineSettings(),
	}
}
