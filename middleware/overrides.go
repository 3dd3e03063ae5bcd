package middleware

import (
	"context"
	"sync/atomic"
	"time"
)

// Overrides changes, for the requests whose context carries it, settings that
// the configuration otherwise gives every request of a client. A nil field
// keeps the configured value; a non-nil field replaces it:
//
//   - MaxRetries replaces RetrySettings.MaxRetries; a pointer to 0 turns
//     retries off for the request, a negative value counts as 0.
//   - AttemptTimeout replaces the deadline of each attempt (AttemptTimeout);
//     a pointer to 0 (or less) means no per-attempt deadline.
//   - Timeout replaces the total deadline of the logical call (Timeout); a
//     pointer to 0 (or less) means no total deadline from switchboard. The
//     caller's own context deadline always applies.
//
// The zero value overrides nothing. An Overrides is a plain value: it is safe
// for concurrent use as long as nobody writes through its pointers while
// requests that carry it are in flight.
type Overrides struct {
	// MaxRetries replaces RetrySettings.MaxRetries; nil keeps it.
	MaxRetries *int
	// AttemptTimeout replaces the AttemptTimeout layer's deadline; nil keeps it.
	AttemptTimeout *time.Duration
	// Timeout replaces the Timeout layer's deadline; nil keeps it.
	Timeout *time.Duration
}

// overridesKey is the context key of Overrides. It is an unexported empty
// struct type, so no other package can collide with it and converting it to
// an interface does not allocate.
type overridesKey struct{}

// overridesUsed turns true at the first WithOverrides of the process. Until
// then OverridesFrom, which three layers call on every call, knows without
// walking the context chain that no context carries overrides.
var overridesUsed atomic.Bool

// WithOverrides returns a copy of ctx that carries o. Fields of o that are
// nil inherit the overrides ctx already carries, so
//
//	ctx = WithOverrides(ctx, Overrides{MaxRetries: &zero})
//	ctx = WithOverrides(ctx, Overrides{Timeout: &twoSeconds})
//
// carries both. Use it on the request context:
//
//	req = req.WithContext(middleware.WithOverrides(req.Context(), o))
//
// It is safe for concurrent use.
func WithOverrides(ctx context.Context, o Overrides) context.Context {
	if prev, ok := OverridesFrom(ctx); ok {
		if o.MaxRetries == nil {
			o.MaxRetries = prev.MaxRetries
		}
		if o.AttemptTimeout == nil {
			o.AttemptTimeout = prev.AttemptTimeout
		}
		if o.Timeout == nil {
			o.Timeout = prev.Timeout
		}
	}
	if !overridesUsed.Load() { // a store on every call would bounce the cache line every request reads
		overridesUsed.Store(true)
	}
	// A pointer is stored rather than the struct: the pointer fits in the
	// interface word, and OverridesFrom copies it out without allocating.
	return context.WithValue(ctx, overridesKey{}, &o)
}

// OverridesFrom returns the overrides ctx carries and whether it carries any.
// It is safe for concurrent use and does not allocate.
func OverridesFrom(ctx context.Context) (Overrides, bool) {
	if ctx == nil || !overridesUsed.Load() {
		return Overrides{}, false
	}
	o, ok := ctx.Value(overridesKey{}).(*Overrides)
	if !ok || o == nil {
		return Overrides{}, false
	}
	return *o, true
}

// maxRetriesFor returns the number of retries allowed for a request whose
// context is ctx: the override if there is one, else configured.
func maxRetriesFor(ctx context.Context, configured int) int {
	n := configured
	if o, ok := OverridesFrom(ctx); ok && o.MaxRetries != nil {
		n = *o.MaxRetries
	}
	return max(n, 0)
}

// deadlineKind says which Overrides field a deadline layer reads.
type deadlineKind uint8

const (
	deadlineCall    deadlineKind = iota // Overrides.Timeout
	deadlineAttempt                     // Overrides.AttemptTimeout
)

// durationFor returns the deadline length to use for a request whose context
// is ctx: the override of kind k if it is set, else configured. Zero or less
// means none. It takes a kind rather than a selector func so that the
// overrides copy stays on the stack (an indirect call would make it escape).
func durationFor(ctx context.Context, configured time.Duration, k deadlineKind) time.Duration {
	if o, ok := OverridesFrom(ctx); ok {
		p := o.Timeout
		if k == deadlineAttempt {
			p = o.AttemptTimeout
		}
		if p != nil {
			return max(*p, 0)
		}
	}
	return max(configured, 0)
}
