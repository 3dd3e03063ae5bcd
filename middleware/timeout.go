package middleware

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"
)

// TimeoutError is the error of a call or an attempt that failed because a
// deadline set by Timeout or AttemptTimeout fired (not the caller's own).
// errors.Is(err, context.DeadlineExceeded) reports true for it, and it has
// the Timeout() bool method of net.Error. It is returned from RoundTrip
// and, when the deadline fires while the body is read, from Body.Read.
type TimeoutError struct {
	// Limit is the deadline's length: the configured or overridden timeout.
	Limit time.Duration
	// PerAttempt is true for AttemptTimeout, false for Timeout.
	PerAttempt bool
	// Err is what the layer below returned; it may be nil.
	Err error
}

// Error describes the timeout and the underlying error.
func (e *TimeoutError) Error() string {
	what := "timeout"
	if e.PerAttempt {
		what = "attempt timeout"
	}
	if e.Err == nil {
		return fmt.Sprintf("switchboard: %s of %v exceeded", what, e.Limit)
	}
	return fmt.Sprintf("switchboard: %s of %v exceeded: %v", what, e.Limit, e.Err)
}

// Unwrap returns the underlying error.
func (e *TimeoutError) Unwrap() error { return e.Err }

// Is reports true for context.DeadlineExceeded, whatever the underlying
// error says.
func (e *TimeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// Timeout reports true: the error is a timeout (see net.Error).
func (e *TimeoutError) Timeout() bool { return true }

// TimeoutOptions are the code-only options of Timeout and AttemptTimeout.
// The zero value emits no events. Timeout and AttemptTimeout copy it.
type TimeoutOptions struct {
	// Events receives EventTimeoutExceeded at slog.LevelWarn when the
	// layer's deadline fires; nil means no events.
	Events *Events
}

// Timeout returns the middleware that puts one deadline, d from the start of
// RoundTrip, over the whole logical call: every attempt, every backoff wait,
// and the reading of the response body. It is the outermost layer of a
// pipeline. A d of zero (or less) means no deadline.
//
// The deadline bounds the redirects of the call too, as http.Client.Timeout
// does: http.Client runs the transport again for each redirect hop, and
// the layer counts every hop's d from the start of the call's first hop,
// not from its own (two 600ms hops under a 1s timeout fail at 1s). The
// start travels with the hop: on a redirect response (301, 302, 303, 307,
// 308) the layer leaves it in the context of a shallow copy of
// resp.Request, which http.Client links to the next hop as
// req.Response.Request. The start is taken once, by the first Timeout
// layer of the next hop (a Timeout stacked inside that one counts from the
// hop's own start); a hop that matches another route counts that route's
// timeout from the same start. A later call that sends a request
// of the same chain again (a Clone of resp.Request keeps its
// req.Response), or a request whose chain is broken (see Redirects),
// starts its own deadline, as http.Client.Timeout starts on every Do.
//
// Overrides.Timeout in the request context replaces d for that request. When
// the caller's context already ends at or before the would-be deadline, the
// layer adds nothing and passes the request on as is.
//
// The deadline is a standard context, context.WithDeadlineCause's, whose
// cause tells the layer's deadline from the caller's; it starts no
// goroutine, whatever the layers below do with the context. It lives until
// the response body is closed or read to its end (EOF or an error), so the
// caller can read the body under the same deadline; a caller must close the
// body, as always. A 101 Switching Protocols response ends the deadline at
// once: net/http hands its upgraded connection over untied to the request's
// context, so no deadline could cover it; its body reaches the caller as
// is. When the call fails because this deadline fired (not the
// caller's), RoundTrip returns a *TimeoutError and emits
// EventTimeoutExceeded to o.Events.
//
// The layer keeps the RoundTripper contract: it hands the layer below a
// shallow copy of the request with the new context (req.WithContext) and
// never changes the caller's request; the body is closed by the layer below.
// It is safe for concurrent use.
func Timeout(d time.Duration, o TimeoutOptions) Middleware {
	return func(next http.RoundTripper) http.RoundTripper {
		return &deadlineRT{next: next, d: d, kind: deadlineCall, ev: o.Events, cause: errTimeoutCause}
	}
}

// AttemptTimeout returns the middleware that puts a deadline of d over each
// attempt, the reading of its response body included. It sits just inside
// Retry, so the retry layer sees an attempt that timed out as a failed
// attempt (a *TimeoutError, retryable) and the caller's context is not
// touched. A d of zero (or less) means no per-attempt deadline.
//
// Overrides.AttemptTimeout in the request context replaces d for that
// request. Everything else is as for Timeout: when the attempt's deadline
// fires, it emits EventTimeoutExceeded to o.Events with the attempt's number
// and Reason "attempt_timeout", so that ops see attempts cut off even when a
// retry then succeeds. It is safe for concurrent use.
func AttemptTimeout(d time.Duration, o TimeoutOptions) Middleware {
	return func(next http.RoundTripper) http.RoundTripper {
		return &deadlineRT{next: next, d: d, kind: deadlineAttempt, ev: o.Events, cause: errAttemptTimeoutCause}
	}
}

// The cancellation causes of the contexts the timeout layers make:
// context.Cause of a context that one of them ended is its layer's cause,
// and the caller's own deadline or cancellation gives any other.
var (
	errTimeoutCause        = errors.New("switchboard: deadline of the timeout layer")
	errAttemptTimeoutCause = errors.New("switchboard: deadline of the attempt timeout layer")
)

// ownTimeoutFired reports whether ctx, a request context below a Timeout
// layer, ended because that layer's deadline fired, rather than because
// the caller's context ended.
func ownTimeoutFired(ctx context.Context) bool {
	return context.Cause(ctx) == errTimeoutCause
}

// deadlineRT is the RoundTripper of Timeout and AttemptTimeout. It is
// immutable after construction.
type deadlineRT struct {
	next  http.RoundTripper
	d     time.Duration
	kind  deadlineKind
	ev    *Events
	cause error // errTimeoutCause or errAttemptTimeoutCause
}

func (t *deadlineRT) RoundTrip(req *http.Request) (*http.Response, error) {
	parent := req.Context()
	d := durationFor(parent, t.d, t.kind)
	if d <= 0 {
		var start time.Time // a later hop under a timeout counts from here
		if t.kind == deadlineCall {
			start = t.startOf(req)
		}
		resp, err := t.next.RoundTrip(req)
		return t.markRedirect(resp, err, start)
	}
	start := t.startOf(req)
	if pd, ok := parent.Deadline(); ok && !pd.After(start.Add(d)) {
		// The caller's deadline comes first: nothing to add.
		resp, err := t.next.RoundTrip(req)
		return t.markRedirect(resp, err, start)
	}
	ctx, cancel := context.WithDeadlineCause(parent, start.Add(d), t.cause)
	// The request copy and the body wrapper share one allocation.
	c := &deadlineState{ctx: ctx, cancel: cancel, parent: parent, t: t, d: d}
	c.req = *req.WithContext(ctx)
	done := false
	defer func() {
		if !done { // next panicked: release the deadline now
			cancel()
		}
	}()
	resp, err := t.next.RoundTrip(&c.req)
	done = true
	if err != nil {
		fired := c.fired()
		cancel()
		if fired {
			return nil, t.exceeded(ctx, req, d, err)
		}
		return nil, err
	}
	if resp == nil {
		cancel()
		return nil, errNoResponse
	}
	resp, _ = t.markRedirect(resp, nil, start)
	if resp.Body == nil || resp.Body == http.NoBody {
		cancel() // nothing left to read under the deadline
		return resp, nil
	}
	if _, writable := resp.Body.(io.Writer); writable {
		// A 101 Switching Protocols body is the upgraded connection itself,
		// which net/http no longer ties to the request's context once it
		// hands it over: the deadline cannot cover it, so the call ends
		// here and the body goes to the caller as is (still an io.Writer).
		cancel()
		return resp, nil
	}
	c.rc, c.orig = resp.Body, req
	resp.Body = c
	return resp, nil
}

// callStartKey is the context key under which Timeout leaves, on the
// Request of a redirect response, a *callStart: when the call began, for
// the next hop's deadline.
type callStartKey struct{}

// callStart is when a logical call began, left for its next redirect hop.
// It is taken once: by the first Timeout layer of the first request that
// follows the redirect, http.Client's next hop. A request sent later with
// the same chain (a Clone of a request of it keeps req.Response) finds it
// taken and starts its own deadline, as http.Client.Timeout starts on
// every Do.
type callStart struct {
	t     time.Time
	taken atomic.Bool
}

// WillBeFollowed reports whether http.Client follows the answer (resp,
// err) to req with another hop of the same logical call, by its own rule:
// no error, a redirect status (301, 302, 303, 307, 308) with a Location,
// and for 307 and 308 a body it can send again (none, or GetBody). It is
// the one reading of "a redirect" for the layers (BaseURL, Timeout) and
// the call counters (Status, the Prometheus adapter), which count a call
// at the hop that ends it. The client's CheckRedirect, which may stop the
// chain, is beyond it: the caller that set it (the factory, by
// transport.max_redirects) applies it too. A nil resp is not followed. It
// is safe for concurrent use.
func WillBeFollowed(req *http.Request, resp *http.Response, err error) bool {
	if err != nil || resp == nil || !redirectStatus(resp.StatusCode) || resp.Header.Get("Location") == "" {
		return false
	}
	if resp.StatusCode == http.StatusTemporaryRedirect || resp.StatusCode == http.StatusPermanentRedirect {
		return req.GetBody != nil || req.Body == nil || req.Body == http.NoBody
	}
	return true
}

// redirectStatus reports whether http.Client follows a response of code.
func redirectStatus(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// startOf returns when the logical call of req began: now, unless t is the
// call's Timeout and req is a redirect hop (Redirects: a chain that is not
// broken) whose previous hop left its start on the response's Request
// (markRedirect) and nobody took it yet. So one timeout bounds every hop
// of a call, as http.Client.Timeout does, rather than starting again at
// each. A per-attempt deadline starts at each hop: a hop is an attempt.
func (t *deadlineRT) startOf(req *http.Request) time.Time {
	if t.kind != deadlineCall || req.Response == nil {
		return time.Now()
	}
	if _, _, ok := Redirects(req); !ok {
		return time.Now()
	}
	if s, ok := req.Response.Request.Context().Value(callStartKey{}).(*callStart); ok && s.taken.CompareAndSwap(false, true) {
		return s.t
	}
	return time.Now()
}

// markRedirect passes a RoundTrip's result on, having left start on the
// Request of a redirect response, for the next hop's startOf: a shallow
// copy of that Request whose context carries start. Only the call's
// Timeout marks, only redirects cost the copy, and a response without its
// Request (which no http.Transport returns) is left as is: its next hop
// starts a deadline of its own.
func (t *deadlineRT) markRedirect(resp *http.Response, err error, start time.Time) (*http.Response, error) {
	if t.kind != deadlineCall || err != nil || resp == nil || resp.Request == nil || !redirectStatus(resp.StatusCode) {
		return resp, err
	}
	resp.Request = resp.Request.WithContext(context.WithValue(resp.Request.Context(), callStartKey{}, &callStart{t: start}))
	return resp, nil
}

// exceeded builds the *TimeoutError for err and emits the event.
func (t *deadlineRT) exceeded(ctx context.Context, req *http.Request, d time.Duration, err error) error {
	te := &TimeoutError{Limit: d, PerAttempt: t.kind == deadlineAttempt, Err: err}
	if t.ev.on(ctx, slog.LevelWarn) {
		e := Event{
			Name:   EventTimeoutExceeded,
			Method: req.Method,
			URL:    RedactURL(req.URL),
			Host:   hostOf(req),
			Delay:  d,
			Err:    redactError(err, req.URL),
			Reason: "timeout",
		}
		if t.kind == deadlineAttempt {
			e.Attempt, e.Reason = AttemptFrom(req.Context()), "attempt_timeout"
		}
		t.ev.Emit(req.Context(), slog.LevelWarn, e)
	}
	return te
}

// deadlineState is one call through a deadlineRT that got a deadline, in one
// allocation: the request copy with the deadline's context, and the
// response body wrapper that keeps that context alive while the body is
// read and cancels it once the body is closed or read to its end, so that
// neither the context's timer nor its resources outlive the call.
type deadlineState struct {
	ctx    context.Context
	cancel context.CancelFunc
	parent context.Context // the context of the request the layer got
	req    http.Request    // what the layer below got, with ctx
	rc     io.ReadCloser
	orig   *http.Request // the request the layer got
	t      *deadlineRT
	d      time.Duration
	done   bool // the body ended; a timeout is reported once
}

// fired reports whether the call's context ended because the layer's own
// deadline passed: its cause is the layer's, and not merely inherited from
// an outer layer of the same kind whose deadline ended the parent.
func (c *deadlineState) fired() bool {
	return context.Cause(c.ctx) == c.t.cause && context.Cause(c.parent) != c.t.cause
}

// stop ends the call's context: the call is over.
func (c *deadlineState) stop() { c.cancel() }

func (c *deadlineState) Read(p []byte) (int, error) {
	n, err := c.rc.Read(p)
	if err != nil && !c.done {
		c.done = true
		fired := err != io.EOF && c.fired()
		c.stop()
		if fired {
			return n, c.t.exceeded(c.req.Context(), c.orig, c.d, err)
		}
	}
	return n, err
}

func (c *deadlineState) Close() error {
	err := c.rc.Close()
	c.stop()
	return err
}

// hostOf returns the request's URL host, or "" without a URL.
func hostOf(req *http.Request) string {
	if req.URL == nil {
		return ""
	}
	return req.URL.Host
}

// withCallStart returns req carrying, for its next redirect hop, the call
// start that a Timeout layer left on from, the Request of a redirect
// response that another request went down for (a coalesced trip's): a
// start of its own, untaken, so that each caller's next hop finds one.
// Without one on from it returns req itself.
func withCallStart(req, from *http.Request) *http.Request {
	if from == nil {
		return req
	}
	s, ok := from.Context().Value(callStartKey{}).(*callStart)
	if !ok {
		return req
	}
	return req.WithContext(context.WithValue(req.Context(), callStartKey{}, &callStart{t: s.t}))
}
