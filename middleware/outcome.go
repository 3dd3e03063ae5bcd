package middleware

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
)

// Outcome is what the result of a call or of an attempt says about the
// backend: the one classification that every layer judging results reads
// (retry, hedging, every breaker mode and its adaptive counts) and that
// the OpenTelemetry adapter reports. Classify makes it; the package doc's
// table shows what each layer does with each Outcome. The zero value is
// OutcomeSuccess. It is a plain value, safe to copy and to share.
type Outcome uint8

// The outcomes, in the order Classify tests them after a success.
const (
	// OutcomeSuccess: the backend answered with a status below 500
	// (429 and every 4xx included: the backend is up and answering).
	OutcomeSuccess Outcome = iota
	// OutcomeFailure: the backend failed: a status >= 500, a transport
	// error that is not permanent, the deadline of the Timeout or
	// AttemptTimeout layer (the client's own budget for the call, not the
	// caller's), and an injected fault (an abort's status or
	// ErrFaultInjected): a fault stands for a failing backend.
	OutcomeFailure
	// OutcomeRejected: this process refused the call before the backend
	// saw it (local back-pressure): the error matches ErrCircuitOpen (a
	// breaker's rejection, adaptive throttling's included), ErrBulkheadFull
	// (no slot within max_wait, or before a deadline ended the wait) or
	// ErrRateLimited (no token before the deadline, or a fleet quota's
	// store failed with on_store_error deny); Rejection names which.
	// A hedged copy or a retry whose request body could not be produced
	// again (the request's GetBody failed) was never sent either, and is
	// rejected too, though Rejection names no sentinel for it.
	OutcomeRejected
	// OutcomeCallerGone: the call ended with an error after whoever made
	// it gave up: its context was cancelled, or passed a deadline that no
	// timeout layer of this package set (the caller's own), or a hedged
	// copy lost.
	OutcomeCallerGone
	// OutcomePermanent: a transport error that no retry can fix
	// (IsPermanent): a TLS verification failure, a bad URL, scheme,
	// method or header. It is a failure that retry does not retry.
	OutcomePermanent
)

// String returns "success", "failure", "rejected", "caller_gone" or
// "permanent".
func (o Outcome) String() string {
	switch o {
	case OutcomeSuccess:
		return "success"
	case OutcomeFailure:
		return "failure"
	case OutcomeRejected:
		return "rejected"
	case OutcomeCallerGone:
		return "caller_gone"
	case OutcomePermanent:
		return "permanent"
	}
	return "unknown"
}

// Classify returns the Outcome of a RoundTrip of req that gave resp and
// err; req is the request that RoundTrip got (its context tells whether
// the caller is gone), and may be nil when there is none to ask. In
// order:
//
//  1. no error: OutcomeFailure for a missing response or a status >= 500,
//     OutcomeSuccess otherwise;
//  2. a local rejection (Rejection(err) != nil), or a request body that
//     could not be produced again for a later attempt or hedged copy (its
//     GetBody failed): OutcomeRejected, whatever else the error says (a
//     bulkhead wait cut by a deadline matches both ErrBulkheadFull and
//     context.DeadlineExceeded: it is a rejection);
//  3. req's context is done, and not because the deadline of a Timeout or
//     AttemptTimeout layer fired: OutcomeCallerGone;
//  4. IsPermanent(err): OutcomePermanent;
//  5. any other error: OutcomeFailure.
//
// It is a pure function of its arguments and the state of req's context,
// allocates nothing for an answer without an error, and is safe for
// concurrent use.
func Classify(req *http.Request, resp *http.Response, err error) Outcome {
	switch {
	case err == nil:
		if statusFailed(resp) {
			return OutcomeFailure
		}
		return OutcomeSuccess
	case Rejection(err) != nil, errors.Is(err, errReplayBody):
		return OutcomeRejected
	case req != nil && callerGone(req.Context()):
		return OutcomeCallerGone
	case IsPermanent(err):
		return OutcomePermanent
	}
	return OutcomeFailure
}

