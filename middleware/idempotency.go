package middleware

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// DefaultIdempotencyKeyHeader is the header that carries an idempotency key
// when IdempotencyKeySettings.Header is "", as the IETF draft
// "The Idempotency-Key HTTP Header Field" and Stripe name it.
const DefaultIdempotencyKeyHeader = "Idempotency-Key"

// DefaultIdempotencyKeyMethods returns the methods that get an idempotency
// key when IdempotencyKeySettings.Methods is left at its default: POST and
// PATCH, the methods HTTP does not define as idempotent that APIs use to
// create and change things.
func DefaultIdempotencyKeyMethods() []string { return []string{"POST", "PATCH"} }

// IdempotencyKeySettings is the `retry.idempotency_key` block: idempotency
// keys that make the calls of non-idempotent methods safe to retry. The
// zero value is off. A plain value.
//
// With Enabled, a request whose method is in Methods and that carries no
// Header (in any case of its letters, with any value) gets one: a new key
// per logical call, the same on every retry and every hedged copy of that
// call, so that a server that keeps the keys it has seen (Stripe's and the
// IETF draft's contract) runs the call once however often it arrives. A
// redirect hop that resends the same request to the same origin (a 307 or
// 308 that keeps the method) carries the key of the hop before it; any
// other hop gets a new one. A key the caller set is kept, never replaced.
// Those methods then count as eligible for retries and hedging, as
// RetryableMethods are; every other gate (attempts left, a replayable
// body, a retryable outcome, the budget) still applies.
type IdempotencyKeySettings struct {
	// Enabled sends keys and makes Methods retryable.
	Enabled bool `koanf:"enabled" json:"enabled"`
	// Header is the name of the header that carries the key; "" means
	// DefaultIdempotencyKeyHeader.
	Header string `koanf:"header" json:"header"`
	// Methods lists the methods that get a key and become retryable. Nil
	// means DefaultIdempotencyKeyMethods(); an empty non-nil list names no
	// method. Entries are upper-cased; request methods are matched
	// case-sensitively, as for RetryableMethods.
	Methods []string `koanf:"methods" json:"methods"`
}

// DefaultIdempotencyKeySettings returns the built-in settings: off, the
// Idempotency-Key header, POST and PATCH.
func DefaultIdempotencyKeySettings() IdempotencyKeySettings {
	return IdempotencyKeySettings{Header: DefaultIdempotencyKeyHeader, Methods: DefaultIdempotencyKeyMethods()}
}

// idempotencyKeys is the immutable form of IdempotencyKeySettings that a
// retry policy holds; the zero value is off.
type idempotencyKeys struct {
	header  string   // canonical header name; "" when off
	methods []string // upper-cased
}

func newIdempotencyKeys(s IdempotencyKeySettings) idempotencyKeys {
	if !s.Enabled {
		return idempotencyKeys{}
	}
	k := idempotencyKeys{header: http.CanonicalHeaderKey(strings.TrimSpace(s.Header))}
	if k.header == "" {
		k.header = DefaultIdempotencyKeyHeader
	}
	methods := s.Methods
	if methods == nil {
		methods = DefaultIdempotencyKeyMethods()
	}
	for _, m := range methods {
		if m = strings.ToUpper(strings.TrimSpace(m)); m != "" {
			k.methods = append(k.methods, m)
		}
	}
	return k
}

// covers reports whether requests of method (already defaulted: "" is
// GET) are keyed, and so eligible for retries.
func (k *idempotencyKeys) covers(method string) bool {
	return k.header != "" && slices.Contains(k.methods, method)
}

// forCall returns the key that every attempt of the logical call req is to
// carry: a new one when req's method is covered and req carries no key of
// its own, else "" (no key, or the caller's, which its Header already
// holds and every attempt copies). A header of that name in any case of
// its letters counts as the caller's, whatever its value, even empty: it
// is kept as it is, as PropagateDeadline and Headers keep the caller's
// headers, and no second key is added beside it.
//
// A redirect hop carries the key the previous hop was sent with only when
// it is the same request to the same server: the response that caused it
// was a 307 or 308 (which keep the method and the body), the hop keeps the
// previous hop's method, and it goes to the previous hop's origin (scheme,
// host, port; as sameOrigin compares them for Headers). Any other hop gets
// a new key: after a 301, 302 or 303 the hop is a different request (a GET
// after a POST: a server that saw one key on two different requests
// rejects the second), and a hop to another origin is, to that server, a
// new request — and the key, a header IsSensitiveHeader counts as a
// credential, is never sent to an origin other than the one it was made
// for, as Headers withholds such headers across origins. It is called once
// per logical call (per hop), before the first attempt.
func (k *idempotencyKeys) forCall(req *http.Request) (string, error) {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	if !k.covers(method) || k.callerSet(req.Header) {
		return "", nil
	}
	if prev := req.Response; prev != nil && prev.Request != nil && keepsRequest(prev, req) {
		if key := prev.Request.Header.Get(k.header); key != "" {
			return key, nil
		}
	}
	// uuid.NewRandom reads the package-wide source, which any code in the
	// process may replace (uuid.SetRand) or pool (uuid.EnableRandPool);
	// reading crypto/rand here keeps the key's 128 bits (122 random once
	// the UUIDv4 version and variant are set) from crypto/rand whatever
	// the rest of the program does.
	id, err := uuid.NewRandomFromReader(rand.Reader)
	if err != nil {
		return "", fmt.Errorf("switchboard: make idempotency key: %w", err)
	}
	return id.String(), nil
}

// callerSet reports whether the caller set the key's header (callerHas).
func (k *idempotencyKeys) callerSet(h http.Header) bool { return callerHas(h, k.header) }

// keepsRequest reports whether req, the hop http.Client sent after prev,
// resends prev's request as it was: prev is a 307 or 308, req has the
// method of the request prev answered, and goes to its origin.
func keepsRequest(prev *http.Response, req *http.Request) bool {
	if prev.StatusCode != http.StatusTemporaryRedirect && prev.StatusCode != http.StatusPermanentRedirect {
		return false
	}
	pm, m := prev.Request.Method, req.Method
	if pm == "" {
		pm = http.MethodGet
	}
	if m == "" {
		m = http.MethodGet
	}
	return pm == m && sameOrigin(prev.Request.URL, req.URL)
}
