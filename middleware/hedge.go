package middleware

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// errHedgeLost is the cause with which the hedging layer cancels the copies
// that lost: context.Cause of a loser's context is it.
var errHedgeLost = errors.New("switchboard: hedged copy lost: another copy answered first")

// HedgeOptions are the code-only parts of the hedging layer. The zero value
// uses the settings alone: no custom decision, no budget, no events, and a
// fixed delay.
type HedgeOptions struct {
	// ShouldRetry, when set, decides which answers do not win (an answer it
	// would retry), in place of the method and outcome gates, as for
	// RetryOptions.ShouldRetry.
	ShouldRetry func(req *http.Request, resp *http.Response, err error) bool
	// Budget caps the extra copies across calls, shared with the client's
	// retries: every logical call deposits, every extra copy withdraws one
	// token. An empty budget means no further copy. Nil means no cap.
	Budget *Budget
	// Events receives hedge.sent (Attempt = the copy's number, 2 for the
	// first extra copy) and hedge.won (Attempt = the winner's number, 1 for
	// the first attempt; only for calls that sent an extra copy) at
	// slog.LevelInfo, hedge.cancelled (per copy cancelled because another
	// won) at slog.LevelDebug, and retry.exhausted and
	// retry.budget_exhausted at slog.LevelWarn. Nil means no events.
	Events *Events
	// Latencies, shared by the client's hedging layers, records every
	// answered attempt and gives the percentile of DelayPercentile; nil
	// means the fixed Delay.
	Latencies *Latencies
	// ReadOnlyBelow says that no layer below changes the request it is
	// given, as RetryOptions.ReadOnlyBelow: each copy is then a shallow
	// copy of the caller's request with the copy's own context, not a
	// Request.Clone.
	ReadOnlyBelow bool
}

// Hedge returns the middleware that sends hedged requests, in place of
// Retry, after gRPC's hedgingPolicy and Finagle's backup requests. r gives
// what a retry would retry (RetryableStatus, RetryableMethods,
// RetryAllMethods, IsPermanent), the body replay limit (MaxBufferedBody),
// the attempt header and MaxRetries; its backoff schedule is not used.
//
// The first attempt goes out at once, on the caller's goroutine. While no
// copy has answered, a further copy goes out every Delay (or the
// DelayPercentile of Latencies, never below Delay), each on a goroutine of
// its own, with at most 1+MaxHedges copies in flight. An answer that retry
// would retry (a listed status, a transport error that is not permanent)
// does not win: it is drained and closed, and the next copy goes out at
// once. The first other answer wins and is returned; at that moment every
// other copy is cancelled (context.WithCancelCause, one context per copy)
// and its body, when it comes, closed. The winner's body is left intact and
// readable to its end; its context is released when the body is closed or
// read to EOF, and at once for an empty body (nil or http.NoBody, handed
// on as is, so that a bulkhead above frees its slot at once too). A call
// sends at most 1+max(MaxHedges, MaxRetries) copies
// (Overrides.MaxRetries, when set, replaces that max: 0 sends one attempt);
// when every copy answered retryably, the last answer is returned intact,
// as retry returns its last one. A local rejection (OutcomeRejected of
// Classify: ErrBulkheadFull, ErrRateLimited, ErrCircuitOpen) does not win
// either and starts no copy.
//
// Only calls that Retry would retry are hedged: the method must be eligible
// and the body replayable (the same replay as Retry's: GetBody, or a body of
// at most MaxBufferedBody bytes); other calls are sent once. Every extra
// copy takes a token from the budget; with none left no copy goes out. The
// caller's context bounds every copy, so the call's total timeout bounds
// the whole. Every copy is its own request with its own context, marked
// with its attempt number (AttemptFrom): a Request.Clone, or with
// ReadOnlyBelow a shallow copy, as Retry makes them. No goroutine outlives
// its copy: a loser's ends when its cancelled RoundTrip returns. The layer
// reads status codes, as Retry does. It is safe for concurrent use; s, r and o are
// copied.
//
// With RetrySettings.IdempotencyKey enabled, its methods are hedged like
// idempotent ones, and every copy of a call carries the call's one key
// (the caller's, or one made before the first copy), as Retry's attempts do.
func Hedge(s HedgeSettings, r RetrySettings, o HedgeOptions) Middleware {
	p := &hedgePolicy{
		retry: newRetryPolicy(r, RetryOptions{ShouldRetry: o.ShouldRetry, Budget: o.Budget, Events: o.Events, ReadOnlyBelow: o.ReadOnlyBelow}),
		delay: max(s.Delay, 0),
		pct:   s.DelayPercentile,
		lat:   o.Latencies,
		max:   max(s.MaxHedges, 0),
	}
	if s.MaxHedges == 0 {
		p.max = DefaultHedgeMaxHedges
	}
	return func(next http.RoundTripper) http.RoundTripper {
		return &hedgeRT{next: next, p: p}
	}
}

