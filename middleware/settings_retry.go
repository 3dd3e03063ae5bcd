package middleware

import "time"

// Jitter names how the retry layer randomises the delay before a retry.
// The zero value "" means JitterFull.
type Jitter string

// The jitter kinds. For retry n (1-based) let cap = min(MaxBackoff,
// InitialBackoff·Multiplier^(n-1)). Constant backoff is JitterNone with
// InitialBackoff equal to MaxBackoff: every delay is then exactly that.
const (
	JitterFull         Jitter = "full"         // uniform in [0, cap]
	JitterEqual        Jitter = "equal"        // cap/2 + uniform in [0, cap/2]
	JitterDecorrelated Jitter = "decorrelated" // uniform in [InitialBackoff/Multiplier, min(cap, Multiplier·previous delay)]
	JitterNone         Jitter = "none"         // exactly cap
)

// Built-in retry defaults; docs/reference.md's key table shows the same values.
const (
	DefaultMaxRetries      = 3
	DefaultInitialBackoff  = 500 * time.Millisecond
	DefaultMaxBackoff      = 30 * time.Second
	DefaultJitter          = JitterFull
	DefaultMaxBufferedBody = 1 << 20 // 1 MiB
	DefaultMultiplier      = 2.0     // each delay cap doubles
	DefaultBudgetRatio     = 0.2
	DefaultBudgetMinPerSec = 10
	DefaultBudgetTTL       = 10 * time.Second
)

// DefaultRetryableStatus returns the status codes retried when
// RetrySettings.RetryableStatus is left at its default: 429, 502, 503, 504.
func DefaultRetryableStatus() []int { return []int{429, 502, 503, 504} }

// IdempotentMethods returns the methods retried when RetrySettings.RetryableMethods
// is left at its default (and RetryAllMethods is false): GET, HEAD,
// OPTIONS, PUT, DELETE.
func IdempotentMethods() []string { return []string{"GET", "HEAD", "OPTIONS", "PUT", "DELETE"} }

// RetrySettings is the `retry` block of a client. The zero value retries nothing
// (MaxRetries 0). DefaultRetrySettings returns the built-in values.
type RetrySettings struct {
	// MaxRetries is how many times a logical call is retried after its first
	// attempt. Zero turns retry off.
	MaxRetries int `koanf:"max_retries" json:"max_retries" minimum:"0"`
	// InitialBackoff is the cap of the first retry's delay; each further retry
	// multiplies it by Multiplier, up to MaxBackoff.
	InitialBackoff time.Duration `koanf:"initial_backoff" json:"initial_backoff"`
	// MaxBackoff caps every delay. A Retry-After longer than MaxBackoff is not
	// waited for: the response is returned at once. Zero means no cap (in
	// code; the configuration's default is DefaultMaxBackoff).
	MaxBackoff time.Duration `koanf:"max_backoff" json:"max_backoff"`
	// Jitter picks how the delay is randomised; "" means JitterFull.
	Jitter Jitter `koanf:"jitter" json:"jitter" enum:"full,equal,decorrelated,none"`
	// RetryableStatus lists the response status codes that are retried. Nil
	// means DefaultRetryableStatus(); an empty non-nil list retries no status
	// (transport errors only).
	RetryableStatus []int `koanf:"retryable_status" json:"retryable_status" minimum:"100" maximum:"599"`
	// RetryableMethods lists the methods that are retried (unless
	// RetryAllMethods). Nil means IdempotentMethods(); an empty non-nil list
	// retries no method. Entries are upper-cased; request methods are
	// matched case-sensitively.
	RetryableMethods []string `koanf:"retryable_methods" json:"retryable_methods"`
	// RetryAllMethods retries every method, POST and PATCH included. An
	// idempotency key (IdempotencyKey) makes that safe for the methods it
	// covers; without one a retried POST may run twice on the server.
	RetryAllMethods bool `koanf:"retry_all_methods" json:"retry_all_methods"`
	// AttemptTimeout is the deadline of each attempt. Zero means none.
	AttemptTimeout time.Duration `koanf:"attempt_timeout" json:"attempt_timeout"`
	// MaxBufferedBody is how many bytes of a request body without GetBody are
	// buffered so that it can be replayed. A longer body is sent once, unretried.
	// Zero means bodies without GetBody are never retried.
	MaxBufferedBody int64 `koanf:"max_buffered_body" json:"max_buffered_body" minimum:"0"`
	// Multiplier is the growth factor of the delay cap: the cap of retry n
	// is min(MaxBackoff, InitialBackoff·Multiplier^(n-1)). 1 keeps every
	// cap at InitialBackoff; zero means DefaultMultiplier (2). Values below
	// 1 count as 1.
	Multiplier float64 `koanf:"multiplier" json:"multiplier" minimum:"1"`
	// RateLimited is the schedule of a retry after a 429 Too Many Requests
	// that carries no valid Retry-After (with one, Retry-After rules as for
	// any status). Each of its keys left at zero takes the main schedule's
	// value, so the zero value means "the main schedule".
	RateLimited BackoffSettings `koanf:"rate_limited" json:"rate_limited"`
	// AttemptHeader, when not "", is a header set on every attempt to the
	// attempt's 1-based number ("1", "2", …), replacing any value the
	// caller gave it. "" sends none.
	AttemptHeader string `koanf:"attempt_header" json:"attempt_header"`
	// IdempotencyKey, when enabled, sends one idempotency key per logical
	// call of its methods and makes them retryable (see
	// IdempotencyKeySettings).
	IdempotencyKey IdempotencyKeySettings `koanf:"idempotency_key" json:"idempotency_key"`
	// Budget caps retries across all calls of the client.
	Budget BudgetSettings `koanf:"budget" json:"budget"`
}

