package middleware

import "net/http"

// PerHeaderQuotas returns how many per-header buckets of scope process l
// keeps.
func PerHeaderQuotas(l *RateLimit) int { return l.perHeaderQuotas() }

// CoalesceIdentity returns the identity Coalesce gives req under s, and
// whether req is coalesced at all.
func CoalesceIdentity(s CoalesceSettings, req *http.Request) (string, bool) {
	return Coalesce(s, CoalesceOptions{})(nil).(*coalescer).identity(req)
}

// ErrTimeoutCause is the cause the Timeout layer ends a call's context
// with.
var ErrTimeoutCause = errTimeoutCause
