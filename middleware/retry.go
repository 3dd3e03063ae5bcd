package middleware

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// maxDrain is how much of a superseded response body the retry layer reads
// before closing it, so that its connection can be reused; a longer body is
// closed unread (its connection is dropped).
const maxDrain = 64 << 10

// errNoResponse replaces the (nil, nil) of a RoundTripper that broke its
// contract.
var errNoResponse = errors.New("switchboard: round tripper returned neither a response nor an error")

// RetryOptions are the code-only parts of the retry layer. The zero value
// uses the settings alone: no custom decision, no budget, no events, and
// math/rand/v2 for jitter.
type RetryOptions struct {
	// ShouldRetry, when set, decides whether an outcome is retried, in place
	// of the method and outcome gates (RetryableMethods, RetryAllMethods,
	// RetryableStatus, IsPermanent). The other gates still apply: attempts
	// left, a replayable body, the caller's context still alive, the
	// Retry-After and deadline rules, and the budget. req is the caller's
	// request: read it, do not change it or its body. Exactly one of resp
	// and err is non-nil; do not read or close resp.Body. It is also asked
	// about the last outcome, to decide whether to report EventRetryExhausted.
	// It must be safe for concurrent use.
	ShouldRetry func(req *http.Request, resp *http.Response, err error) bool
	// Budget caps retries across calls; nil means no cap. Every logical call
	// deposits into it, every retry withdraws from it. Share one Budget
	// between the Retry layers of one client to keep its state over reloads.
	Budget *Budget
	// Events receives retry.attempt at slog.LevelInfo before each retry
	// (Attempt is the number of the attempt about to start, 2 for the first
	// retry; Delay the wait before it; Status or Err the outcome that is
	// retried), and retry.exhausted and retry.budget_exhausted at
	// slog.LevelWarn (Attempt is the last attempt made, Status or Err its
	// outcome, which is returned). Nil means no events.
	Events *Events
	// Rand returns a random value in [0, 1) for jitter; nil means
	// math/rand/v2's Float64. It must be safe for concurrent use.
	Rand func() float64
	// Backoff, when set, replaces the backoff schedule (InitialBackoff,
	// MaxBackoff, Multiplier, Jitter and RateLimited): the delay before the
	// attempt after attempt number attempt (1-based: 1 is the wait after
	// the first attempt) whose outcome was resp or err (exactly one is
	// non-nil; do not read or close resp.Body). A valid Retry-After still
	// rules over it, and the deadline and budget gates still apply. A
	// negative result counts as 0. It must be safe for concurrent use.
	Backoff func(attempt int, resp *http.Response, err error) time.Duration
	// ReadOnlyBelow says that no layer below Retry changes the request it
	// is given: each keeps the RoundTripper contract and copies a request
	// before it writes to it (the package's own layers do). Retry then
	// copies the caller's request only where it changes something itself
	// (see Retry). False, the zero value, gives every attempt its own
	// Request.Clone, which the layers below may change in place.
	ReadOnlyBelow bool
}

