package config

// keyDocs is the one description of every key of a client section, keyed by
// its dotted path. The JSON Schema (JSONSchema), the README's reference table
// (Reference) and `switchboard explain` all read it; a test fails when a key
// has no entry or an entry names no key.
var keyDocs = map[string]string{
	"timeout": "Total deadline of one logical call: all attempts, backoff waits and Retry-After waits. 0 = no deadline.",
	"headers": "Headers set on every request that does not already carry them; names are case-insensitive. Maps merge key by key with `defaults`.",

	"transport.dial_timeout":            "Deadline of each TCP dial. 0 = none.",
	"transport.keep_alive":              "TCP keep-alive period of each connection. 0 = Go's default (15s).",
	"transport.tls_handshake_timeout":   "Deadline of each TLS handshake. 0 = none.",
	"transport.response_header_timeout": "Deadline for the response headers after the request is written. 0 = none.",
	"transport.idle_conn_timeout":       "How long an idle connection stays in the pool. 0 = forever.",
	"transport.max_idle_conns":          "Idle connections kept across all hosts. 0 = unlimited.",
	"transport.max_idle_conns_per_host": "Idle connections kept per host. 0 = Go's default (2).",
	"transport.max_conns_per_host":      "Connections per host, in use or idle. 0 = unlimited.",
	"transport.disable_keep_alives":     "Use each connection for one request only.",
	"transport.force_http2":             "Try HTTP/2 even with a custom dialer or TLS config.",
	"transport.proxy_url":               "Proxy for every request: an http, https or socks5 URL. \"\" = HTTP_PROXY / HTTPS_PROXY / NO_PROXY.",
	"transport.max_redirects":           "Redirects followed per call. 0 = do not follow (the redirect response is returned).",
	"transport.max_conn_age":            "Longest a connection is reused; an older one serves one last request (with Connection: close), then closes. 0 = forever. Retuned without a new transport.",

	"tls.ca_file":              "PEM bundle that replaces the system roots. \"\" = system roots.",
	"tls.cert_file":            "Client certificate (PEM) for mTLS; needs key_file. Re-read when it changes.",
	"tls.key_file":             "Private key (PEM) of cert_file.",
	"tls.server_name":          "Server name to verify and send in SNI. \"\" = the URL's host.",
	"tls.min_version":          "Lowest TLS version offered.",
	"tls.insecure_skip_verify": "Skip certificate verification. Allowed, and logged at WARN on every load.",

	"retry.max_retries":           "Retries after the first attempt of a logical call. 0 = retry off.",
	"retry.initial_backoff":       "Cap of the first retry's delay; each further retry doubles it, up to max_backoff.",
	"retry.max_backoff":           "Cap of every delay. A longer Retry-After is not waited for: the response is returned at once.",
	"retry.jitter":                "How each delay is randomised: full = [0, cap], equal = cap/2 + [0, cap/2], decorrelated, none = cap.",
	"retry.retryable_status":      "Response status codes that are retried. [] = none (transport errors only).",
	"retry.retryable_methods":     "Methods that are retried; a list replaces the default set. [] = none (only retry_all_methods retries then).",
	"retry.retry_all_methods":     "Retry every method, POST and PATCH included.",
	"retry.attempt_timeout":       "Deadline of each attempt; must be less than timeout. 0 = none.",
	"retry.max_buffered_body":     "Bytes of a request body without GetBody buffered so that it can be replayed. 0 = such bodies are never retried.",
	"retry.budget.ratio":          "Share of first attempts that retries may add across all calls (0.2 = 20%).",
	"retry.budget.min_per_second": "Retries a second that are always allowed, whatever the ratio.",
	"retry.budget.ttl":            "How long a first attempt counts towards the budget. 0 = budget off (every retry allowed).",

	"circuit_breaker.enabled":                "Switch the circuit breaker on.",
	"circuit_breaker.mode":                   "consecutive: open after failure_threshold failures in a row; rate: open when the failure rate over window reaches failure_rate_threshold; adaptive: never open, reject each call locally with probability max(0, (requests - adaptive_k*accepts)/(requests + 1)) over window (Google SRE client-side throttling).",
	"circuit_breaker.adaptive_k":             "K of adaptive mode: the backend may reject up to 1 - 1/K of the calls before the client throttles. >= 1.",
	"circuit_breaker.failure_threshold":      "Failures in a row that open the breaker (consecutive mode).",
	"circuit_breaker.failure_rate_threshold": "Failure share that opens the breaker (rate mode).",
	"circuit_breaker.window":                 "Rolling window of the failure rate (rate mode) and of the counts (adaptive mode); must be > 0.",
	"circuit_breaker.minimum_calls":          "Outcomes the window needs before the rate counts (rate mode).",
	"circuit_breaker.cooldown":               "How long an open breaker rejects calls before it admits probes.",
	"circuit_breaker.half_open_max_requests": "Probes a half-open breaker admits at once.",
	"circuit_breaker.success_threshold":      "Probe successes that close the breaker.",
	"circuit_breaker.scope":                  "client: one breaker per client; host: one per URL host (bounded).",

	"bulkhead.max_concurrent": "Logical calls in flight at once. 0 = unlimited.",
	"bulkhead.max_wait":       "How long a call waits for a slot before failing with ErrBulkheadFull. 0 = no wait.",

	"rate_limit.requests_per_second": "Sustained rate of attempts (every retry takes a token too). 0 = unlimited.",
	"rate_limit.burst":               "Attempts that may go at once after a quiet spell; >= 1 when a rate is set.",

	"auth.host":                "URL host[:port] that receives the credential (case-insensitive; a default port written or implied is the same); required when a credential is set. Other hosts, and redirects that change the scheme, get none.",
	"auth.bearer_token":        "Sent as `Authorization: Bearer <token>`. Secret: never shown.",
	"auth.bearer_token_file":   "File holding the bearer token; re-read when it changes (rotating tokens).",
	"auth.basic.username":      "HTTP basic auth user name; must not contain \":\" (RFC 7617).",
	"auth.basic.password":      "HTTP basic auth password. Secret: never shown.",
	"auth.basic.password_file": "File holding the basic auth password; re-read when it changes.",

	"logging.level": "Level of the one-record-per-attempt log: debug, info, or off.",

	"fault.enabled":        "Inject faults into this client's attempts, just above the transport (game days, staging). Logged at WARN on every load while on.",
	"fault.abort.percent":  "Share of attempts answered without being sent, in percent [0, 100].",
	"fault.abort.status":   "Status of an aborted attempt's response.",
	"fault.abort.error":    "An aborted attempt fails with a transport error (ErrFaultInjected) instead of a response.",
	"fault.delay.percent":  "Share of attempts held back before they are sent, in percent [0, 100].",
	"fault.delay.duration": "How long a delayed attempt waits; > 0 when delay.percent is set.",
	"fault.header":         "If set, only requests carrying this header are faulted. \"\" = every request.",
}

