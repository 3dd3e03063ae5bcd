// Package middleware holds every http.RoundTripper decorator of a switchboard
// pipeline and the settings type each reads.
//
// # The pipeline
//
// The one drawing of a client's pipeline, as the factory builds it,
// outermost first (the numbers are those of the design; the unnumbered
// lines are the factory's and your code's):
//
//	    call counts                     the factory's: one atomic add per call, by Classify's outcome (Status)
//	    BaseURL                         base_url: a URL without a host is resolved against it
//	    RedactErrors                    every error that leaves the pipeline is redacted
//	    code's Outer middleware         factory.Hooks.Outer: sees each logical call
//	    Coalesce                        coalesce.enabled: identical calls in flight share one trip below
//	                                    (each trip on a goroutine of its own, while it runs)
//	    Router                          with routes: picks the route's copy of 1, 4, 5 and 7
//	 1  Timeout                         one deadline over the whole logical call
//	 2  circuit breaker                 one outcome per logical call (after retries)
//	 3  bulkhead                        one slot per logical call; the limit static, or learned from latency (mode adaptive)
//	 4  Retry (or Hedge)                budget, backoff with jitter, Retry-After, body replay
//	                                    (Hedge: extra copies of a slow call; the first good answer wins);
//	                                    one idempotency key per call on every attempt and copy
//	 5  AttemptTimeout                  one deadline per attempt
//	    code's Attempt middleware       factory.Hooks.Attempt: sees each attempt
//	 6  rate limit                      every attempt takes a token
//	    PropagateDeadline               deadline.header: the attempt's time left, measured after the token wait
//	 7  Headers, then Auth              configured headers; the credential only to its origin
//	 8  Logging                         one record per attempt, URL redacted
//	 9  Fault                           injected aborts and delays, only when fault.enabled
//	10  base *http.Transport            cloned from http.DefaultTransport, connections aged out by max_conn_age
//
// Layers 1 to 3 and the Router see one logical call, layers 5 to 10 each
// attempt; with coalescing, the calls that share a trip are one call for
// every layer below Coalesce, and each its own call above it. Every route runs its own stateless layers (1, 4, 5, 7's
// Headers) around the client's stateful ones, which all routes share: the
// breaker, the bulkhead, the rate limit and the retry budget; Auth,
// Logging, Fault and the transport are the client's, below every route.
// PropagateDeadline sits in each route's chain, but with the client's
// settings: a route cannot set deadline.*.
//
// Every layer keeps the http.RoundTripper contract: it never changes the
// request it is given (a layer that must change one works on a copy), it
// closes the request body, it returns a response or an error, never both
// nil, and it is safe for concurrent use. The caller's request is never
// changed, and it is copied only where something changes it: with
// RetryOptions.ReadOnlyBelow (HedgeOptions.ReadOnlyBelow), which the
// factory sets for every client without attempt middleware, a first
// attempt that changes nothing is the caller's request itself, a retry, a
// hedged copy or a replayed body is a Request.WithContext copy, and an
// attempt header or an idempotency key goes on a copy with its own Header. Without it every
// attempt is its own Request.Clone, so middleware below retry may change
// its request without the caller's ever changing. The retry and breaker
// layers read status codes, which a plain RoundTripper is not meant to do;
// that is their job.
//
// # How outcomes are classified
//
// Classify sorts the result of a call or an attempt into one Outcome, in
// one place (outcome.go), and every layer that judges results acts on it:
// Retry judges each attempt, Hedge each copy, the breaker the logical call
// after retries, in every mode (adaptive mode's counts too), and the
// OpenTelemetry adapter reports it. "Neither" means the breaker counts no
// success and no failure (in adaptive mode neither a request nor an
// accept; a half-open probe that ends so frees its slot).
//
//	Outcome            what ends that way                                  Retry and Hedge         breaker
//	OutcomeRejected    ErrCircuitOpen (an open breaker, a half-open one    not retried; a hedged   neither
//	                   with its probes taken, adaptive throttling),         copy neither wins nor
//	                   ErrBulkheadFull (no slot within max_wait, or a       starts another
//	                   deadline ended the wait), ErrRateLimited (no
//	                   token or end of a server's pause before the
//	                   deadline, a deadline ended the wait, or a fleet
//	                   quota's store failed with on_store_error deny);
//	                   a copy whose request body could not be produced
//	                   again (GetBody failed)
//	OutcomeCallerGone  an error after the caller's context was cancelled   not retried             neither
//	                   or passed the caller's own deadline
//	------------------------------------------------------------------------------------------------------------
//	OutcomePermanent   IsPermanent: TLS verification, bad URL, scheme,     not retried             failure
//	                   method or header
//	OutcomeFailure     a transport error; attempt_timeout fired            retried                 failure
//	                   (*TimeoutError, PerAttempt); an injected fault
//	                   (ErrFaultInjected)
//	OutcomeFailure     timeout fired (*TimeoutError of the Timeout layer)  (the call is over)      failure
//	OutcomeFailure     status >= 500 (an injected abort's included)        retried if listed in    failure
//	                                                                       RetryableStatus
//	OutcomeSuccess     any other status (429 and 4xx included)             retried if listed in    success
//	                                                                       RetryableStatus
//
// The rows above the rule are decided before RetryOptions.ShouldRetry,
// HedgeOptions.ShouldRetry and BreakerOptions.IsFailure are asked, and no
// hook changes them; the rows below are their defaults.
//
// A rejection is local back-pressure, not a backend failure: the backend
// never saw the call. So a call that waited for a bulkhead slot until the
// total timeout fired counts as neither, not as a failure: queueing in
// this process must never open a breaker in front of a healthy backend,
// nor raise an adaptive breaker's rejection probability for every client
// of its group. A wait for a slot or a token that the caller cancelled is
// OutcomeCallerGone: it counts as neither too.
//
// The adaptive bulkhead (BulkheadAdaptive) learns its limit from the
// calls it admits, by the same classification, in one function beside
// Classify (LatencySample): a call is a latency sample only when it is
// OutcomeSuccess (the backend served it) and its caller was still there
// when the body ended, and which did not wait in this process below the
// bulkhead (a retry's backoff, a rate-limit wait); OutcomeFailure (a status >= 500, a transport error,
// any timeout: the limiter's Drop is for calls ended early), and
// OutcomeRejected, OutcomeCallerGone and OutcomePermanent are dropped.
//
// A breaker's own rejection (ErrCircuitOpen) is not retried, for the same
// reason as a full bulkhead or a rate-limit refusal: the breaker that
// refused is this process's, and it refuses again until its cooldown ends
// or its throttling eases, so a retry loop against it only burns attempts,
// backoff and retry budget; in scope host it refuses for the URL's host,
// and a retry goes to that same URL. In a pipeline the factory builds, the
// breaker sits outside Retry and never meets it; a breaker that code puts
// below Retry is treated so. When a rejection refuses a retry, Retry
// returns the previous attempt's answer, not the refusal, so the caller
// and the breaker see what the backend said.
//
// The total timeout is the client's configured budget for a call, not the
// caller's own deadline: when it fires, the backend (with its retries) was
// too slow for it, so it is a failure, and a backend that hangs opens the
// breaker even without an attempt_timeout. Overrides.Timeout replaces that
// budget for one call and is judged the same way. A deadline the caller put
// on its own context, earlier than the layer's, is the caller's: the layer
// then adds none, and its expiry counts as neither. An injected fault
// stands for a failing backend and counts as one.
//
// The package imports only the standard library, golang.org/x/time/rate
// (the rate limit's token bucket), failsafe-go's adaptivelimiter (the
// adaptive bulkhead's limit), golang.org/x/sync/singleflight (Coalesce's
// shared trips) and github.com/google/uuid (the form of an idempotency
// key); configuration, reload and the registry live in other packages.
package middleware