// hedgePolicy is the immutable form of a Hedge middleware's settings.
type hedgePolicy struct {
	retry *retryPolicy // the gates, the budget, the events
	delay time.Duration
	pct   float64
	lat   *Latencies
	max   int // extra copies in flight at most
}

// hedgeDelay returns the wait before each extra copy of a call.
func (p *hedgePolicy) hedgeDelay() time.Duration {
	return HedgeDelay(HedgeSettings{Delay: p.delay, DelayPercentile: p.pct}, p.lat)
}

// HedgeDelay returns the wait before each extra copy of a call that a
// Hedge layer of s, sharing l, would use now: s.Delay (0 when negative),
// or the s.DelayPercentile of l's latencies when that is set, known and
// longer. A nil l knows no latency. Status reports it; it is safe for
// concurrent use.
func HedgeDelay(s HedgeSettings, l *Latencies) time.Duration {
	d := max(s.Delay, 0)
	if s.DelayPercentile > 0 {
		if q, ok := l.Percentile(s.DelayPercentile); ok && q > d {
			d = q
		}
	}
	return d
}

// hedgeRT is the RoundTripper of Hedge.
type hedgeRT struct {
	next http.RoundTripper
	p    *hedgePolicy
}

func (rt *hedgeRT) RoundTrip(req *http.Request) (*http.Response, error) {
	p, rp := rt.p, rt.p.retry
	key, err := rp.idem.forCall(req) // one key per logical call, shared by every copy
	if err != nil {
		closeBody(req)
		return nil, err
	}
	rp.budget.Deposit()
	ctx := req.Context()
	extra := max(p.max, rp.s.MaxRetries)
	if o, ok := OverridesFrom(ctx); ok && o.MaxRetries != nil {
		extra = max(*o.MaxRetries, 0)
	}
	// A copy goes out before any answer, so ShouldRetry, which judges
	// answers, cannot clear a method: the method gate always applies (a
	// route that must never repeat a call sets hedge.enabled: false).
	if extra == 0 || !rp.methodOK(req.Method) {
		return rt.once(req, key) // nothing retry would retry: no call state at all
	}
	c := &hedgeCall{rt: rt, req: req, key: key, ctx: ctx, total: 1 + extra, done: make(chan struct{})}
	if err := c.rb.prepare(req, true, rp.s.MaxBufferedBody); err != nil {
		return nil, err
	}
	if !c.rb.replayable() {
		return rt.next.RoundTrip(rp.attemptRequest(req, nil, &c.rb, c.rb.once, req.ContentLength, 1, key))
	}
	c.delay = p.hedgeDelay()
	c.cancels = make([]context.CancelCauseFunc, 0, min(c.total, 8))
	c.mu.Lock()
	first := c.reserveLocked()
	c.mu.Unlock()
	c.run(first)
	<-c.done
	return c.resp, c.err
}

// once sends req as a single attempt, as Retry sends its first, with the
// call's idempotency key (or "").
func (rt *hedgeRT) once(req *http.Request, key string) (*http.Response, error) {
	return rt.next.RoundTrip(rt.p.retry.attemptRequest(req, nil, nil, nil, 0, 1, key))
}