// Retry returns the middleware that retries failed attempts of a logical
// call. For each outcome of an attempt it asks, in order, and stops at the
// first no, returning that outcome as is:
//
//  1. attempts left: fewer than MaxRetries retries so far (or
//     Overrides.MaxRetries from the request context);
//  2. body replayable: no body, a GetBody, or a body of at most
//     MaxBufferedBody bytes, buffered before the first attempt; a longer body
//     is sent once, intact (the buffered prefix, then the rest), and never
//     retried;
//  3. the caller's context is still alive (its cancellation or deadline is
//     never retried), and the outcome is not a local rejection
//     (OutcomeRejected of Classify: ErrBulkheadFull, ErrRateLimited or
//     ErrCircuitOpen from a layer below, back-pressure from this process,
//     not a backend failure; see the package doc's table);
//  4. RetryOptions.ShouldRetry, if set, which replaces 5 and 6;
//  5. method eligible: RetryAllMethods, else the method is in
//     RetryableMethods (upper-cased; matched case-sensitively, as HTTP
//     does; nil means the idempotent set GET HEAD OPTIONS PUT DELETE, an
//     empty list no method) or, with IdempotencyKey enabled, in its
//     Methods;
//  6. outcome retryable: a status in RetryableStatus, or a transport error
//     that is not permanent (OutcomeFailure, not OutcomePermanent);
//  7. the wait is allowed: a Retry-After longer than MaxBackoff (the main
//     schedule's, after a 429 too: RateLimited only schedules a 429
//     without a valid Retry-After), or a wait that would end at or after
//     the context's deadline, is not waited for;
//  8. the budget has a token; if not, EventRetryBudgetExhausted is emitted.
//
// The delay before retry n is RetrySettings.Delay (of ForRateLimited after
// a 429), or RetryOptions.Backoff when set, unless the response carries a
// valid Retry-After, which replaces it. With AttemptHeader set, every
// attempt carries its number in that header, on its own copy. With
// IdempotencyKey enabled, a call of one of its Methods without a non-empty
// key of the caller's gets one before its first attempt (a UUIDv4 from
// crypto/rand), and every attempt carries that same key, on its own copy;
// the caller's key, when set, is sent as it is. A key that cannot be made
// (crypto/rand failing) fails the call before any attempt. Waits use one timer per
// call and end at once when the context is done; the call then returns the
// context's error, wrapped.
//
// The caller's request is never changed. Each attempt is sent as its own
// Request.Clone with the attempt's context and body, so that the layers
// below may change it (headers, path values, anything), unless
// RetryOptions.ReadOnlyBelow says they do not; then an attempt is sent as
// net/http's own client sends a request: the caller's request itself when
// nothing differs (the first attempt, its own body, no AttemptHeader), a
// shallow copy (Request.WithContext) when only the context or the body
// differs (a retry, a buffered body), and a shallow copy with its own
// Header when the AttemptHeader is set (see RetryOptions.ReadOnlyBelow).
//
// A response that will be retried is drained (up to 64 KiB, kept in
// memory) and closed before the wait; when a local rejection refuses the
// retry (ErrRateLimited, ErrBulkheadFull, ErrCircuitOpen from below), that
// response is returned with its kept body instead of the refusal, so the
// caller and the breaker see what the backend said. The last response is
// returned intact: running out of
// attempts is not an error, and it emits EventRetryExhausted when that last
// outcome was retryable. Request bodies are always closed, as the
// RoundTripper contract requires.
//
// With MaxRetries 0 (and no override) the layer only deposits into the
// budget and sends the request as its one attempt, as above. The retry
// layer reads status codes, which a plain RoundTripper does not; that is
// its job. It is safe for concurrent use; s
// and o are copied.
func Retry(s RetrySettings, o RetryOptions) Middleware {
	p := newRetryPolicy(s, o)
	return func(next http.RoundTripper) http.RoundTripper {
		return &retryRT{next: next, p: p}
	}
}

// retryPolicy is the immutable, precomputed form of the settings, shared by
// every RoundTripper a Retry middleware makes.
type retryPolicy struct {
	s           RetrySettings
	rl          RetrySettings // s.ForRateLimited(): the schedule after a 429
	backoff     func(int, *http.Response, error) time.Duration
	header      string     // canonical AttemptHeader, "" for none
	status      [10]uint64 // bit set of retryable status codes 0..639
	methods     []string   // upper-cased eligible methods; unused when allMethods
	allMethods  bool
	idem        idempotencyKeys // RetrySettings.IdempotencyKey; its methods are eligible too
	shouldRetry func(*http.Request, *http.Response, error) bool
	budget      *Budget
	ev          *Events
	rand        func() float64
	readOnly    bool // RetryOptions.ReadOnlyBelow
}

