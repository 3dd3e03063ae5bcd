package config

import (
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-http/switchboard/middleware"
)

// Validate checks c as Load does after decoding and returns every problem
// found as a *FieldError, joined with errors.Join, or nil. Paths are
// "defaults.<key>" and "clients.<name>.<key>".
//
// It checks ranges (no negative counts, sizes or durations; status codes in
// 100..599; failure_rate_threshold in (0, 1]; failure_threshold,
// minimum_calls, half_open_max_requests and success_threshold >= 1; a
// positive breaker window), enumerations (jitter, circuit_breaker.mode and
// scope, logging.level, tls.min_version; "" stands for the default),
// syntax (retryable_methods, retry.idempotency_key.methods and header
// names — headers, attempt_header, idempotency_key.header, deadline.header,
// per_header, fault.header — are HTTP tokens, proxy_url an
// http, https or socks5 URL, base_url an http or https URL with neither
// userinfo, query nor fragment, auth.host a bare host[:port]), contradictions
// (attempt_timeout >= timeout, initial_backoff > max_backoff, the same in
// retry.rate_limited once its zero keys take the main ones, burst < 1
// with a rate, a credential without auth.host, a value and its _file both
// set, cert_file without key_file, bulkhead limits that do not nest as
// min_limit <= initial_limit <= max_limit, in either mode) and that every
// referenced file can be read. The breaker's numbers are checked whether or not the breaker is
// enabled: they are defaults a client may switch on later.
//
// In a Config built in code a zero breaker number (failure_threshold,
// failure_rate_threshold, window, minimum_calls, half_open_max_requests,
// success_threshold) stands for its built-in default, as it does for
// middleware.NewBreaker, so the zero ClientConfig is valid: no timeout, no
// retry, every layer off. Loader.Load is stricter: a layered file always
// carries the defaults, so a 0 there was written on purpose, and it is
// rejected ("half_open_max_requests: must be >= 1, got 0"). Client names
// must match ^[A-Za-z0-9_-]+$. Values of secret keys never appear in the
// errors.
// Validate reads referenced files but changes nothing; it is safe for
// concurrent use.
func (c Config) Validate() error {
	errs := validateClient("defaults", c.Defaults, false)
	for _, name := range slices.Sorted(maps.Keys(c.Clients)) {
		if !clientNameRE.MatchString(name) {
			errs = append(errs, &FieldError{
				Path: "clients." + name,
				Msg:  fmt.Sprintf("client name %s must match %s", quoteShort(name), clientNameRE),
			})
			continue
		}
		errs = append(errs, validateClient("clients."+name, c.Clients[name], false)...)
	}
	errs = append(errs, validateGroups(c)...)
	return joinFieldErrors(errs)
}

// validator collects FieldErrors under one section prefix.
type validator struct {
	prefix string
	errs   []*FieldError
}

func (v *validator) fail(key, format string, args ...any) {
	v.errs = append(v.errs, &FieldError{Path: v.prefix + "." + key, Msg: fmt.Sprintf(format, args...)})
}

// failAbout is fail for an error about key and the other keys about, all
// relative to the section: Load places it by the first of them a layer set.
func (v *validator) failAbout(key string, about []string, format string, args ...any) {
	v.fail(key, format, args...)
	fe := v.errs[len(v.errs)-1]
	for _, a := range about {
		fe.about = append(fe.about, v.prefix+"."+a)
	}
}