// hedgeCall is the state of one hedged logical call, shared by the
// goroutines of its copies.
type hedgeCall struct {
	rt    *hedgeRT
	req   *http.Request // the caller's: read, never changed
	key   string        // the call's idempotency key, on every copy; "" for none
	ctx   context.Context
	rb    replay // the body plan; read-only once the first copy goes out
	total int    // copies allowed in all
	delay time.Duration
	done  chan struct{} // closed once resp, err are the call's outcome

	mu       sync.Mutex
	sent     int                       // copies reserved so far; guarded by mu
	inflight int                       // copies running; guarded by mu
	cancels  []context.CancelCauseFunc // per copy (n-1); guarded by mu
	answered []bool                    // per copy: its RoundTrip returned; guarded by mu
	timer    *time.Timer               // the next extra copy's; guarded by mu
	decided  bool                      // guarded by mu
	noBudget bool                      // the budget ran dry once; guarded by mu
	// The outcome: the winner, or the last retryable answer while none won.
	resp *http.Response // guarded by mu until done is closed
	err  error
	kept int // the copy whose answer resp, err hold; 0 for none
}

// reserveLocked counts a new copy in and returns its number, arming the
// timer of the next one. The caller holds c.mu.
func (c *hedgeCall) reserveLocked() int {
	c.sent++
	c.inflight++
	c.cancels = append(c.cancels, nil)
	c.answered = append(c.answered, false)
	if c.sent < c.total {
		if c.timer == nil {
			c.timer = time.AfterFunc(c.delay, c.tick)
		} else {
			c.timer.Reset(c.delay)
		}
	}
	return c.sent
}

// tick is the timer: no copy answered within the delay, so another goes out
// unless the limits say no. It runs on the timer's goroutine, which then
// runs the copy.
func (c *hedgeCall) tick() {
	c.mu.Lock()
	if c.decided || c.sent >= c.total || c.inflight >= 1+c.rt.p.max {
		c.mu.Unlock()
		return // a retryable answer starts the next copy and re-arms
	}
	if !c.rt.p.retry.budget.TryWithdraw() {
		first := !c.noBudget
		c.noBudget = true
		c.mu.Unlock()
		if first {
			c.rt.p.retry.emit(c.ctx, slog.LevelWarn, EventRetryBudgetExhausted, c.req, c.sent, 0, nil, nil)
		}
		return
	}
	n := c.reserveLocked()
	c.mu.Unlock()
	c.run(n)
}

// run sends copy n and, while its answers start further copies at once,
// those too.
func (c *hedgeCall) run(n int) {
	rp := c.rt.p.retry
	for n > 0 {
		actx, cancel := context.WithCancelCause(c.ctx)
		c.mu.Lock()
		c.cancels[n-1] = cancel
		lost := c.decided // a winner was chosen while this copy was being readied
		c.mu.Unlock()
		if lost {
			n = c.answer(n, nil, errHedgeLost, OutcomeCallerGone)
			continue
		}
		if n > 1 {
			rp.emitHedge(c.ctx, slog.LevelInfo, EventHedgeSent, c.req, n)
		}
		body, length, err := c.rb.body(c.req, n)
		if err != nil {
			// GetBody failed: this copy cannot go, the others may
			// (Classify: a local rejection, which neither wins nor starts
			// a copy).
			n = c.answer(n, nil, err, Classify(c.req, nil, err))
			continue
		}
		if n > 1 {
			actx = context.WithValue(actx, attemptKey{}, n)
		}
		start := time.Now()
		resp, err := c.rt.next.RoundTrip(rp.attemptRequest(c.req, actx, &c.rb, body, length, n, c.key)) // its own copy: copies run concurrently
		if resp == nil && err == nil {
			err = errNoResponse
		}
		if err != nil && resp != nil { // a broken contract: keep the error, free the response
			if resp.Body != nil {
				resp.Body.Close()
			}
			resp = nil
		}
		if err == nil {
			c.rt.p.lat.Observe(time.Since(start))
		}
		n = c.answer(n, resp, err, Classify(c.req, resp, err))
	}
}

