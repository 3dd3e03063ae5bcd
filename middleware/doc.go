// Package middleware holds every http.RoundTripper decorator of a switchboard
// pipeline and the settings type each reads.
//
// A client's pipeline, outermost first:
//
//	Timeout            one deadline over the whole logical call
//	 └ circuit breaker  one outcome per logical call (after retries)
//	    └ bulkhead      one slot per logical call
//	       └ Retry      budget, backoff with jitter, Retry-After, body replay
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
// request without the caller's ever changing. The retry and breaker layers read status codes, which a plain
// RoundTripper is not meant to do; that is their job.
//
// The package imports only the standard library and golang.org/x/time/rate
// (the rate limit's token bucket); configuration, reload and the registry
// live in other packages.
package middleware