// validateClient checks one client (or the defaults) section at prefix.
// Strict is for loaded files, where a zero breaker number was written on
// purpose; otherwise a zero one stands for its default.
func validateClient(prefix string, c ClientConfig, strict bool) []*FieldError {
	v := &validator{prefix: prefix}
	validateLeaves(v, c, strict, nil)
	validateHeaders(v, c.Headers)
	validateBaseURL(v, c.BaseURL)
	validateTransport(v, c.Transport)
	validateTLS(v, c.TLS)
	validateRetry(v, c.Retry, c.Timeout)
	if c.RateLimit.RequestsPerSecond > 0 && c.RateLimit.Burst < 1 {
		v.failAbout("rate_limit.burst", []string{"rate_limit.requests_per_second"}, "must be >= 1 when requests_per_second is set, got %d", c.RateLimit.Burst)
	}
	if h := c.RateLimit.PerHeader; h != "" && !isToken(h) {
		v.fail("rate_limit.per_header", "must be an HTTP header name, got %s", quoteShort(h))
	}
	validateBulkhead(v, c.Bulkhead)
	validateAuth(v, c.Auth)
	validateSecrets(v, c)
	validateFault(v, c.Fault)
	for i, m := range c.Coalesce.Methods {
		if !isToken(m) {
			v.fail("coalesce.methods", "item %d must be an HTTP method, got %s", i+1, quoteShort(m))
		}
	}
	for i, h := range c.Coalesce.VaryHeaders {
		if !isToken(h) {
			v.fail("coalesce.vary_headers", "item %d must be an HTTP header name, got %s", i+1, quoteShort(h))
		}
	}
	if h := c.Deadline.Header; h != "" && !isToken(h) {
		v.fail("deadline.header", "must be an HTTP header name, got %s", quoteShort(h))
	}
	validateHeaderNames(v, c.Retry, c.Deadline.Header, true)
	validateRoutes(v, c, strict, slices.Clone(v.errs))
	return v.errs
}

// validateHeaderNames rejects two of the headers switchboard writes on an
// attempt sharing one name (case-insensitively, as HTTP compares names):
// retry.attempt_header, retry.idempotency_key.header (when enabled; ""
// is its default) and deadline (the client's deadline.header, which a
// route inherits). One would overwrite the other on the wire. A collision
// with deadline.header is reported at the retry key, so that a route that
// inherits the client's collision repeats the client's error word for word
// (and validateRoutes leaves it out); about names deadline.header for the
// client only (a route has none of its own).
func validateHeaderNames(v *validator, r middleware.RetrySettings, deadline string, client bool) {
	attempt, idem := r.AttemptHeader, ""
	if r.IdempotencyKey.Enabled {
		if idem = r.IdempotencyKey.Header; idem == "" {
			idem = middleware.DefaultIdempotencyKeyHeader
		}
	}
	if attempt != "" && idem != "" && strings.EqualFold(attempt, idem) {
		v.failAbout("retry.attempt_header", []string{"retry.idempotency_key.header", "retry.idempotency_key.enabled"},
			"must differ from retry.idempotency_key.header (%s; names compare ignoring case), got %s", quoteShort(idem), quoteShort(attempt))
	}
	if deadline == "" {
		return
	}
	var about []string
	if client {
		about = []string{"deadline.header"}
	}
	if attempt != "" && strings.EqualFold(attempt, deadline) {
		v.failAbout("retry.attempt_header", about,
			"must differ from deadline.header (%s; names compare ignoring case), got %s", quoteShort(deadline), quoteShort(attempt))
	}
	if idem != "" && strings.EqualFold(idem, deadline) {
		v.failAbout("retry.idempotency_key.header", append(about, "retry.idempotency_key.enabled"),
			"must differ from deadline.header (%s; names compare ignoring case) while idempotency_key is enabled, got %s", quoteShort(deadline), quoteShort(idem))
	}
}

func validateHeaders(v *validator, h map[string]string) {
	for _, name := range slices.Sorted(maps.Keys(h)) {
		if !isToken(name) {
			v.fail("headers."+name, "header name must be an HTTP token")
		}
		if strings.ContainsAny(h[name], "\r\n\x00") {
			v.fail("headers."+name, "header value must not contain CR, LF or NUL")
		}
	}
}

func validateFault(v *validator, f middleware.FaultSettings) {
	if f.Abort.Status != 0 && (f.Abort.Status < 200 || f.Abort.Status > 599) { // 0: the default, 503
		v.fail("fault.abort.status", "must be a final HTTP status in [200, 599], got %d", f.Abort.Status)
	}
	if f.Delay.Percent > 0 && f.Delay.Duration <= 0 {
		v.failAbout("fault.delay.duration", []string{"fault.delay.percent"}, "must be > 0 when fault.delay.percent is set, got %v", f.Delay.Duration)
	}
	if f.Header != "" && !isToken(f.Header) {
		v.fail("fault.header", "must be an HTTP header name, got %s", quoteShort(f.Header))
	}
}

