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

// BulkheadMode selects how a bulkhead sets its limit. The zero value ""
// means BulkheadStatic.
type BulkheadMode string

// The bulkhead modes.
const (
	// BulkheadStatic: the limit is MaxConcurrent, as written (0 = off).
	BulkheadStatic BulkheadMode = "static"
	// BulkheadAdaptive: the limit is learned from the latency of the
	// calls, within [MinLimit, MaxLimit], starting at InitialLimit
	// (failsafe-go's adaptivelimiter); MaxConcurrent is not read.
	BulkheadAdaptive BulkheadMode = "adaptive"
)

// Adaptive reports whether m is BulkheadAdaptive ("" is static).
func (m BulkheadMode) Adaptive() bool { return m == BulkheadAdaptive }

// The adaptive bulkhead's built-in limits (those of failsafe-go's
// adaptivelimiter).
const (
	DefaultBulkheadMinLimit     = 1
	DefaultBulkheadMaxLimit     = 200
	DefaultBulkheadInitialLimit = 20
)

// BulkheadSettings is the `bulkhead` block. The zero value is unlimited;
// DefaultBulkheadSettings returns the built-in values (static, unlimited).
type BulkheadSettings struct {
	// Mode is static or adaptive; "" means static. Adaptive switches the
	// bulkhead on whatever MaxConcurrent says.
	Mode BulkheadMode `koanf:"mode" json:"mode" enum:"static,adaptive"`
	// MaxConcurrent is how many logical calls may be in flight (mode
	// static). Zero means unlimited. Mode adaptive does not read it.
	MaxConcurrent int `koanf:"max_concurrent" json:"max_concurrent" minimum:"0"`
	// MinLimit and MaxLimit bound the learned limit (mode adaptive);
	// InitialLimit is where it starts. MinLimit <= InitialLimit <=
	// MaxLimit, all >= 1; a zero one means its Default.
	MinLimit     int `koanf:"min_limit" json:"min_limit" minimum:"1"`
	MaxLimit     int `koanf:"max_limit" json:"max_limit" minimum:"1"`
	InitialLimit int `koanf:"initial_limit" json:"initial_limit" minimum:"1"`
	// MaxWait is how long a call waits for a slot before ErrBulkheadFull.
	// Zero means it does not wait.
	MaxWait time.Duration `koanf:"max_wait" json:"max_wait"`
	// Group, when not "", makes every client that names the same group
	// share one pool of slots (their bulkhead settings must be equal); ""
	// is the client's own.
	Group string `koanf:"group" json:"group"`
}

// DefaultBulkheadSettings returns the built-in bulkhead settings: static
// and unlimited, with the adaptive limits 1, 200 and 20 ready for mode
// adaptive.
func DefaultBulkheadSettings() BulkheadSettings {
	return BulkheadSettings{Mode: BulkheadStatic, MinLimit: DefaultBulkheadMinLimit,
		MaxLimit: DefaultBulkheadMaxLimit, InitialLimit: DefaultBulkheadInitialLimit}
}

// AdaptiveBounds returns s's MinLimit, MaxLimit and InitialLimit with a
// zero one standing for its default (DefaultBulkheadMinLimit, ...): the
// one place that says so, for the bulkhead and config's validation
// alike. It does not check that they nest. It is safe for concurrent use.
func (s BulkheadSettings) AdaptiveBounds() (lo, hi, initial int) {
	orDefault := func(n, def int) int {
		if n == 0 {
			return def
		}
		return n
	}
	return orDefault(s.MinLimit, DefaultBulkheadMinLimit), orDefault(s.MaxLimit, DefaultBulkheadMaxLimit),
		orDefault(s.InitialLimit, DefaultBulkheadInitialLimit)
}

// adaptiveLimits returns s's AdaptiveBounds made usable even where
// validation did not run (settings built in code): each at least 1, max
// at least min, the initial limit clamped into [min, max].
func (s BulkheadSettings) adaptiveLimits() (lo, hi, initial int) {
	lo, hi, initial = s.AdaptiveBounds()
	lo, hi, initial = max(lo, 1), max(hi, 1), max(initial, 1)
	hi = max(hi, lo)
	return lo, hi, min(max(initial, lo), hi)
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
	// Scope is process (this process's own bucket) or fleet (one quota
	// shared through a QuotaStore by every process that names its key);
	// "" means process.
	Scope QuotaScope `koanf:"scope" json:"scope" enum:"process,fleet"`
	// Key is the quota's name in the store; "" means the group's name,
	// else the client's.
	Key string `koanf:"key" json:"key"`
	// PerHeader, when not "", keeps one quota per value of this request
	// header (the value is hashed, never stored or logged in clear); a
	// request without it shares the Key quota. "" means one quota.
	PerHeader string `koanf:"per_header" json:"per_header"`
	// StoreTimeout bounds every decision of the store (scope fleet); zero
	// means DefaultQuotaStoreTimeout.
	StoreTimeout time.Duration `koanf:"store_timeout" json:"store_timeout" minimum:"0"`
	// OnStoreError is local, allow or deny: what a decision does when the
	// store fails or times out; "" means local.
	OnStoreError QuotaFallback `koanf:"on_store_error" json:"on_store_error" enum:"local,allow,deny"`
	// FallbackPerSecond is this process's own rate while the store fails
	// (with local); zero means RequestsPerSecond.
	FallbackPerSecond float64 `koanf:"fallback_per_second" json:"fallback_per_second" minimum:"0"`
	// RespectServer makes a 429 or 503 carrying Retry-After or
	// RateLimit-Reset pause the quota until then (fleet-wide with scope
	// fleet), capped at retry.max_backoff. False ignores them here (the
	// retry layer still reads Retry-After).
	RespectServer bool `koanf:"respect_server" json:"respect_server"`
}

// QuotaScope is where a rate limit's quota lives. The zero value ""
// means QuotaProcess.
type QuotaScope string

// The quota scopes.
const (
	QuotaProcess QuotaScope = "process" // an x/time/rate bucket in this process
	QuotaFleet   QuotaScope = "fleet"   // one quota in a QuotaStore, shared by every process
)

// QuotaFallback is what a fleet quota does while its store fails. The
// zero value "" means QuotaLocal.
type QuotaFallback string

// The store-failure modes.
const (
	QuotaLocal QuotaFallback = "local" // this process's own bucket at fallback_per_second
	QuotaAllow QuotaFallback = "allow" // admit every attempt
	QuotaDeny  QuotaFallback = "deny"  // refuse every attempt with ErrRateLimited
)

// DefaultQuotaStoreTimeout is the store_timeout a zero StoreTimeout stands for.
const DefaultQuotaStoreTimeout = 50 * time.Millisecond

// DefaultRateLimitSettings returns the built-in rate limit settings
// (unlimited, burst 1, scope process, store_timeout 50ms, on_store_error
// local).
func DefaultRateLimitSettings() RateLimitSettings {
	return RateLimitSettings{Burst: DefaultRateLimitBurst, Scope: QuotaProcess,
		StoreTimeout: DefaultQuotaStoreTimeout, OnStoreError: QuotaLocal}
}
