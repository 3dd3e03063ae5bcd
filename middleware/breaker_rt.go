package middleware

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"
)

// Middleware returns the breaker's layer, which sits outside retry so that
// it counts one outcome per logical call. Every layer made by one Breaker
// shares its state: a pipeline rebuilt on reload keeps what the breaker knows
// by calling Middleware again on the same Breaker.
//
// The layer keeps the RoundTripper contract: it never changes the request
// and hands it to the next layer as is; a call it rejects gets (nil, a
// *CircuitOpenError) and its request body is closed without the next layer
// being called. Like retry, it reads the status code of responses, which a
// plain RoundTripper is not meant to do; it never reads or closes their
// bodies. It is safe for concurrent use.
func (b *Breaker) Middleware() Middleware { return b.MiddlewareFor(b.ev) }

// MiddlewareFor is Middleware for one of several clients that share the
// breaker (a circuit_breaker.group): the events of the calls through this
// layer, rejections and the state changes they cause, go to ev, which names
// the client and the group, instead of the breaker's own. The state is the
// breaker's, shared by every layer made from it. A nil ev emits nothing.
func (b *Breaker) MiddlewareFor(ev *Events) Middleware {
	return func(next http.RoundTripper) http.RoundTripper {
		return &breakerRT{b: b, next: next, ev: ev}
	}
}

// breakerRT is the RoundTripper of Breaker.Middleware; it is immutable.
type breakerRT struct {
	b    *Breaker
	next http.RoundTripper
	ev   *Events
}

// RoundTrip admits or rejects the call, makes it, and records its outcome.
//
// Cost of a success on a closed breaker: in scope client, two atomic loads
// and no lock, no clock read, no allocation in consecutive mode (rate mode
// adds one mutex section and time.Now to count the success); in scope host,
// one mutex section for the host lookup. A rejection allocates its
// *CircuitOpenError, which carries data; events and transitions allocate
// only when someone listens or the state changes.
func (t *breakerRT) RoundTrip(req *http.Request) (*http.Response, error) {
	b := t.b
	cf := b.conf.Load()
	if !cf.enabled {
		return t.next.RoundTrip(req)
	}
	c, tk, rej := b.admit(req, cf, t.ev)
	if rej != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, rej
	}
	settled := false
	defer func() {
		if !settled { // next panicked: free the probe slot, count nothing
			b.settle(req, t.ev, c, tk, verdictNone, nil, nil)
		}
	}()
	resp, err := t.next.RoundTrip(req)
	settled = true
	b.settle(req, t.ev, c, tk, b.classify(req, resp, err), resp, err)
	return resp, err
}

// admit decides whether req may go ahead. It returns the circuit and ticket
// to settle an admitted call with, or the error of a rejected one.
func (b *Breaker) admit(req *http.Request, cf *breakerConf, ev *Events) (*circuit, ticket, *CircuitOpenError) {
	if !cf.scopeHost {
		if g := b.client.closedGen.Load(); g != 0 {
			return &b.client, ticket{gen: g - 1}, nil // closed: no lock, no clock
		}
	}
	b.mu.Lock()
	cf = b.conf.Load() // the settings may have changed since the fast path read them
	c := &b.client
	if cf.scopeHost {
		host := ""
		if req.URL != nil {
			host = req.URL.Host
		}
		c = b.hosts.get(host, b.maxHosts, cf)
	}
	// A closed circuit decides without the time. The clock is read only
	// when the decision needs it: time.Now costs from 20ns to over 100ns
	// on some virtual machines, more than the rest of this path.
	var (
		now  time.Time
		draw float64
	)
	if c.state != BreakerClosed || cf.adaptive {
		now = time.Now()
	}
	var p float64 // adaptive mode's rejection probability, for the event
	if cf.adaptive {
		draw, p = b.rand(), c.probability(now, cf)
	}
	tk, retryIn, ok, tr := c.allow(now, cf, draw)
	if tr.changed() {
		c.publish(cf)
		if c != &b.client {
			b.hosts.touch(c) // to the list of its new state
		}
		b.queueLocked(req, ev, c.host, tr, cf, nil, nil)
	}
	b.mu.Unlock()
	if tr.changed() {
		b.deliver()
	}
	if !ok {
		b.rejected(req, ev, c.host, retryIn, p)
		return nil, ticket{}, &CircuitOpenError{Host: c.host, RetryIn: retryIn, Probability: p}
	}
	return c, tk, nil
}

