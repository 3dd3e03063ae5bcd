package middleware

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxDuration is the longest time.Duration; delays saturate there instead of
// overflowing.
const maxDuration = time.Duration(math.MaxInt64)

// BackoffCap returns the cap of the delay before retry n (1-based):
// min(MaxBackoff, InitialBackoff·Multiplier^(n-1)). The growth saturates
// instead of overflowing. A zero MaxBackoff means no cap; a zero
// InitialBackoff, or an n below 1, gives 0; a zero Multiplier means
// DefaultMultiplier and one below 1 counts as 1. It is a pure function of
// s and n.
func (s RetrySettings) BackoffCap(n int) time.Duration {
	if n < 1 || s.InitialBackoff <= 0 {
		return 0
	}
	m := s.growth()
	c := maxDuration
	switch {
	case m == 2: // exact in integers, as it always was
		if shift := n - 1; shift < 63 && s.InitialBackoff <= maxDuration>>shift {
			c = s.InitialBackoff << shift
		}
	case m == 1:
		c = s.InitialBackoff
	default:
		// float64 holds every whole number of nanoseconds up to 104 days
		// exactly, so whole multipliers give exact caps.
		if f := float64(s.InitialBackoff) * math.Pow(m, float64(n-1)); f < float64(maxDuration) {
			c = time.Duration(f)
		}
	}
	if s.MaxBackoff > 0 && c > s.MaxBackoff {
		c = s.MaxBackoff
	}
	return c
}

// growth returns the Multiplier that applies: DefaultMultiplier for zero,
// 1 for a value below 1 or NaN.
func (s RetrySettings) growth() float64 {
	switch m := s.Multiplier; {
	case m == 0:
		return DefaultMultiplier
	case m > 1:
		return m
	}
	return 1
}

// Delay returns the delay before retry n (1-based) under s.Jitter, given the
// delay before the previous retry (prev; for retry 1 pass InitialBackoff) and
// a random value r in [0, 1] (values outside are clamped). It is a pure
// function: Retry calls it with RetryOptions.Rand, tests with fixed values.
// With cap = BackoffCap(n) and m = Multiplier, every jitter stays within
// cap, so Multiplier holds under each:
//
//	full          r·cap                      in [0, cap]
//	equal         cap/2 + r·(cap − cap/2)    in [cap/2, cap]
//	decorrelated  lo + r·(hi − lo)           in [lo, hi], lo = InitialBackoff/m, hi = min(cap, m·prev)
//	none          cap
//
// Decorrelated is AWS's decorrelated jitter (next = uniform(base,
// 3·previous)) with m in place of its fixed 3 and base InitialBackoff/m,
// capped as the others: each delay depends on the one before, grows by at
// most m over it, and the first is at most InitialBackoff; m = 1 makes it
// constant. The zero Jitter "" and unknown values mean JitterFull. A zero
// MaxBackoff means no cap. Constant backoff is JitterNone with
// InitialBackoff equal to MaxBackoff.
func (s RetrySettings) Delay(n int, prev time.Duration, r float64) time.Duration {
	if n < 1 {
		return 0
	}
	r = min(max(r, 0), 1)
	switch s.Jitter {
	case JitterNone:
		return s.BackoffCap(n)
	case JitterEqual:
		c := s.BackoffCap(n)
		half := c / 2
		return half + scale(c-half, r)
	case JitterDecorrelated:
		m := s.growth()
		hi := s.BackoffCap(n)
		lo := min(time.Duration(float64(max(s.InitialBackoff, 0))/m), hi)
		if f := float64(max(prev, lo)) * m; f < float64(hi) {
			hi = time.Duration(f)
		}
		return lo + scale(hi-lo, r)
	default: // JitterFull, ""
		return scale(s.BackoffCap(n), r)
	}
}

// scale returns r·d for r in [0, 1], never more than d (float64 rounding near
// math.MaxInt64 would otherwise overflow).
func scale(d time.Duration, r float64) time.Duration {
	if d <= 0 {
		return 0
	}
	f := r * float64(d)
	if f >= float64(d) {
		return d
	}
	return time.Duration(f)
}

// usesRand reports whether Delay reads its random value under jitter j; the
// retry layer skips the random source for JitterNone.
func usesRand(j Jitter) bool { return j != JitterNone }

// ParseRetryAfter parses the value of a Retry-After header, as of now, into
// the time to wait. Both forms of RFC 9110 §10.2.3 are accepted:
// delta-seconds ("120") and an HTTP-date ("Wed, 21 Oct 2015 07:28:00 GMT",
// and the obsolete forms http.ParseTime knows). A number of seconds too
// large for a time.Duration saturates at the longest one. ok is false for
// an empty, negative or malformed value and for a date that is not after
// now (in the past, as from a server whose clock is behind): callers
// ignore it, and the retry layer's backoff schedule applies. "0" seconds
// is valid: retry at once. It is a pure function of its arguments.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if isDigits(v) {
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil || secs > int64(maxDuration/time.Second) {
			return maxDuration, true // only a range error can get here
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	if d := t.Sub(now); d > 0 {
		return d, true
	}
	return 0, false
}

// isDigits reports whether s is made of ASCII digits only.
func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// retryAfter returns the wait a response asks for in its Retry-After header,
// if it has a valid one.
func retryAfter(resp *http.Response, now time.Time) (time.Duration, bool) {
	if resp == nil {
		return 0, false
	}
	v := resp.Header.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	return ParseRetryAfter(v, now)
}
