package middleware

import (
	"context"
	"time"
)

// QuotaStore keeps quotas that several processes share: the store of a
// rate limit with scope fleet (RateLimitSettings.Scope QuotaFleet), given
// to the factory as factory.Options.Quotas. The module
// github.com/switchboard-http/switchboard/quotas/redis implements it on
// Redis. Implementations must be safe for concurrent use and should return
// when ctx ends: the rate limit bounds every call with its store_timeout.
type QuotaStore interface {
	// Take asks the quota called key, refilling at rate per second and
	// holding up to burst, for n tokens. It takes them and reports
	// Allowed, or takes none and reports in RetryAfter how long until n
	// could be taken. A key paused by Pause and not yet expired reports
	// Allowed false, Paused true and the time left of the pause in
	// RetryAfter, read in the same decision.
	Take(ctx context.Context, key string, rate float64, burst, n int) (QuotaDecision, error)
	// Pause pauses the quota called key until until: every Take of it
	// before then reports Paused. A pause that ends later than until is
	// kept (the longest wins). An until not after now does nothing.
	Pause(ctx context.Context, key string, until time.Time) error
}

// QuotaDecision is the answer of QuotaStore.Take. The zero value refuses
// with no hint of when to ask again. A plain value.
type QuotaDecision struct {
	// Allowed is true when the tokens were taken.
	Allowed bool
	// RetryAfter is, when not Allowed, how long until the tokens could be
	// taken (or until the pause ends); zero when Allowed.
	RetryAfter time.Duration
	// Remaining is how many tokens the quota holds after the decision.
	Remaining int
	// Paused is true when a pause refused the tokens.
	Paused bool
}