// LatencySample reports whether a call of req that ended with resp and
// err, its response body now ended, is a latency sample for the adaptive
// bulkhead (a permit given back with Record) rather than none (Drop). It
// is one exactly when Classify says OutcomeSuccess (the backend answered
// with a status below 500) and the caller was still there when the body
// ended. Everything else is dropped, by one rule, that a sample is a call
// the backend served: a status >= 500 or a transport error that came fast
// would read as a healthy backend, and a slow one says no more than the
// answered calls beside it; a timeout (a Timeout or AttemptTimeout
// layer's, or a transport's own) ended the call before the backend did,
// which is what the limiter's Permit.Drop is documented for; a local
// rejection never reached the backend; a caller gone, before or during
// the body, leaves the latency unknown, and so does a call whose context
// ended while its body was read (a Timeout layer above the bulkhead cuts
// the body with its deadline, and the status is still a success). Nor is a call that waited in this
// process below the bulkhead (a retry's backoff or Retry-After pause, a
// rate-limit wait): the limiter measures the time a permit was held and
// takes no duration of ours, so such a call would read as a slow backend;
// the adaptive bulkhead marks its calls' contexts and those layers note
// their waits there (markLocalWait). A nil req is a caller still there
// that did not wait. It is safe for concurrent use.
func LatencySample(req *http.Request, resp *http.Response, err error) bool {
	if Classify(req, resp, err) != OutcomeSuccess {
		return false
	}
	if req == nil {
		return true
	}
	ctx := req.Context()
	if ctx.Err() != nil { // the caller gone, or a timeout above that cut the body
		return false
	}
	w, _ := ctx.Value(localWaitKey{}).(*atomic.Bool)
	return w == nil || !w.Load()
}

// localWaitKey is the context key of the adaptive bulkhead's marker: an
// *atomic.Bool set when the call waited in this process.
type localWaitKey struct{}

// markLocalWait notes on ctx that the call is about to wait in this
// process (a backoff, a pause, a rate-limit token), when an adaptive
// bulkhead above marked it; otherwise it does nothing. Only a layer that
// waits calls it, so the context lookup costs nothing to the others.
func markLocalWait(ctx context.Context) {
	if w, ok := ctx.Value(localWaitKey{}).(*atomic.Bool); ok {
		w.Store(true)
	}
}

// localRejections are the sentinels of the refusals this package makes
// itself, in the order Rejection tests them.
var localRejections = [...]error{ErrCircuitOpen, ErrBulkheadFull, ErrRateLimited}

// Rejection returns the sentinel of the local rejection err carries,
// matched with errors.Is: ErrCircuitOpen, ErrBulkheadFull or
// ErrRateLimited; nil when err is none (a nil err included). It is safe
// for concurrent use.
func Rejection(err error) error {
	if err == nil {
		return nil
	}
	for _, s := range localRejections {
		if errors.Is(err, s) {
			return s
		}
	}
	return nil
}

// statusFailed reports whether an answer without a transport error is a
// backend failure: no response at all, or a status >= 500.
func statusFailed(resp *http.Response) bool {
	return resp == nil || resp.StatusCode >= 500
}

// callerGone reports whether ctx, a request's context, is done because its
// caller gave up (a cancellation, or a deadline of the caller's own) rather
// than because the deadline of a Timeout or AttemptTimeout layer fired.
func callerGone(ctx context.Context) bool {
	if ctx.Err() == nil {
		return false
	}
	c := context.Cause(ctx)
	return c != errTimeoutCause && c != errAttemptTimeoutCause
}

// waitRejected reports whether a wait for a bulkhead slot or a rate-limit
// token that ctx ended is a local rejection: a deadline ended it (no slot
// or token came in time, whoever set the deadline), so its error wraps the
// layer's sentinel beside the context's error. A cancellation is not: the
// caller is gone, and the error is the context's alone.
func waitRejected(ctx context.Context) bool {
	return errors.Is(ctx.Err(), context.DeadlineExceeded)
}

// AttemptTimeoutFired reports whether ctx, the context of an attempt's
// request below an AttemptTimeout layer, ended because that layer's
// deadline fired (not the total timeout's, nor the caller's): the layer
// then returns a *TimeoutError with PerAttempt set and emits
// EventTimeoutExceeded with the attempt's number once the attempt
// returns. Code's attempt middleware, which runs below AttemptTimeout,
// reads it to tell the attempt's own deadline from the others before the
// layer has wrapped the error. It is safe for concurrent use.
func AttemptTimeoutFired(ctx context.Context) bool {
	return ctx.Err() != nil && context.Cause(ctx) == errAttemptTimeoutCause
}
