package middleware_test

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/middleware"
)

// FuzzParseRetryAfter checks ParseRetryAfter on any header value: it never
// panics, a delay is never negative, a value it rejects gives 0, the
// seconds form is exact (and round-trips through its own text), and the
// HTTP-date form is the time left until that date, and rejected once it
// is not after now.
// Seeds are in testdata/fuzz/FuzzParseRetryAfter.
func FuzzParseRetryAfter(f *testing.F) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := middleware.ParseRetryAfter(v, now)
		if d < 0 {
			t.Fatalf("ParseRetryAfter(%q): got %v, want >= 0", v, d)
		}
		if !ok {
			if d != 0 {
				t.Fatalf("ParseRetryAfter(%q): got %v, false; want 0 when rejected", v, d)
			}
			return
		}
		s := strings.TrimSpace(v)
		if digits(s) {
			secs, err := strconv.ParseUint(s, 10, 64)
			switch {
			case err == nil && secs <= math.MaxInt64/uint64(time.Second):
				if d != time.Duration(secs)*time.Second {
					t.Fatalf("ParseRetryAfter(%q): got %v, want %ds", v, d, secs)
				}
			case d != math.MaxInt64: // too large for a Duration: the longest one
				t.Fatalf("ParseRetryAfter(%q): got %v, want the longest Duration", v, d)
			}
			text := strconv.FormatInt(int64(d/time.Second), 10)
			if d2, ok2 := middleware.ParseRetryAfter(text, now); !ok2 || d2 != d.Truncate(time.Second) {
				t.Fatalf("round trip of %q through %q: got %v, %v; want %v", v, text, d2, ok2, d)
			}
			return
		}
		at, err := http.ParseTime(s)
		if err != nil {
			t.Fatalf("ParseRetryAfter(%q): got %v, true; want false: neither seconds nor an HTTP date", v, d)
		}
		if want := at.Sub(now); want <= 0 || d != want {
			t.Fatalf("ParseRetryAfter(%q): got %v, true; want %v until %v, and false for a date not after now", v, d, want, at)
		}
	})
}

// digits reports whether s is a non-empty run of ASCII digits.
func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
