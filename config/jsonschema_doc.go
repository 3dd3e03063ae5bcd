package config

// keyDocs is the one description of every key of a client section, keyed by
// its dotted path. The JSON Schema (JSONSchema), docs/reference.md's table
// (Reference) and `switchboard explain` all read it; a test fails when a key
// has no entry or an entry names no key.
// routesDoc describes `routes`, a map rather than a key, shown in the JSON
// Schema and as the last row of the reference.
const routesDoc = "Clients only. http.ServeMux patterns (\"POST /v1/charges\", \"GET /v1/reports/{id}\", an optional host, {name...}) to a route section that may set timeout, headers, retry (but not retry.budget) and hedge, merged over the client's keys key by key; the most specific pattern wins, a call that matches none runs with the client's settings. Breaker, bulkhead, rate limit, budget and transport are the client's, shared by its routes."

var keyDocs = map[string]string{
	"timeout":  "Total deadline of one logical call: all attempts, backoff waits and Retry-After waits. 0 = no deadline.",
	"base_url": "Absolute http or https URL (no userinfo, query or fragment) that a request URL without a host is resolved against, RFC 3986 style: \"v1/x\" under https://h/api/ is https://h/api/v1/x, \"/v1/x\" is https://h/v1/x. Routes match the resolved URL. A redirect to a relative path (\"v2/x\", not \"/v2/x\") loses caller-set credentials. \"\" = none: a URL without a host fails.",
	"headers":  "Headers set on every request that does not already carry them; names are case-insensitive. Maps merge key by key with `defaults`.",

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

	"retry.max_retries":                  "Retries after the first attempt of a logical call. 0 = retry off.",
	"retry.initial_backoff":              "Cap of the first retry's delay; each further retry multiplies it by multiplier, up to max_backoff. Constant backoff: jitter none with initial_backoff = max_backoff.",
	"retry.max_backoff":                  "Cap of every delay. A longer Retry-After is not waited for: the response is returned at once.",
	"retry.jitter":                       "How each delay is randomised: full = [0, cap], equal = cap/2 + [0, cap/2], decorrelated, none = cap.",
	"retry.retryable_status":             "Response status codes that are retried. [] = none (transport errors only).",
	"retry.retryable_methods":            "Methods that are retried; a list replaces the default set. [] = none (only retry_all_methods retries then).",
	"retry.retry_all_methods":            "Retry every method, POST and PATCH included.",
	"retry.attempt_timeout":              "Deadline of each attempt; must be less than timeout. 0 = none.",
	"retry.max_buffered_body":            "Bytes of a request body without GetBody buffered so that it can be replayed. 0 = such bodies are never retried.",
	"retry.multiplier":                   "Growth factor of the delay cap: retry n waits at most min(max_backoff, initial_backoff·multiplier^(n-1)). 1 = constant cap.",
	"retry.rate_limited.initial_backoff": "Cap of the first delay after a 429 without Retry-After. 0 = the main initial_backoff.",
	"retry.rate_limited.max_backoff":     "Cap of every delay after a 429 without Retry-After. 0 = the main max_backoff.",
	"retry.rate_limited.multiplier":      "Growth factor after a 429 without Retry-After. 0 = the main multiplier.",
	"retry.rate_limited.jitter":          "Jitter after a 429 without Retry-After. \"\" = the main jitter.",
	"retry.attempt_header":               "Header set on every attempt to its number (1, 2, …), e.g. X-Attempt. \"\" = none.",
	"retry.idempotency_key.enabled":      "Send an idempotency key with every call of the listed methods, and retry and hedge those methods like idempotent ones (every other gate still applies): one key per logical call, a UUIDv4 from crypto/rand, the same on every retry and hedged copy. A key the caller set is kept.",
	"retry.idempotency_key.header":       "Header that carries the key. \"\" = Idempotency-Key.",
	"retry.idempotency_key.methods":      "Methods that get a key and become retryable when enabled; a list replaces the default set. [] = none.",
	"retry.budget.ratio":                 "Share of first attempts that retries may add across all calls (0.2 = 20%).",
	"retry.budget.min_per_second":        "Retries a second that are always allowed, whatever the ratio.",
	"retry.budget.ttl":                   "How long a first attempt counts towards the budget. 0 = budget off (every retry allowed).",

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

	"circuit_breaker.group":   "Clients naming the same group share one breaker (their circuit_breaker settings must be equal). \"\" = the client's own.",
	"bulkhead.group":          "Clients naming the same group share one pool of slots (their bulkhead settings must be equal). \"\" = the client's own.",
	"rate_limit.group":        "Clients naming the same group share one limiter (their rate_limit settings must be equal). \"\" = the client's own.",
	"bulkhead.mode":           "static: the limit is max_concurrent; adaptive: the limit is learned from the calls' latencies (it falls while they grow, rises while they hold), within [min_limit, max_limit] from initial_limit, and switches the bulkhead on. The limit never rises above 5 times the most calls in flight of a recent window, so a quiet client's limit sinks toward that: with max_wait 0 a burst beyond it is refused (bulkhead full); give max_wait room or raise min_limit.",
	"bulkhead.max_concurrent": "Logical calls in flight at once (mode static). 0 = unlimited. Mode adaptive does not read it: set beside mode adaptive, it is logged at WARN on every load.",
	"bulkhead.min_limit":      "Lowest limit mode adaptive learns; >= 1, <= initial_limit.",
	"bulkhead.max_limit":      "Highest limit mode adaptive learns; >= initial_limit.",
	"bulkhead.initial_limit":  "Limit mode adaptive starts from, in [min_limit, max_limit]. A reload keeps the learned limit (clamped to new bounds); a switch of mode starts afresh here.",
	"bulkhead.max_wait":       "How long a call waits for a slot before failing with ErrBulkheadFull (both modes). 0 = no wait.",

	"rate_limit.requests_per_second": "Sustained rate of attempts (every retry takes a token too). 0 = unlimited.",
	"rate_limit.burst":               "Attempts that may go at once after a quiet spell; >= 1 when a rate is set.",
	"rate_limit.scope":               "process: this process's own token bucket; fleet: one quota shared by every process through factory.Options.Quotas (a Redis store: quotas/redis).",
	"rate_limit.key":                 "The quota's name in the store. \"\" = the group's name, else the client's.",
	"rate_limit.per_header":          "One quota per value of this request header (hashed, never stored or logged in clear); a request without it shares the key's quota. \"\" = one quota. With scope process, at most 10,000 values are kept (least recently used evicted).",
	"rate_limit.store_timeout":       "Longest a decision waits for the store (scope fleet); then on_store_error applies. 0 = 50ms.",
	"rate_limit.on_store_error":      "When the store fails or times out: local (this process's own bucket at fallback_per_second, kept warm), allow (admit), deny (refuse with ErrRateLimited).",
	"rate_limit.fallback_per_second": "This process's own rate while the store is failing, with on_store_error local. 0 = requests_per_second.",
	"rate_limit.respect_server":      "A 429 or 503 carrying Retry-After or RateLimit-Reset (delta seconds) pauses the quota until then, fleet-wide with scope fleet, capped at retry.max_backoff.",

	"auth.host":                "URL host[:port] that receives the credential (case-insensitive; a default port written or implied is the same); required when a credential is set. Other hosts, and redirects that change the scheme, get none.",
	"auth.bearer_token":        "Sent as `Authorization: Bearer <token>`. Secret: never shown.",
	"auth.bearer_token_file":   "File holding the bearer token; re-read when it changes (rotating tokens).",
	"auth.basic.username":      "HTTP basic auth user name; must not contain \":\" (RFC 7617).",
	"auth.basic.password":      "HTTP basic auth password. Secret: never shown.",
	"auth.basic.password_file": "File holding the basic auth password; re-read when it changes.",

	"logging.events": "Which events are log records: all, warn (only WARN and ERROR events), or off. An Observer (metrics, otel) gets every event regardless.",
	"logging.level":  "Level of the one-record-per-attempt log: debug, info, or off.",

	"hedge.enabled":          "Send hedged requests in place of retries (gRPC's hedgingPolicy): after delay with no answer a copy goes out; the first answer that retry would not retry wins, the others are cancelled. Only calls retry would retry are hedged; every extra copy takes a retry budget token.",
	"hedge.delay":            "Wait for an answer before each extra copy goes out. 0 = all copies at once.",
	"hedge.delay_percentile": "In (0, 1): wait that percentile of the client's recent answered-attempt latencies instead, never less than delay. 0 = the fixed delay.",
	"hedge.max_hedges":       "Extra copies in flight at most beside the first attempt. A call sends at most 1 + max(max_hedges, retry.max_retries) copies.",

	"fault.enabled":        "Inject faults into this client's attempts, just above the transport (game days, staging). Logged at WARN on every load while on.",
	"fault.abort.percent":  "Share of attempts answered without being sent, in percent [0, 100].",
	"fault.abort.status":   "Status of an aborted attempt's response.",
	"fault.abort.error":    "An aborted attempt fails with a transport error (ErrFaultInjected) instead of a response.",
	"fault.delay.percent":  "Share of attempts held back before they are sent, in percent [0, 100].",
	"fault.delay.duration": "How long a delayed attempt waits; > 0 when delay.percent is set.",
	"fault.header":         "If set, only requests carrying this header are faulted. \"\" = every request.",

	"coalesce.enabled":      "Concurrent identical calls (same method, URL after base_url, listed header values) share one trip through the pipeline: retries, breaker, bulkhead and rate limit see one call, and each caller gets its own copy of the answer. The trip runs on a goroutine of its own. Client-level: routes cannot set it.",
	"coalesce.methods":      "Methods whose calls are coalesced. A call with a body, or asking for an upgrade, never is. [] = none.",
	"coalesce.vary_headers": "Request headers whose values are part of a call's identity (hashed, never kept in clear; names case-insensitive); Authorization, Cookie, Proxy-Authorization, Range and the conditional headers always are. List every other header that changes the answer (a tenant header, rate_limit.per_header's): callers that differ only in an unlisted one share one answer. [] = method, URL and the headers always counted.",
	"coalesce.max_body":     "Largest response body, in bytes, shared with every caller; a larger answer goes to the first caller as a stream and the others send their own requests. 0 = only answers without a body are shared.",
	"deadline.header":       "Header that carries each attempt's time left until its deadline (the tighter of attempt_timeout, timeout and the caller's context), rounded down, e.g. X-Request-Timeout-Ms or grpc-timeout. No deadline: no header; a passed one: 0. A header the caller set is kept. Clients only, not routes. \"\" = none.",
	"deadline.format":       "How the time left is written: ms (whole milliseconds), seconds (whole seconds), grpc (grpc-timeout: at most 8 digits and a unit H, M, S, m, u or n, the finest that fits).",
}

// keyFormats are the syntaxes of keys that their type and tags do not say,
// keyed like keyDocs: the pattern the JSON Schema checks (for a list, on
// its items), mirroring a check of Validate, and the words the reference
// shows in its allowed column.
var keyFormats = map[string]struct{ pattern, allowed string }{
	// RFC 9110 token characters.
	"retry.retryable_methods":       {"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$", "HTTP methods"},
	"coalesce.methods":              {"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$", "HTTP methods"},
	"coalesce.vary_headers":         {headerNamePattern, "header names"},
	"retry.idempotency_key.methods": {"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$", "HTTP methods"},
	"retry.idempotency_key.header":  {"^$|" + headerNamePattern, "header name"},
	"deadline.header":               {"^$|" + headerNamePattern, "header name"},
	"transport.proxy_url":           {`^$|^(http|https|socks5)://[^/?#\s]+`, "http, https or socks5 URL"},
	"base_url":                      {`^$|^[hH][tT][tT][pP][sS]?://[^/?#@\s]+[^?#\s]*$`, "http or https URL"},
	"auth.host":                     {`^[^/?#@ ]*$`, "host[:port]"},
	"retry.rate_limited.multiplier": {"", "0 or >= 1"},
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
