package middleware

import "time"

// BreakerMode selects how a circuit breaker decides to open. The zero value ""
// means BreakerConsecutive.
type BreakerMode string

// The breaker modes.
const (
	BreakerConsecutive BreakerMode = "consecutive" // open after FailureThreshold failures in a row
	BreakerRate        BreakerMode = "rate"        // open when the failure rate over Window reaches FailureRateThreshold
	// BreakerAdaptive is client-side throttling (Google SRE book, "Handling
	// Overload"): never open, but reject each call locally with probability
	// max(0, (requests − AdaptiveK·accepts) / (requests + 1)) over Window.
	BreakerAdaptive BreakerMode = "adaptive"
)

// BreakerScope selects how many breakers a client keeps. The zero value ""
// means ScopeClient.
type BreakerScope string

// The breaker scopes.
const (
	ScopeClient BreakerScope = "client" // one breaker for the whole client
	ScopeHost   BreakerScope = "host"   // one breaker per URL host, bounded
)

// Built-in circuit breaker, bulkhead and rate limit defaults.
const (
	DefaultFailureThreshold     = 5
	DefaultFailureRateThreshold = 0.5
	DefaultBreakerWindow        = 30 * time.Second
	DefaultMinimumCalls         = 20
	DefaultCooldown             = 30 * time.Second
	DefaultHalfOpenMaxRequests  = 1
	DefaultSuccessThreshold     = 1
	DefaultRateLimitBurst       = 1
	DefaultAdaptiveK            = 2.0
)

// BreakerSettings is the `circuit_breaker` block. The zero value is a disabled
// breaker; DefaultBreakerSettings returns the built-in values.
type BreakerSettings struct {
	// Enabled switches the breaker on.
	Enabled bool `koanf:"enabled" json:"enabled"`
	// Mode is consecutive, rate or adaptive; "" means consecutive.
	Mode BreakerMode `koanf:"mode" json:"mode" enum:"consecutive,rate,adaptive"`
	// FailureThreshold is how many failures in a row open the breaker (consecutive mode).
	FailureThreshold int `koanf:"failure_threshold" json:"failure_threshold" minimum:"1"`
	// FailureRateThreshold is the failure share in (0, 1] that opens it (rate mode).
	FailureRateThreshold float64 `koanf:"failure_rate_threshold" json:"failure_rate_threshold" exclusiveMinimum:"0" maximum:"1"`
	// Window is the rolling window over which the rate is measured (rate mode).
	Window time.Duration `koanf:"window" json:"window" exclusiveMinimum:"0"`
	// MinimumCalls is how many outcomes the window needs before the rate counts (rate mode).
	MinimumCalls int `koanf:"minimum_calls" json:"minimum_calls" minimum:"1"`
	// Cooldown is how long an open breaker rejects calls before it admits probes.
	Cooldown time.Duration `koanf:"cooldown" json:"cooldown"`
	// HalfOpenMaxRequests is how many probes a half-open breaker admits at once.
	HalfOpenMaxRequests int `koanf:"half_open_max_requests" json:"half_open_max_requests" minimum:"1"`
	// SuccessThreshold is how many probe successes close the breaker.
	SuccessThreshold int `koanf:"success_threshold" json:"success_threshold" minimum:"1"`
	// AdaptiveK is the K of adaptive mode: the backend may reject up to
	// 1 − 1/K of the calls before the client throttles (2: half). Zero
	// means DefaultAdaptiveK; it must be >= 1.
	AdaptiveK float64 `koanf:"adaptive_k" json:"adaptive_k" minimum:"1"`
	// Scope is client or host; "" means client.
	Scope BreakerScope `koanf:"scope" json:"scope" enum:"client,host"`
	// Group, when not "", makes every client that names the same group
	// share one breaker (their breaker settings must be equal); "" is the
	// client's own.
	Group string `koanf:"group" json:"group"`
}

// DefaultBreakerSettings returns the built-in breaker settings (disabled).
func DefaultBreakerSettings() BreakerSettings {
	return BreakerSettings{
		Mode:                 BreakerConsecutive,
		FailureThreshold:     DefaultFailureThreshold,
		FailureRateThreshold: DefaultFailureRateThreshold,
		Window:               DefaultBreakerWindow,
		MinimumCalls:         DefaultMinimumCalls,
		Cooldown:             DefaultCooldown,
		HalfOpenMaxRequests:  DefaultHalfOpenMaxRequests,
		SuccessThreshold:     DefaultSuccessThreshold,
		AdaptiveK:            DefaultAdaptiveK,
		Scope:                ScopeClient,
	}
}

// BulkheadSettings is the `bulkhead` block. The zero value is unlimited.
type BulkheadSettings struct {
	// MaxConcurrent is how many logical calls may be in flight. Zero means unlimited.
	MaxConcurrent int `koanf:"max_concurrent" json:"max_concurrent" minimum:"0"`
	// MaxWait is how long a call waits for a slot before ErrBulkheadFull.
	// Zero means it does not wait.
	MaxWait time.Duration `koanf:"max_wait" json:"max_wait"`
	// Group, when not "", makes every client that names the same group
	// share one pool of slots (their bulkhead settings must be equal); ""
	// is the client's own.
	Group string `koanf:"group" json:"group"`
}

// RateLimitSettings is the `rate_limit` block. The zero value is unlimited.
type RateLimitSettings struct {
	// RequestsPerSecond is the sustained rate of attempts. Zero means unlimited.
	RequestsPerSecond float64 `koanf:"requests_per_second" json:"requests_per_second" minimum:"0"`
	// Burst is how many attempts may go at once after a quiet spell.
	Burst int `koanf:"burst" json:"burst" minimum:"0"`
	// Group, when not "", makes every client that names the same group
	// share one limiter (their rate_limit settings must be equal); "" is
	// the client's own.
	Group string `koanf:"group" json:"group"`
}

// DefaultRateLimitSettings returns the built-in rate limit settings (unlimited, burst 1).
func DefaultRateLimitSettings() RateLimitSettings {
	return RateLimitSettings{Burst: DefaultRateLimitBurst}
}