// answer takes the outcome of copy n, out being Classify's verdict on it,
// and returns the number of the copy the calling goroutine is to send
// next, or 0. A local rejection (OutcomeRejected) while the caller waits
// neither wins nor starts a copy.
func (c *hedgeCall) answer(n int, resp *http.Response, err error, out Outcome) int {
	rp := c.rt.p.retry
	c.mu.Lock()
	c.inflight--
	c.answered[n-1] = true
	if c.decided { // a loser answering late: close its body, end its context
		cancel := c.cancels[n-1]
		c.mu.Unlock()
		drain(resp)
		cancel(errHedgeLost)
		return 0
	}
	var stale *http.Response // a kept answer this one supersedes
	keep := func() {
		if c.kept != 0 {
			stale = c.resp
		}
		c.resp, c.err, c.kept = resp, err, n
	}
	switch {
	case out == OutcomeRejected && c.ctx.Err() == nil:
		if c.kept == 0 {
			keep() // the outcome of last resort
		}
	case c.ctx.Err() != nil || !rp.retryable(c.req, resp, err, out):
		keep()
		c.finishLocked(n, true) // the winner
		drain(stale)
		return 0
	default: // retryable: kept as the outcome of last resort; the next copy goes at once
		keep()
		if c.sent < c.total {
			if rp.budget.TryWithdraw() {
				next := c.reserveLocked()
				c.mu.Unlock()
				drain(stale)
				return next
			}
			if !c.noBudget {
				c.noBudget = true
				defer rp.emit(c.ctx, slog.LevelWarn, EventRetryBudgetExhausted, c.req, n, 0, resp, err)
			}
		} else if c.inflight == 0 {
			defer rp.emit(c.ctx, slog.LevelWarn, EventRetryExhausted, c.req, n, 0, resp, err)
		}
	}
	if c.inflight > 0 {
		c.mu.Unlock() // a copy still running may win
	} else {
		c.finishLocked(0, false) // nothing runs and nothing may start: the kept answer is the outcome
	}
	drain(stale)
	return 0
}

// finishLocked makes the kept answer (c.resp, c.err of copy c.kept) the
// outcome, cancels every other copy, and releases the caller. winner is the
// copy for hedge.won when won. The caller holds c.mu, which finishLocked
// releases.
func (c *hedgeCall) finishLocked(winner int, won bool) {
	c.decided = true
	if c.timer != nil {
		c.timer.Stop()
	}
	var (
		others  []context.CancelCauseFunc
		running []int
	)
	for i, cancel := range c.cancels {
		if i+1 == c.kept || cancel == nil {
			continue
		}
		others = append(others, cancel)
		if !c.answered[i] {
			running = append(running, i+1)
		}
	}
	if c.kept > 0 {
		// The outcome's context lives as long as its body is read; an
		// empty body (http.NoBody) ends it now and is handed on as is, so
		// that the bulkhead above frees its slot at once, as for a call
		// that is not hedged.
		kc := c.cancels[c.kept-1]
		if c.resp != nil {
			endAfterBody(c.resp, func() { kc(nil) })
		} else {
			others = append(others, kc)
		}
	}
	sent := c.sent
	c.mu.Unlock()
	for _, cancel := range others {
		cancel(errHedgeLost)
	}
	rp := c.rt.p.retry
	for _, n := range running {
		rp.emitHedge(c.ctx, slog.LevelDebug, EventHedgeCancelled, c.req, n)
	}
	if won && sent > 1 && c.ctx.Err() == nil { // the caller's giving up is no win
		rp.emitHedge(c.ctx, slog.LevelInfo, EventHedgeWon, c.req, winner)
	}
	close(c.done)
}

// emitHedge sends a hedge event about copy n.
func (p *retryPolicy) emitHedge(ctx context.Context, level slog.Level, name string, req *http.Request, n int) {
	p.emit(ctx, level, name, req, n, 0, nil, nil)
}