// BackoffSettings is a backoff schedule of its own, the `retry.rate_limited`
// block. A zero field takes the value of the main schedule (RetrySettings'
// field of the same name); see RetrySettings.ForRateLimited. A plain value.
type BackoffSettings struct {
	// InitialBackoff is the cap of the first delay; zero = the main one.
	InitialBackoff time.Duration `koanf:"initial_backoff" json:"initial_backoff"`
	// MaxBackoff caps every delay; zero = the main one. It does not judge
	// a Retry-After: a 429's, as any other, is judged against the main
	// MaxBackoff.
	MaxBackoff time.Duration `koanf:"max_backoff" json:"max_backoff"`
	// Multiplier is the growth factor of the cap; zero = the main one.
	Multiplier float64 `koanf:"multiplier" json:"multiplier"`
	// Jitter randomises the delay; "" = the main one.
	Jitter Jitter `koanf:"jitter" json:"jitter" enum:",full,equal,decorrelated,none"`
}

// ForRateLimited returns the settings whose schedule (InitialBackoff,
// MaxBackoff, Multiplier, Jitter) the retry layer uses after a 429 without
// a valid Retry-After: s with each of those replaced by the non-zero field
// of s.RateLimited. It is a pure function of s.
func (s RetrySettings) ForRateLimited() RetrySettings {
	r := s.RateLimited
	if r.InitialBackoff != 0 {
		s.InitialBackoff = r.InitialBackoff
	}
	if r.MaxBackoff != 0 {
		s.MaxBackoff = r.MaxBackoff
	}
	if r.Multiplier != 0 {
		s.Multiplier = r.Multiplier
	}
	if r.Jitter != "" {
		s.Jitter = r.Jitter
	}
	return s
}

// BudgetSettings is the `retry.budget` block: a Finagle-style retry budget.
// Within a sliding TTL, retries may add at most Ratio to the first attempts,
// plus MinPerSecond retries a second that are always allowed. A zero Ratio
// and zero MinPerSecond allow no retries at all; a zero TTL turns the budget
// off (every retry allowed).
type BudgetSettings struct {
	// Ratio is the share of first attempts that retries may add (0.2 = 20%).
	Ratio float64 `koanf:"ratio" json:"ratio" minimum:"0"`
	// MinPerSecond retries a second are allowed whatever the ratio.
	MinPerSecond float64 `koanf:"min_per_second" json:"min_per_second" minimum:"0"`
	// TTL is how long a deposit (a first attempt) counts towards the budget.
	TTL time.Duration `koanf:"ttl" json:"ttl"`
}

// DefaultRetrySettings returns the built-in retry settings. Each call returns
// fresh slices, so callers may change the result.
func DefaultRetrySettings() RetrySettings {
	return RetrySettings{
		MaxRetries:       DefaultMaxRetries,
		InitialBackoff:   DefaultInitialBackoff,
		MaxBackoff:       DefaultMaxBackoff,
		Jitter:           DefaultJitter,
		RetryableStatus:  DefaultRetryableStatus(),
		RetryableMethods: IdempotentMethods(),
		MaxBufferedBody:  DefaultMaxBufferedBody,
		Multiplier:       DefaultMultiplier,
		IdempotencyKey:   DefaultIdempotencyKeySettings(),
		Budget: BudgetSettings{
			Ratio:        DefaultBudgetRatio,
			MinPerSecond: DefaultBudgetMinPerSec,
			TTL:          DefaultBudgetTTL,
		},
	}
}