// settle records the outcome of a call admitted on c with tk.
func (b *Breaker) settle(req *http.Request, ev *Events, c *circuit, tk ticket, out verdict, resp *http.Response, err error) {
	switch {
	case out == verdictNone && !tk.probe:
		return // holds no slot and counts nowhere
	case out == verdictSuccess && c.cleanGen.Load() == tk.gen+1:
		return // closed, consecutive, no failure to reset: nothing changes
	}
	// Only a failure (which may open the circuit) and rate counting need the
	// time; read the clock before taking the lock when the settings say so.
	var now time.Time
	if cf := b.conf.Load(); out == verdictFailure || cf.rate || cf.adaptive {
		now = time.Now()
	}
	b.mu.Lock()
	if c.evicted {
		b.mu.Unlock()
		return
	}
	cf := b.conf.Load()
	if now.IsZero() && (cf.rate || cf.adaptive) {
		now = time.Now() // switched to a counting mode meanwhile
	}
	tr := c.record(now, cf, tk, out)
	c.publish(cf)
	if tr.changed() {
		if c != &b.client {
			b.hosts.touch(c)
		}
		b.queueLocked(req, ev, c.host, tr, cf, resp, err)
	}
	b.mu.Unlock()
	if tr.changed() {
		b.deliver()
	}
}

// classify turns a call's result into the breaker's verdict, by the
// table in the package doc: a local rejection or a caller gone (Classify)
// counts as neither, before BreakerOptions.IsFailure is asked, in every
// mode, adaptive counts included; the end of a deadline set by the
// Timeout layer is not the caller's doing and goes to isFailure like any
// other error.
func (b *Breaker) classify(req *http.Request, resp *http.Response, err error) verdict {
	switch Classify(req, resp, err) {
	case OutcomeRejected, OutcomeCallerGone:
		return verdictNone
	}
	if b.isFailure(resp, err) {
		return verdictFailure
	}
	return verdictSuccess
}

// rejected emits EventCircuitRejected for req; p is adaptive mode's
// rejection probability (0 in the other modes), given in Reason.
func (b *Breaker) rejected(req *http.Request, ev *Events, host string, retryIn time.Duration, p float64) {
	ctx := req.Context()
	if !ev.on(ctx, slog.LevelDebug) {
		return
	}
	e := Event{
		Name:   EventCircuitRejected,
		Method: req.Method,
		URL:    RedactURL(req.URL),
		Host:   host,
		Delay:  retryIn,
	}
	if p > 0 {
		e.Reason = "adaptive throttling: rejection probability " + strconv.FormatFloat(p, 'f', 3, 64)
	}
	ev.Emit(ctx, slog.LevelDebug, e)
}

// pendingTransition is a state change waiting to be reported, with what
// its event says about the call that caused it.
type pendingTransition struct {
	ev     *Events // of the layer whose call caused it
	ctx    context.Context
	host   string
	tr     transition
	method string
	url    string // redacted
	status int
	delay  time.Duration // opened: the cooldown
	err    error         // redacted
}

// queueLocked queues tr, caused by req (which ended with resp, err), for
// deliver. Queueing under the lock that decided tr keeps reports in the
// order of the changes. It redacts here, while req is surely unchanged;
// state changes are rare, so the work under the lock is too. b.mu must be
// held.
func (b *Breaker) queueLocked(req *http.Request, ev *Events, host string, tr transition, cf *breakerConf, resp *http.Response, err error) {
	p := pendingTransition{ev: ev, ctx: req.Context(), host: host, tr: tr}
	if ev != nil {
		p.method = req.Method
		p.url = RedactURL(req.URL)
		p.err = redactError(err, req.URL)
		if resp != nil {
			p.status = resp.StatusCode
		}
	}
	if tr.to == BreakerOpen {
		p.delay = cf.cooldown
	}
	b.pending = append(b.pending, p)
}

// deliver reports the queued state changes, in order, one at a time and
// without holding b.mu, so that callbacks may call the Breaker. When
// another goroutine is already reporting, it leaves the queue to that one,
// which reports every change queued before it finishes; so a callback that
// causes a change does not recurse.
func (b *Breaker) deliver() {
	b.mu.Lock()
	if b.delivering || len(b.pending) == 0 {
		b.mu.Unlock()
		return
	}
	b.delivering = true
	done := false
	defer func() {
		if !done { // a callback panicked: let later changes be reported
			b.mu.Lock()
			b.delivering = false
			b.mu.Unlock()
		}
	}()
	for len(b.pending) > 0 {
		batch := b.pending
		b.pending = nil
		b.mu.Unlock()
		for i := range batch {
			b.notify(&batch[i])
		}
		b.mu.Lock()
	}
	b.delivering = false
	done = true
	b.mu.Unlock()
}

// notify emits the event of one state change and calls OnStateChange. No
// lock is held.
func (b *Breaker) notify(p *pendingTransition) {
	name, level := EventCircuitClosed, slog.LevelInfo
	switch p.tr.to {
	case BreakerOpen:
		name, level = EventCircuitOpened, slog.LevelWarn
	case BreakerHalfOpen:
		name = EventCircuitHalfOpen
	}
	ev := p.ev
	if ev == nil { // a change of Update's own, caused by no call
		ev = b.ev
	}
	ev.Emit(p.ctx, level, Event{
		Name:   name,
		Method: p.method,
		URL:    p.url,
		Host:   p.host,
		Status: p.status,
		Delay:  p.delay,
		Err:    p.err,
		Reason: p.tr.reason,
	})
	if b.onChange != nil {
		b.onChange(p.host, p.tr.from, p.tr.to)
	}
}
