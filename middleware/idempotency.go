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
// non-empty Header gets one: a new key per logical call, the same on every
// retry and every hedged copy of that call, so that a server that keeps the
// keys it has seen (Stripe's and the IETF draft's contract) runs the call
// once however often it arrives; a redirect hop that keeps the method
// (307, 308) carries the key of the hop before it. A key the caller set is
// kept, never replaced. Those methods then count as eligible for retries and hedging,
// as RetryableMethods are; every other gate (attempts left, a replayable
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
// carry: a new one when req's method is covered and req carries no
// non-empty key of its own, else "" (no key, or the caller's, which its
// Header already holds and every attempt copies). A redirect hop of a
// covered method (a 307 or 308, which keeps the method and body) is the
// same logical call: it gets the key the previous hop was sent with, as
// http.Client copies a caller's own key onto every hop. It is called once
// per logical call (per hop), before the first attempt.
func (k *idempotencyKeys) forCall(req *http.Request) (string, error) {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	if !k.covers(method) || req.Header.Get(k.header) != "" {
		return "", nil
	}
	if prev := req.Response; prev != nil && prev.Request != nil {
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