// keyPatterns are the string syntaxes the schema checks besides the types,
// keyed like keyDocs; for a list, the pattern applies to its items. Each
// mirrors a check of Validate.
var keyPatterns = map[string]string{
	// RFC 9110 token characters.
	"retry.retryable_methods": "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$",
	"transport.proxy_url":     `^$|^(http|https|socks5)://[^/?#\s]+`,
	"auth.host":               `^[^/?#@ ]*$`,
}

// headerNamePattern is the syntax of a header name: an RFC 9110 token.
const headerNamePattern = "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"

// durationPattern matches a non-negative Go duration string, as
// time.ParseDuration reads it: "0", "500ms", "1m30s", "1.5h".
const durationPattern = `^\+?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`

// positiveDurationPattern matches a Go duration string with at least one
// non-zero digit: a duration > 0.
const positiveDurationPattern = `^\+?(` + durationPart + `)*` + nonZeroDurationPart + `(` + durationPart + `)*$`

const (
	durationUnit        = `(ns|us|µs|μs|ms|s|m|h)`
	durationPart        = `([0-9]+(\.[0-9]*)?|\.[0-9]+)` + durationUnit
	nonZeroDurationPart = `([0-9]*[1-9][0-9]*(\.[0-9]*)?|[0-9]*\.[0-9]*[1-9][0-9]*)` + durationUnit
)