func newRetryPolicy(s RetrySettings, o RetryOptions) *retryPolicy {
	p := &retryPolicy{
		s:           s,
		allMethods:  s.RetryAllMethods,
		shouldRetry: o.ShouldRetry,
		budget:      o.Budget,
		ev:          o.Events,
		rand:        o.Rand,
		backoff:     o.Backoff,
		readOnly:    o.ReadOnlyBelow,
		idem:        newIdempotencyKeys(s.IdempotencyKey),
	}
	if s.AttemptHeader != "" {
		p.header = http.CanonicalHeaderKey(s.AttemptHeader)
	}
	if p.rand == nil {
		p.rand = rand.Float64
	}
	p.s.MaxRetries = max(s.MaxRetries, 0)
	status := s.RetryableStatus
	if status == nil {
		status = DefaultRetryableStatus()
	}
	for _, c := range status {
		if c >= 0 && c < len(p.status)*64 {
			p.status[c/64] |= 1 << (c % 64)
		}
	}
	methods := s.RetryableMethods
	if methods == nil {
		methods = IdempotentMethods()
	}
	p.methods = make([]string, 0, len(methods)) // empty, not nil: [] retries no method
	for _, m := range methods {
		if m = strings.ToUpper(strings.TrimSpace(m)); m != "" {
			p.methods = append(p.methods, m)
		}
	}
	p.s.RetryableStatus, p.s.RetryableMethods, p.s.IdempotencyKey.Methods = nil, nil, nil // not read after this point
	p.rl = p.s.ForRateLimited()
	return p
}

// methodOK reports whether method is eligible for retries (gate 5): the
// one decision "may a call of this method be sent more than once", which
// Retry and Hedge both read. A method an idempotency key covers is
// eligible like an idempotent one: every attempt carries the call's key.
func (p *retryPolicy) methodOK(method string) bool {
	if p.allMethods {
		return true
	}
	if method == "" {
		method = http.MethodGet // as net/http reads an empty Method
	}
	return slices.Contains(p.methods, method) || p.idem.covers(method)
}

// statusOK reports whether a response status is retryable (gate 6).
func (p *retryPolicy) statusOK(code int) bool {
	return code >= 0 && code < len(p.status)*64 && p.status[code/64]&(1<<(code%64)) != 0
}

// retryable applies gates 4 to 6 to an outcome, out being Classify's
// verdict on it.
func (p *retryPolicy) retryable(req *http.Request, resp *http.Response, err error, out Outcome) bool {
	if p.shouldRetry != nil {
		return p.shouldRetry(req, resp, err)
	}
	if !p.methodOK(req.Method) {
		return false
	}
	if err != nil {
		return out == OutcomeFailure // not permanent, rejected nor abandoned
	}
	return p.statusOK(resp.StatusCode)
}

// retryRT is the RoundTripper of Retry.
type retryRT struct {
	next http.RoundTripper
	p    *retryPolicy
}

