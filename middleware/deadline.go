package middleware

import (
	"math"
	"net/http"
	"strconv"
	"time"
)

// DeadlineFormat is how PropagateDeadline writes the time left. The zero
// value "" means DeadlineMillis.
type DeadlineFormat string

// The deadline formats. Each rounds the time left down, so a backend never
// believes it has more time than the caller gives it.
const (
	// DeadlineMillis is whole milliseconds: "1500" (Envoy's
	// x-envoy-expected-rq-timeout-ms).
	DeadlineMillis DeadlineFormat = "ms"
	// DeadlineSeconds is whole seconds: "1" for 1.9s.
	DeadlineSeconds DeadlineFormat = "seconds"
	// DeadlineGRPC is gRPC's grpc-timeout syntax: at most 8 digits and a
	// unit (H hours, M minutes, S seconds, m milliseconds, u microseconds,
	// n nanoseconds), the finest unit whose value fits in 8 digits:
	// "1500000u" for 1.5s, "150000m" for 150s.
	DeadlineGRPC DeadlineFormat = "grpc"
)

// DeadlineSettings is the `deadline` block: the time left of each attempt,
// sent to the backend in a header. The zero value sends nothing. A plain
// value.
type DeadlineSettings struct {
	// Header is the name of the header that carries the time left, e.g.
	// X-Request-Timeout-Ms or grpc-timeout. "" sends none.
	Header string `koanf:"header" json:"header"`
	// Format is how the time left is written; "" means DeadlineMillis.
	Format DeadlineFormat `koanf:"format" json:"format" enum:"ms,seconds,grpc"`
}

// DefaultDeadlineSettings returns the built-in settings: no header, format
// ms.
func DefaultDeadlineSettings() DeadlineSettings { return DeadlineSettings{Format: DeadlineMillis} }

// maxGRPCTimeoutValue is the largest value grpc-timeout allows: 8 digits.
const maxGRPCTimeoutValue = 99_999_999

// This array's length is negative, and the package does not compile,
// unless every time.Duration, written in hours,
// fits grpc-timeout's 8 digits: (2^63-1)ns is 2,562,047 hours, so
// FormatDeadline's coarsest unit needs no fallback.
var _ [maxGRPCTimeoutValue - math.MaxInt64/int64(time.Hour)]struct{}

// grpcUnits are grpc-timeout's units, finest first; the last is hours.
var grpcUnits = [...]struct {
	d    time.Duration
	unit string
}{
	{time.Nanosecond, "n"}, {time.Microsecond, "u"}, {time.Millisecond, "m"},
	{time.Second, "S"}, {time.Minute, "M"}, {time.Hour, "H"},
}

// FormatDeadline returns left, the time left until a deadline, as format
// writes it, rounded down: "1999" for 1.9999s in DeadlineMillis. A left of
// zero or less, and one shorter than the format's unit, is "0" ("0n" in
// DeadlineGRPC): no time left, never a negative value. It is a pure
// function, safe for concurrent use.
func FormatDeadline(left time.Duration, format DeadlineFormat) string {
	left = max(left, 0)
	switch format {
	case DeadlineSeconds:
		return strconv.FormatInt(int64(left/time.Second), 10)
	case DeadlineGRPC:
		last := len(grpcUnits) - 1
		for _, u := range grpcUnits[:last] {
			if v := int64(left / u.d); v <= maxGRPCTimeoutValue {
				return strconv.FormatInt(v, 10) + u.unit
			}
		}
		// Hours always fit: the longest time.Duration is 2,562,047 hours
		// (the array above grpcUnits checks it at compile time).
		return strconv.FormatInt(int64(left/grpcUnits[last].d), 10) + grpcUnits[last].unit
	default:
		return strconv.FormatInt(left.Milliseconds(), 10)
	}
}

// PropagateDeadline returns the middleware that tells the backend how long
// the caller will wait: it sets s.Header on each request to the time left
// until its context's deadline, written by FormatDeadline in s.Format. In
// a pipeline it runs below the attempt timeout and the rate limit, so the
// deadline is the tighter of the attempt's (attempt_timeout) and the
// call's (timeout, or the caller's own context), and the time spent
// waiting for a token is already gone from it.
//
// A request whose context has no deadline gets no header; one that
// already carries s.Header (set by the caller) is passed on as it is. A
// deadline that has passed is sent as 0 ("0n" for gRPC), as is a time left
// shorter than the format's unit: the truth rounded down. Sending nothing
// would tell the backend there is no deadline at all; such an attempt
// fails at once in the transport anyway. A backend should read 0 as "do
// not start": so do not point Header at a header whose 0 means "no limit"
// (Envoy's x-envoy-upstream-rq-timeout-ms, say).
//
// An s.Header of "" returns a middleware that returns its next
// RoundTripper itself. The request is copied, never changed: the copy
// shares the caller's body and context and gets its own header map. The
// middleware is safe for concurrent use; s is copied.
func PropagateDeadline(s DeadlineSettings) Middleware {
	if s.Header == "" {
		return identity
	}
	name, format := http.CanonicalHeaderKey(s.Header), s.Format
	return func(next http.RoundTripper) http.RoundTripper {
		return RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			dl, ok := req.Context().Deadline()
			if !ok {
				return next.RoundTrip(req)
			}
			if callerHas(req.Header, name) {
				return next.RoundTrip(req)
			}
			r2 := req.WithContext(req.Context())
			r2.Header = req.Header.Clone()
			if r2.Header == nil {
				r2.Header = make(http.Header, 1)
			}
			r2.Header[name] = []string{FormatDeadline(time.Until(dl), format)}
			return next.RoundTrip(r2)
		})
	}
}