// validateBaseURL checks base_url: an absolute http or https URL with a
// host and no userinfo (a credential in a URL ends up in logs and errors:
// use auth), no query and no fragment (RFC 3986 resolution would drop
// them from every request with a path of its own, silently). The URL is
// never shown: a rejected one may hold a password.
func validateBaseURL(v *validator, s string) {
	if s == "" {
		return
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		v.fail("base_url", "must be an absolute http or https URL like https://billing.internal/api/")
	case u.Scheme != "http" && u.Scheme != "https":
		v.fail("base_url", "must be an absolute http or https URL, got scheme %s", quoteShort(u.Scheme))
	case u.Host == "":
		v.fail("base_url", "must be an http or https URL with a host, like https://billing.internal/api/")
	case u.User != nil:
		v.fail("base_url", "must not hold userinfo (user:password@): set the credential with auth")
	case u.RawQuery != "" || u.ForceQuery:
		v.fail("base_url", "must not hold a query (?…): resolving a request's path against it would drop it")
	case u.Fragment != "" || strings.Contains(s, "#"):
		v.fail("base_url", "must not hold a fragment (#…)")
	}
}

func validateTransport(v *validator, t TransportConfig) {
	if t.ProxyURL != "" {
		// The URL is never quoted: the key table marks it secret-bearing (secret:"url").
		u, err := url.Parse(t.ProxyURL)
		switch {
		case err != nil:
			v.fail("transport.proxy_url", "must be an http, https or socks5 URL like http://proxy:3128")
		case u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "socks5":
			v.fail("transport.proxy_url", "must be an http, https or socks5 URL, got scheme %s", quoteShort(u.Scheme))
		case u.Host == "":
			v.fail("transport.proxy_url", "must be an http, https or socks5 URL with a host, like http://proxy:3128")
		}
	}
}

func validateTLS(v *validator, t TLSConfig) {
	switch {
	case t.CertFile != "" && t.KeyFile == "":
		v.failAbout("tls.key_file", []string{"tls.cert_file"}, "must be set when cert_file is set")
	case t.CertFile == "" && t.KeyFile != "":
		v.failAbout("tls.cert_file", []string{"tls.key_file"}, "must be set when key_file is set")
	}
	v.tlsFiles(t)
}

func validateRetry(v *validator, r middleware.RetrySettings, timeout time.Duration) {
	if r.InitialBackoff > r.MaxBackoff && r.MaxBackoff >= 0 {
		v.failAbout("retry.initial_backoff", []string{"retry.max_backoff"}, "must be <= max_backoff (%s), got %s", r.MaxBackoff, r.InitialBackoff)
	}
	for i, s := range r.RetryableStatus {
		if s < 100 || s > 599 {
			v.fail("retry.retryable_status", "item %d must be a status code in 100..599, got %d", i+1, s)
		}
	}
	for i, m := range r.RetryableMethods {
		if !isToken(m) {
			v.fail("retry.retryable_methods", "item %d must be an HTTP method, got %s", i+1, quoteShort(m))
		}
	}
	if r.AttemptTimeout > 0 && timeout > 0 && r.AttemptTimeout >= timeout {
		v.failAbout("retry.attempt_timeout", []string{"timeout"}, "must be less than timeout (%s), got %s", timeout, r.AttemptTimeout)
	}
	rl := r.RateLimited
	if m := rl.Multiplier; m != 0 && !(m >= 1) {
		v.fail("retry.rate_limited.multiplier", "must be 0 (the main multiplier) or >= 1, got %g", m)
	}
	if e := r.ForRateLimited(); (rl.InitialBackoff > 0 || rl.MaxBackoff > 0) && e.InitialBackoff > e.MaxBackoff && e.MaxBackoff >= 0 &&
		rl.InitialBackoff >= 0 && rl.MaxBackoff >= 0 {
		v.fail("retry.rate_limited.initial_backoff", "must be <= the rate-limited max_backoff (%s), got %s", e.MaxBackoff, e.InitialBackoff)
	}
	if r.AttemptHeader != "" && !isToken(r.AttemptHeader) {
		v.fail("retry.attempt_header", "must be an HTTP header name, got %s", quoteShort(r.AttemptHeader))
	}
	if h := r.IdempotencyKey.Header; h != "" && !isToken(h) {
		v.fail("retry.idempotency_key.header", "must be an HTTP header name, got %s", quoteShort(h))
	}
	for i, m := range r.IdempotencyKey.Methods {
		if !isToken(m) {
			v.fail("retry.idempotency_key.methods", "item %d must be an HTTP method, got %s", i+1, quoteShort(m))
		}
	}
}