func (rt *retryRT) RoundTrip(req *http.Request) (*http.Response, error) {
	p := rt.p
	key, err := p.idem.forCall(req) // one key per logical call, before any attempt
	if err != nil {
		closeBody(req)
		return nil, err
	}
	p.budget.Deposit()
	ctx := req.Context()
	maxRetries := maxRetriesFor(ctx, p.s.MaxRetries)
	if maxRetries == 0 {
		return rt.next.RoundTrip(p.attemptRequest(req, nil, nil, nil, 0, 1, key))
	}
	// The body plan stays on this frame; only a body that must be buffered
	// allocates (the buffer). A call whose method can never be retried does
	// not buffer.
	var rb replay
	if err := rb.prepare(req, p.shouldRetry != nil || p.methodOK(req.Method), p.s.MaxBufferedBody); err != nil {
		return nil, err
	}
	body, length, _ := rb.body(req, 1) // cannot fail for attempt 1
	var (
		resp  *http.Response
		timer *time.Timer // made at the first wait only: the success path has none
		prev  = p.s.InitialBackoff
		// last is the previous attempt's outcome, its body held in memory:
		// when a local rejection (a rate-limit wait that cannot end in
		// time, a full bulkhead, a breaker below) refuses the retry, the
		// caller and the breaker get the backend's answer, not the refusal,
		// which would hide a failing backend from both.
		last *lastResort
	)
	for n := 1; ; n++ {
		// nil: the caller's context.
		var actx context.Context
		if n > 1 { // the first attempt needs no mark: AttemptFrom reads 1 without one
			actx = context.WithValue(ctx, attemptKey{}, n)
		}
		resp, err = rt.next.RoundTrip(p.attemptRequest(req, actx, &rb, body, length, n, key))
		if resp == nil && err == nil {
			err = errNoResponse
		}
		if err != nil && resp != nil { // a broken contract: keep the error, free the response
			if resp.Body != nil {
				resp.Body.Close()
			}
			resp = nil
		}
		if err == nil && p.shouldRetry == nil && !p.statusOK(resp.StatusCode) {
			return resp, nil // gate 6 first: the common success needs no other
		}
		out := Classify(req, resp, err)
		if last != nil {
			if out == OutcomeRejected && ctx.Err() == nil {
				return last.resp, last.err
			}
			last = nil
		}
		if n > maxRetries { // gate 1
			if ctx.Err() == nil && out != OutcomeRejected && p.retryable(req, resp, err, out) {
				p.emit(ctx, slog.LevelWarn, EventRetryExhausted, req, n, 0, resp, err)
			}
			return resp, err
		}
		if !rb.replayable() || ctx.Err() != nil || out == OutcomeRejected || !p.retryable(req, resp, err, out) { // gates 2 to 6
			return resp, err
		}
		now := time.Now()
		var delay time.Duration
		if ra, ok := retryAfter(resp, now); ok {
			// A Retry-After, on a 429 as on any status, is judged against the
			// main max_backoff; rate_limited schedules only a 429 without one.
			if p.s.MaxBackoff > 0 && ra > p.s.MaxBackoff {
				return resp, err // gate 7: the server asks for more than we wait
			}
			delay = ra
		} else {
			delay = p.delay(n, prev, resp, err)
		}
		if dl, ok := ctx.Deadline(); ok && !now.Add(delay).Before(dl) {
			return resp, err // gate 7: the deadline would pass during the wait
		}
		if !p.budget.TryWithdraw() { // gate 8
			p.emit(ctx, slog.LevelWarn, EventRetryBudgetExhausted, req, n, 0, resp, err)
			return resp, err
		}
		nextBody, nextLength, berr := rb.body(req, n+1)
		if berr != nil {
			return resp, err // GetBody failed: the body cannot be replayed after all
		}
		p.emit(ctx, slog.LevelInfo, EventRetryAttempt, req, n+1, delay, resp, err)
		last = keep(resp, err)
		resp, err = nil, nil
		body, length, prev = nextBody, nextLength, delay
		if delay > 0 {
			markLocalWait(ctx)
			if timer == nil {
				timer = time.NewTimer(delay)
			} else {
				timer.Reset(delay)
			}
			select {
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
			}
		}
		if ctx.Err() != nil {
			if body != nil {
				body.Close()
			}
			return nil, fmt.Errorf("switchboard: retry wait interrupted: %w", ctx.Err())
		}
	}
}

// delay returns the scheduled wait before retry n (1-based) after the
// outcome resp or err, which carried no valid Retry-After: the Backoff
// option's, or the schedule's (the rate-limited one after a 429).
func (p *retryPolicy) delay(n int, prev time.Duration, resp *http.Response, err error) time.Duration {
	if p.backoff != nil {
		return max(p.backoff(n, resp, err), 0)
	}
	s := &p.s
	if resp != nil && resp.StatusCode == http.StatusTooManyRequests {
		s = &p.rl
	}
	r := 0.0
	if usesRand(s.Jitter) {
		r = p.rand()
	}
	return s.Delay(n, prev, r)
}

// attemptKey is the context key under which Retry marks the attempt number
// of a retry's request. An empty struct type: no collision, no allocation.
type attemptKey struct{}

