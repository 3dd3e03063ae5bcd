// Package middleware holds every http.RoundTripper decorator of a switchboard
// pipeline and the settings type each reads.
//
// A client's pipeline, outermost first (with routes, a Router above picks
// per request the route's copy of the stateless layers, which share the
// client's breaker, bulkhead, limiter and budget):
//
//	Timeout            one deadline over the whole logical call
//	 └ circuit breaker  one outcome per logical call (after retries)
//	    └ bulkhead      one slot per logical call
//	       └ Retry      budget, backoff with jitter, Retry-After, body replay
//	         (or Hedge) extra copies of a slow call; the first good answer wins
//	          └ attempt timeout
//	             └ rate limit    every attempt takes a token
//	                └ headers, host-pinned auth
//	                   └ logging  one record per attempt, URL redacted
//	                      └ base *http.Transport
//
// Every layer keeps the http.RoundTripper contract: it never changes the
// request it is given (a layer that must change one works on a copy), it
// closes the request body, it returns a response or an error, never both
// nil, and it is safe for concurrent use. Retry gives every attempt its
// own Request.Clone, so the layers and hooks below it may change their
// request without the caller's ever changing. The retry and breaker
// layers read status codes, which a plain RoundTripper is not meant to do;
// that is their job.
//
// # How outcomes are classified
//
// One table for the two layers that judge outcomes. Retry judges each
// attempt; the breaker judges the logical call, after retries, so it sees
// what Retry returned. "Neither" means the breaker counts no success and
// no failure (a half-open probe that ends so frees its slot). The rows
// above the rule are decided before RetryOptions.ShouldRetry and
// BreakerOptions.IsFailure are asked; the rows below are their defaults.
//
//	outcome                                 Retry              breaker
//	caller's context cancelled or past its
//	  own deadline                          not retried        neither
//	ErrBulkheadFull                         not retried        neither
//	ErrRateLimited                          not retried        neither
//	ErrCircuitOpen (a breaker's rejection)  as a transport err  neither
//	-------------------------------------------------------------------
//	status in RetryableStatus               retried            failure if >= 500, else success
//	other status >= 500                     returned           failure
//	other status (429 and 4xx included)     returned           success
//	transport error, not permanent          retried            failure
//	permanent error (IsPermanent)           returned           failure
//	attempt_timeout fired (*TimeoutError,
//	  PerAttempt)                           retried            failure
//	timeout fired (*TimeoutError of the
//	  Timeout layer)                        (call is over)     failure
//
// The total timeout is the client's configured budget for a call, not the
// caller's own deadline: when it fires, the backend (with its retries) was
// too slow for it, so it is a failure, and a backend that hangs opens the
// breaker even without an attempt_timeout. Overrides.Timeout replaces that
// budget for one call and is judged the same way. A deadline the caller put
// on its own context, earlier than the layer's, is the caller's: the layer
// then adds none, and its expiry counts as neither.
//
// The package imports only the standard library and golang.org/x/time/rate
// (the rate limit's token bucket); configuration, reload and the registry
// live in other packages.
package middleware