// validateBulkhead checks that the adaptive limits nest: min_limit <=
// initial_limit <= max_limit. In either mode: they are defaults a client
// may switch to adaptive later. A zero one (in a Config built in code)
// stands for its default; a negative one is the range check's.
func validateBulkhead(v *validator, b middleware.BulkheadSettings) {
	lo, hi, initial := b.AdaptiveBounds()
	if lo < 1 || hi < 1 || initial < 1 {
		return
	}
	switch {
	case lo > hi:
		v.failAbout("bulkhead.min_limit", []string{"bulkhead.max_limit"}, "must be <= max_limit (%d), got %d", hi, lo)
	case initial < lo:
		v.failAbout("bulkhead.initial_limit", []string{"bulkhead.min_limit"}, "must be >= min_limit (%d), got %d", lo, initial)
	case initial > hi:
		v.failAbout("bulkhead.initial_limit", []string{"bulkhead.max_limit"}, "must be <= max_limit (%d), got %d", hi, initial)
	}
}

func validateAuth(v *validator, a middleware.AuthSettings) {
	if a.HasCredential() && a.Host == "" {
		v.failAbout("auth.host", credentialKeys, "must be set when a credential is set: the credential is sent to this host only")
	}
	if a.Host != "" && (strings.ContainsAny(a.Host, "/?#@ ") || strings.Contains(a.Host, "://")) {
		v.fail("auth.host", "must be a bare host[:port] as in request URLs, got %s", quoteShort(a.Host))
	}
	if a.BearerToken != "" && a.BearerTokenFile != "" {
		v.failAbout("auth.bearer_token_file", []string{"auth.bearer_token"}, "cannot be set together with bearer_token")
	}
	if a.Basic.Password != "" && a.Basic.PasswordFile != "" {
		v.failAbout("auth.basic.password_file", []string{"auth.basic.password"}, "cannot be set together with basic.password")
	}
	if strings.Contains(a.Basic.Username, ":") {
		// RFC 7617: the server splits user-id:password at the first colon.
		v.fail("auth.basic.username", "must not contain \":\" (RFC 7617: the server would split the credential at it)")
	}
	v.secretFile("auth.bearer_token_file", a.BearerTokenFile)
	v.secretFile("auth.basic.password_file", a.Basic.PasswordFile)
}

// validateSecrets rejects a secret key (tagged secret:"true") whose value
// holds a line break: it is sent in a header line, so every call would
// fail. The value is never shown.
func validateSecrets(v *validator, c ClientConfig) {
	cv := reflect.ValueOf(c)
	for _, l := range keyTable {
		if l.secret() && strings.ContainsAny(l.valueOf(cv).String(), "\r\n") {
			v.fail(l.path, "must not contain a line break (CR or LF): it is sent in a header")
		}
	}
}

// credentialKeys are the auth keys that set a credential.
var credentialKeys = []string{"auth.bearer_token", "auth.bearer_token_file", "auth.basic.username", "auth.basic.password", "auth.basic.password_file"}

// isToken reports whether s is a non-empty HTTP token (RFC 9110 tchar*).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