// AttemptFrom returns the 1-based number of the attempt whose request
// context is ctx: 2 for the first retry of a call. Retry marks the
// requests of retries; a request without a mark (the first attempt, or a
// pipeline without Retry) is attempt 1. Layers inside Retry (logging, code's
// attempt middleware) read it. It is safe for concurrent use and does not
// allocate.
func AttemptFrom(ctx context.Context) int {
	if ctx != nil {
		if n, ok := ctx.Value(attemptKey{}).(int); ok {
			return n
		}
	}
	return 1
}

// emit sends a retry event about the outcome (resp or err) of attempt n.
// It builds the event (redacting URL and error) only when someone listens.
func (p *retryPolicy) emit(ctx context.Context, level slog.Level, name string, req *http.Request, n int, delay time.Duration, resp *http.Response, err error) {
	if !p.ev.on(ctx, level) {
		return
	}
	e := Event{
		Name:    name,
		Method:  req.Method,
		URL:     RedactURL(req.URL),
		Host:    hostOf(req),
		Attempt: n,
		Delay:   delay,
		Err:     redactError(err, req.URL),
	}
	if resp != nil {
		e.Status = resp.StatusCode
	}
	p.ev.Emit(ctx, level, e)
}

// lastResort is an attempt's outcome kept while the next one is tried.
type lastResort struct {
	resp *http.Response
	err  error
}

// keep reads a superseded response's body (up to maxDrain bytes) into
// memory and closes it, so that its connection goes back to the pool, and
// returns the outcome to fall back on; nil when the body fills maxDrain
// (it may be longer: it cannot be handed back surely intact) or cannot be
// read.
func keep(resp *http.Response, err error) *lastResort {
	if resp == nil || resp.Body == nil || resp.Body == http.NoBody {
		return &lastResort{resp, err}
	}
	b, rerr := io.ReadAll(io.LimitReader(resp.Body, maxDrain))
	_ = resp.Body.Close()
	if rerr != nil || len(b) >= maxDrain {
		return nil
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return &lastResort{resp, nil}
}

// drain reads up to maxDrain bytes of a superseded response's body and
// closes it, so that its connection can go back to the pool.
func drain(resp *http.Response) {
	if resp == nil || resp.Body == nil {
		return
	}
	_, _ = io.CopyN(io.Discard, resp.Body, maxDrain)
	_ = resp.Body.Close()
}

// IsPermanent reports whether a transport error is one that a retry cannot
// fix, so that Retry returns it at once:
//
//   - TLS certificate verification failures: x509.UnknownAuthorityError,
//     x509.CertificateInvalidError, x509.HostnameError,
//     x509.SystemRootsError and *tls.CertificateVerificationError;
//   - a bad request URL: a *url.Error from parsing, an unsupported
//     protocol scheme, a missing host, an invalid method or header field.
//
// The caller's own cancellation is not decided here: Retry stops whenever the
// request's context is done, whatever the error. A nil err is not
// permanent. It is safe for concurrent use; custom RetryOptions.ShouldRetry
// functions may call it.
func IsPermanent(err error) bool {
	if err == nil {
		return false
	}
	var (
		unknownAuthority x509.UnknownAuthorityError
		invalidCert      x509.CertificateInvalidError
		hostname         x509.HostnameError
		systemRoots      x509.SystemRootsError
		verification     *tls.CertificateVerificationError
		urlErr           *url.Error
	)
	switch {
	case errors.As(err, &unknownAuthority),
		errors.As(err, &invalidCert),
		errors.As(err, &hostname),
		errors.As(err, &systemRoots),
		errors.As(err, &verification):
		return true
	case errors.As(err, &urlErr) && urlErr.Op == "parse":
		return true
	}
	// net/http reports these with unexported types; their text is stable.
	msg := err.Error()
	for _, s := range badRequestTexts {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// badRequestTexts are fragments of net/http's errors for requests that no
// retry can send.
var badRequestTexts = [...]string{
	"unsupported protocol scheme",
	"no Host in request URL",
	"nil Request.URL",
	"invalid header field name",
	"invalid header field value",
	"invalid method",
}
