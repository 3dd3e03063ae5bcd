package middleware

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// ErrRateLimited is matched, with errors.Is, by the error of an attempt
// that a RateLimit refused because its wait for a token (or for a pause
// the server asked for to end) could not end before the deadline it runs
// under (the attempt's, the call's or the caller's), or that such a
// deadline ended, or that a fleet quota refused because its store failed
// with on_store_error deny. It is found through the *url.Error that
// http.Client wraps around it. Retry does not retry it, and a Breaker
// counts it as neither a success nor a failure: it is local
// back-pressure, not a backend failure (see Classify).
var ErrRateLimited = errors.New("rate limit exceeded")

// MaxPerHeaderQuotas bounds the per-header buckets a RateLimit keeps in
// this process (scope process, and scope fleet's local fallback): past
// it, the least recently used one is evicted (it starts full when its
// header value comes back).
const MaxPerHeaderQuotas = 10000

// RateLimitOptions are the code-only options of NewRateLimit. The zero
// value emits no events, names the quota "default" and has no store (a
// fleet scope then always takes its on_store_error path). NewRateLimit
// copies it.
type RateLimitOptions struct {
	// Events receives EventRateLimitWaited at slog.LevelDebug after every
	// attempt that waited for a token, and the other ratelimit.* events;
	// nil means no events.
	Events *Events
	// Name is the quota's key in the store when rate_limit.key is "": the
	// factory passes the group's name, else the client's. "" means
	// "default".
	Name string
	// Quotas is the store of scope fleet; nil means none.
	Quotas QuotaStore
}

// RateLimit paces the attempts of a client. It sits inside Retry, so
// retries are paced too: every attempt takes a token.
//
// With scope process (the default) the quota is a token bucket in this
// process, a golang.org/x/time/rate.Limiter: it holds up to Burst tokens,
// refills at RequestsPerSecond, and an attempt waits for its token when
// the bucket is empty. Waits are the limiter's reservations: an attempt
// whose wait ends early (its context ended) cancels its reservation,
// which gives back only the tokens that no later reservation has
// consumed, so a cancelled waiter never lets a later one through sooner
// than the rate allows.
//
// With scope fleet the quota lives in a QuotaStore (one GCRA decision per
// attempt, bounded by StoreTimeout) and every process naming its key
// shares it; an attempt the store refuses waits the time the store says
// and asks again. While the store fails, OnStoreError applies: local
// (a bucket of this process at FallbackPerSecond, which every admitted
// attempt keeps warm), allow or deny. One WARN record
// (EventRateLimitStoreError) marks the start of a failing spell and one
// INFO record (EventRateLimitStoreRecovered) its end.
//
// PerHeader keeps one quota per value of a request header, the value
// hashed with SHA-256 into the key (never kept or logged in clear); in
// this process at most MaxPerHeaderQuotas such buckets are kept.
// RespectServer pauses the quota after a 429 or 503 that says how long to
// back off. In every case a wait that would end before the request's
// deadline is waited (cancellable), one that would not is refused at once
// with ErrRateLimited.
//
// A RequestsPerSecond of zero (or less) means unlimited: the layer passes
// requests through at the cost of one atomic load. A Burst below 1 with a
// finite rate is taken as 1.
//
// The settings can be retuned with Update while requests are in flight; the
// tokens in this process's buckets are kept, and a fleet quota's state is
// the store's. A RateLimit is created with NewRateLimit (the zero value is
// not usable) and is safe for concurrent use.
type RateLimit struct {
	ev    *Events
	name  string
	store QuotaStore
	// set is the serving settings; nil while unlimited.
	set atomic.Pointer[quotaSettings]
	// local is scope process's buckets, fallback scope fleet's local ones
	// (at FallbackPerSecond); both also hold the local pauses.
	local, fallback buckets
	// failing is true while the store fails (scope fleet).
	failing atomic.Bool
	mu      sync.Mutex // serializes Update
}

// quotaSettings are the normalized settings of a limited RateLimit.
type quotaSettings struct {
	s        RateLimitSettings // StoreTimeout, Scope, OnStoreError, FallbackPerSecond filled in
	key      string
	burst    int
	fleet    bool
	fallback rate.Limit
}

// NewRateLimit returns a RateLimit with the settings s, its buckets full;
// the zero RateLimitSettings make it unlimited. The RateLimit is safe for
// concurrent use.
func NewRateLimit(s RateLimitSettings, o RateLimitOptions) *RateLimit {
	l := &RateLimit{ev: o.Events, name: o.Name, store: o.Quotas}
	if l.name == "" {
		l.name = "default"
	}
	l.Update(s)
	return l
}

// Update retunes the limiter in place: this process's buckets keep their
// tokens (capped at the new Burst) and refill at the new rate from now on
// (SetLimitAt, SetBurstAt); a fleet quota's state lives in the store and
// is kept too, whatever changes (a new key starts a quota of its own).
// Attempts already waiting keep the wait they were given. Setting
// RequestsPerSecond to zero makes the layer unlimited at once; a finite
// rate set after that starts with full buckets, as the unlimited layer
// had, in effect, any number of tokens. It is safe for concurrent use.
func (l *RateLimit) Update(s RateLimitSettings) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s.RequestsPerSecond <= 0 {
		l.set.Store(nil)
		l.local.reset()
		l.fallback.reset()
		return
	}
	q := &quotaSettings{s: s, key: s.Key, burst: max(s.Burst, 1), fleet: s.Scope == QuotaFleet}
	if q.key == "" {
		q.key = l.name
	}
	if q.s.StoreTimeout <= 0 {
		q.s.StoreTimeout = DefaultQuotaStoreTimeout
	}
	if q.s.OnStoreError == "" {
		q.s.OnStoreError = QuotaLocal
	}
	if q.s.Scope == "" {
		q.s.Scope = QuotaProcess
	}
	q.fallback = rate.Limit(s.FallbackPerSecond)
	if s.FallbackPerSecond <= 0 {
		q.fallback = rate.Limit(s.RequestsPerSecond)
	}
	now := time.Now()
	l.local.tune(now, rate.Limit(s.RequestsPerSecond), q.burst)
	l.fallback.tune(now, q.fallback, q.burst)
	l.set.Store(q)
}

// Tokens returns how many tokens this process's bucket holds now
// (Limiter.TokensAt), +Inf when the layer is unlimited and NaN with scope
// fleet (the store holds them). It is negative while attempts wait for
// tokens they have reserved. It is safe for concurrent use.
func (l *RateLimit) Tokens() float64 {
	q := l.set.Load()
	switch {
	case q == nil:
		return math.Inf(1)
	case q.fleet:
		return math.NaN()
	}
	return l.local.get("").lim.TokensAt(time.Now())
}

// QuotaMode returns "store" while a fleet quota's decisions come from its
// store, "fallback" while the store fails (on_store_error applies), and ""
// for scope process or an unlimited layer. It is safe for concurrent use.
func (l *RateLimit) QuotaMode() string {
	q := l.set.Load()
	switch {
	case q == nil || !q.fleet:
		return ""
	case l.failing.Load():
		return "fallback"
	}
	return "store"
}

// Middleware returns the rate limit layer: every attempt takes a token, so it
// sits inside Retry. Every RoundTripper it returns shares l's quotas and is
// safe for concurrent use. It is Layer(l's Events, DefaultMaxBackoff).
//
// A wait that cannot end before the request context's deadline is not
// started: RoundTrip cancels the reservation and returns at once an error
// matching ErrRateLimited (EventRateLimitRefused). A wait ends early when
// the request context ends, and cancels its reservation: ended by a
// deadline, with an error matching both ErrRateLimited and
// context.DeadlineExceeded (no token came in time: a local rejection);
// cancelled, with an error matching the context's error alone
// (errors.Is(err, context.Canceled): the caller is gone). After a wait the
// layer emits EventRateLimitWaited with the wait as Delay; an attempt that
// did not wait emits nothing.
//
// It keeps the RoundTripper contract: it passes the caller's request on
// unchanged and closes the request body when it returns an error without
// passing the request on.
func (l *RateLimit) Middleware() Middleware { return l.Layer(l.ev, DefaultMaxBackoff) }

// MiddlewareFor is Layer(ev, DefaultMaxBackoff).
func (l *RateLimit) MiddlewareFor(ev *Events) Middleware { return l.Layer(ev, DefaultMaxBackoff) }

// Layer is Middleware for one of several clients that share the limiter
// (a rate_limit.group): the layer's events go to ev, which names the
// client and the group, instead of the limiter's own, and a pause a
// server asks for (respect_server) lasts at most maxPause (the client's
// retry.max_backoff; 0 or less: none is set). Its quotas are the
// limiter's, shared by every layer made from it. A nil ev emits nothing.
func (l *RateLimit) Layer(ev *Events, maxPause time.Duration) Middleware {
	return func(next http.RoundTripper) http.RoundTripper {
		return &rateLimitRT{l: l, next: next, ev: ev, maxPause: maxPause}
	}
}

// rateLimitRT is the RoundTripper of RateLimit.Layer.
type rateLimitRT struct {
	l        *RateLimit
	next     http.RoundTripper
	ev       *Events
	maxPause time.Duration
}

func (t *rateLimitRT) RoundTrip(req *http.Request) (*http.Response, error) {
	q := t.l.set.Load()
	if q == nil {
		return t.next.RoundTrip(req)
	}
	tenant := ""
	if h := q.s.PerHeader; h != "" {
		if v := req.Header.Get(h); v != "" {
			tenant = hashTenant(q.key, v)
		}
	}
	var err error
	if q.fleet {
		err = t.l.fleetWait(req, q, tenant, t.ev)
	} else {
		err = t.l.localWait(req, q, t.l.local.get(tenant), t.ev)
	}
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	resp, err := t.next.RoundTrip(req)
	if q.s.RespectServer && resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		t.l.serverPause(req, q, tenant, resp, t.maxPause, t.ev)
	}
	return resp, err
}

// hashTenant returns the part of a quota's key that stands for the value
// v of its per_header header: a SHA-256 of the key and the value, so that
// the value is never kept or shown in clear.
func hashTenant(key, v string) string {
	h := sha256.New()
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(v))
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:16])
}

// storeKey returns the store key of the quota of tenant ("" = the main one).
func storeKey(q *quotaSettings, tenant string) string {
	if tenant == "" {
		return q.key
	}
	return q.key + ":h:" + tenant
}

// scopeOf names q's scope in events.
func scopeOf(q *quotaSettings) string { return string(q.s.Scope) }

// localWait takes a token of the bucket b for req, waiting for it (and
// for a pause of b to end) if need be.
func (l *RateLimit) localWait(req *http.Request, q *quotaSettings, b *bucket, ev *Events) error {
	ctx := req.Context()
	if err := l.pauseWait(req, q, b, ev); err != nil {
		return err
	}
	lim := b.lim
	now := time.Now()
	// AllowN takes a free token without allocating; ReserveN (one
	// allocation, the *Reservation) only when the attempt must wait.
	if lim.AllowN(now, 1) {
		return nil
	}
	if ctx.Err() != nil {
		return l.cut(ctx, lim, 0)
	}
	r := lim.ReserveN(now, 1)
	d := r.DelayFrom(now)
	dl, hasDeadline := ctx.Deadline()
	if !r.OK() || d == rate.InfDuration || hasDeadline && !now.Add(d).Before(dl) {
		r.CancelAt(now) // gives back the token: no later reservation exists yet
		err := refused(lim, d, dl.Sub(now), hasDeadline)
		l.emit(ctx, ev, slog.LevelDebug, req, q, EventRateLimitRefused, d, err)
		return err
	}
	if d <= 0 {
		return nil // a token came between AllowN and ReserveN
	}
	markLocalWait(ctx)
	timer := time.NewTimer(d)
	select {
	case <-timer.C:
	case <-ctx.Done():
		timer.Stop()
		r.CancelAt(time.Now())
		return l.cut(ctx, lim, d)
	}
	l.emit(ctx, ev, slog.LevelDebug, req, q, EventRateLimitWaited, d, nil)
	return nil
}

// pauseWait waits for the local pause of b to end, or refuses the attempt
// when it cannot end before the deadline.
func (l *RateLimit) pauseWait(req *http.Request, q *quotaSettings, b *bucket, ev *Events) error {
	until := b.paused.Load()
	if until == 0 {
		return nil
	}
	now := time.Now()
	d := time.Duration(until - now.UnixNano())
	if d <= 0 {
		return nil
	}
	ctx := req.Context()
	l.emit(ctx, ev, slog.LevelDebug, req, q, EventRateLimitPaused, d, nil)
	return l.sleep(req, q, d, "a pause the server asked for", ev)
}

// sleep waits d for req, or refuses it at once when d cannot end before
// its deadline; what names what is waited for in the errors.
func (l *RateLimit) sleep(req *http.Request, q *quotaSettings, d time.Duration, what string, ev *Events) error {
	ctx := req.Context()
	if dl, ok := ctx.Deadline(); ok && !time.Now().Add(d).Before(dl) {
		err := fmt.Errorf("switchboard: %w: %s ends in %v, the deadline in %v (%s, scope %s)",
			ErrRateLimited, what, d, max(time.Until(dl), 0), q.describe(), q.s.Scope)
		l.emit(ctx, ev, slog.LevelDebug, req, q, EventRateLimitRefused, d, err)
		return err
	}
	markLocalWait(ctx)
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		if waitRejected(ctx) {
			return fmt.Errorf("switchboard: %w: a deadline ended the wait of %v for %s (%s, scope %s): %w",
				ErrRateLimited, d, what, q.describe(), q.s.Scope, ctx.Err())
		}
		return fmt.Errorf("switchboard: waiting for the rate limiter: %w", ctx.Err())
	}
}

// describe names q's numbers in errors.
func (q *quotaSettings) describe() string {
	return fmt.Sprintf("requests_per_second %g, burst %d", q.s.RequestsPerSecond, q.burst)
}

// errNoStore is the store error of a fleet quota built without a store.
var errNoStore = errors.New("no quota store (factory.Options.Quotas) is set")

// fleetWait takes a token of the fleet quota for req: it asks the store,
// waits the time the store says (a token, or a pause, away) and asks
// again, until the store allows, the deadline cannot be met, or the store
// fails (then on_store_error applies).
func (l *RateLimit) fleetWait(req *http.Request, q *quotaSettings, tenant string, ev *Events) error {
	ctx := req.Context()
	if ctx.Err() != nil {
		return l.cutFleet(ctx, q, 0)
	}
	key := storeKey(q, tenant)
	b := l.fallback.get(tenant)
	// A pause this process set holds here even if the store did not
	// take it (the store's own pause is read with the decision).
	if err := l.pauseWait(req, q, b, ev); err != nil {
		return err
	}
	dec, err := l.decide(ctx, q, key)
	if err != nil {
		if requestEnded(ctx) { // the request ended, not the store
			return l.cutFleet(ctx, q, 0)
		}
		return l.storeFailed(req, q, tenant, err, ev)
	}
	l.storeAnswered(ctx, q, ev)
	if dec.Allowed {
		b.lim.AllowN(time.Now(), 1) // keeps the fallback warm
		return nil
	}
	d := max(dec.RetryAfter, time.Millisecond)
	what := "the next token of the fleet quota"
	if dec.Paused {
		what = "a pause the server asked for"
		l.emit(ctx, ev, slog.LevelDebug, req, q, EventRateLimitPaused, d, nil)
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Add(d).Before(dl) {
		return l.sleep(req, q, d, what, ev) // refuses at once
	}
	// The store reserves nothing: every waiter would wake when the store
	// said and ask again, all at once. In this process one waiter per
	// quota asks at a time (its turn) and the others queue behind it, so
	// a process sends about one decision per token plus one per wait,
	// however many attempts wait.
	var waited time.Duration
	select {
	case b.turn <- struct{}{}: // nobody waits: wait what the store said
		if err := l.sleep(req, q, d, what, ev); err != nil {
			b.endTurn()
			return err
		}
		waited = d
	default: // another waiter asks: queue, then ask at once
		began := time.Now()
		if !b.takeTurn(ctx) {
			return l.cutFleet(ctx, q, time.Since(began))
		}
		waited = time.Since(began)
	}
	defer b.endTurn()
	return l.fleetTurn(req, q, key, tenant, b, &waited, ev)
}

// fleetTurn asks the store for key's token while holding b's turn,
// waiting what the store says between asks, until it allows, the
// deadline cannot be met, or the store fails.
func (l *RateLimit) fleetTurn(req *http.Request, q *quotaSettings, key, tenant string, b *bucket, waited *time.Duration, ev *Events) error {
	ctx := req.Context()
	for {
		if ctx.Err() != nil {
			return l.cutFleet(ctx, q, *waited)
		}
		dec, err := l.decide(ctx, q, key)
		if err != nil {
			if requestEnded(ctx) {
				return l.cutFleet(ctx, q, *waited)
			}
			return l.storeFailed(req, q, tenant, err, ev)
		}
		l.storeAnswered(ctx, q, ev)
		if dec.Allowed {
			b.lim.AllowN(time.Now(), 1) // keeps the fallback warm
			l.emit(ctx, ev, slog.LevelDebug, req, q, EventRateLimitWaited, *waited, nil)
			return nil
		}
		d := max(dec.RetryAfter, time.Millisecond)
		what := "the next token of the fleet quota"
		if dec.Paused {
			what = "a pause the server asked for"
			l.emit(ctx, ev, slog.LevelDebug, req, q, EventRateLimitPaused, d, nil)
		}
		if err := l.sleep(req, q, d, what, ev); err != nil {
			return err
		}
		*waited += d
	}
}

// decide asks the store for one token of key, within store_timeout.
func (l *RateLimit) decide(ctx context.Context, q *quotaSettings, key string) (QuotaDecision, error) {
	if l.store == nil {
		return QuotaDecision{}, errNoStore
	}
	sctx, cancel := context.WithTimeout(ctx, q.s.StoreTimeout)
	defer cancel()
	dec, err := l.store.Take(sctx, key, q.s.RequestsPerSecond, q.burst, 1)
	if err == nil && sctx.Err() != nil && ctx.Err() == nil {
		// An answer past store_timeout counts as none: the bound holds
		// when the store honours its context, as QuotaStore asks.
		err = fmt.Errorf("no answer within store_timeout %v", q.s.StoreTimeout)
	}
	return dec, err
}

// redactStoreError is redactError for an event's error that may come from
// the quota store: its text is passed through RedactText whether or not
// the request URL u holds a secret, since a store's error may name its own
// URL (a password in redis://…).
func redactStoreError(err error, u *url.URL) error {
	if err == nil || u == nil {
		return err
	}
	return redactErrorWith(err, u, secretsOf(u))
}

// requestEnded reports whether the request's context has ended or its
// deadline has passed. A store whose I/O deadline is the context's
// (go-redis with ContextTimeoutEnabled gives the connection that deadline)
// fails with an i/o timeout at that instant, which can come before the
// context's own timer has marked it done: that failure is the request's
// deadline, not the store's, and must neither start a failing spell nor
// hand the attempt to on_store_error.
func requestEnded(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// cutFleet is the error of a fleet wait that the request's context ended
// (or whose deadline passed before the context's timer marked it done).
func (l *RateLimit) cutFleet(ctx context.Context, q *quotaSettings, waited time.Duration) error {
	cause := ctx.Err()
	if cause == nil {
		cause = context.DeadlineExceeded
	}
	if errors.Is(cause, context.DeadlineExceeded) {
		return fmt.Errorf("switchboard: %w: a deadline ended the wait of %v for the fleet quota (%s): %w",
			ErrRateLimited, waited, q.describe(), cause)
	}
	return fmt.Errorf("switchboard: waiting for the rate limiter: %w", cause)
}

// storeFailed applies on_store_error to an attempt whose decision failed
// with err, marking the start of a failing spell.
func (l *RateLimit) storeFailed(req *http.Request, q *quotaSettings, tenant string, err error, ev *Events) error {
	ctx := req.Context()
	level := slog.LevelDebug
	if l.failing.CompareAndSwap(false, true) {
		level = slog.LevelWarn
	}
	if ev.on(ctx, level) {
		ev.Emit(ctx, level, Event{
			Name:   EventRateLimitStoreError,
			Scope:  scopeOf(q),
			Err:    redactStoreError(err, req.URL),
			Reason: fmt.Sprintf("the quota store failed; on_store_error %s applies until it answers again", q.s.OnStoreError),
		})
	}
	switch q.s.OnStoreError {
	case QuotaAllow:
		return nil
	case QuotaDeny:
		err := fmt.Errorf("switchboard: %w: the quota store failed and on_store_error is deny (%s): %v",
			ErrRateLimited, q.describe(), err.Error())
		l.emit(ctx, ev, slog.LevelDebug, req, q, EventRateLimitRefused, 0, err)
		return err
	}
	return l.localWait(req, q, l.fallback.get(tenant), ev)
}

// storeAnswered ends a failing spell, if one was on.
func (l *RateLimit) storeAnswered(ctx context.Context, q *quotaSettings, ev *Events) {
	if l.failing.Load() && l.failing.CompareAndSwap(true, false) && ev.on(ctx, slog.LevelInfo) {
		ev.Emit(ctx, slog.LevelInfo, Event{Name: EventRateLimitStoreRecovered, Scope: scopeOf(q),
			Reason: "the quota store answers again"})
	}
}

// serverPause pauses the quota of tenant as resp asks (Retry-After,
// RateLimit-Reset: the longest), capped at maxPause: in this process at
// once, and fleet-wide through the store with scope fleet.
func (l *RateLimit) serverPause(req *http.Request, q *quotaSettings, tenant string, resp *http.Response, maxPause time.Duration, ev *Events) {
	now := time.Now()
	d, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), now)
	if !ok {
		d = 0
	}
	if v := strings.TrimSpace(resp.Header.Get("RateLimit-Reset")); v != "" && isDigits(v) {
		if secs, err := strconv.ParseInt(v, 10, 64); err == nil && secs < int64(maxDuration/time.Second) {
			d = max(d, time.Duration(secs)*time.Second)
		}
	}
	d = min(d, maxPause)
	if d <= 0 {
		return
	}
	until := now.Add(d)
	b := &l.local
	if q.fleet {
		b = &l.fallback
	}
	b.get(tenant).pause(until)
	var err error
	if q.fleet && l.store != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(req.Context()), q.s.StoreTimeout)
		err = l.store.Pause(ctx, storeKey(q, tenant), until)
		cancel()
	}
	ctx := req.Context()
	if ev.on(ctx, slog.LevelInfo) {
		e := Event{Name: EventRateLimitPaused, Scope: scopeOf(q), Method: req.Method, URL: RedactURL(req.URL),
			Host: hostOf(req), Status: resp.StatusCode, Delay: d, Reason: "the server asked to back off"}
		if err != nil {
			e.Err = redactStoreError(err, req.URL)
			e.Reason += "; the store did not take the pause, this process keeps it"
		}
		ev.Emit(ctx, slog.LevelInfo, e)
	}
}

// emit sends a rate-limit event about req.
func (l *RateLimit) emit(ctx context.Context, ev *Events, level slog.Level, req *http.Request, q *quotaSettings, name string, d time.Duration, err error) {
	if !ev.on(ctx, level) {
		return
	}
	e := Event{Name: name, Scope: scopeOf(q), Method: req.Method, URL: RedactURL(req.URL), Host: hostOf(req), Delay: d}
	if err != nil {
		e.Err = redactStoreError(err, req.URL)
	}
	ev.Emit(ctx, level, e)
}

// cut returns the error of a wait of d for a token of lim that ctx ended
// (before it began, for d 0): one matching both ErrRateLimited and
// context.DeadlineExceeded when a deadline ended it, as when the wait is
// refused up front (a local rejection, whoever set the deadline), and the
// context's error alone when a cancellation did (the caller is gone).
func (l *RateLimit) cut(ctx context.Context, lim *rate.Limiter, d time.Duration) error {
	if waitRejected(ctx) {
		why := "the deadline had passed when the attempt came for a token"
		if d > 0 {
			why = fmt.Sprintf("a deadline ended the wait of %v for a token", d)
		}
		return fmt.Errorf("switchboard: %w: %s (requests_per_second %g, burst %d): %w",
			ErrRateLimited, why, float64(lim.Limit()), lim.Burst(), ctx.Err())
	}
	return fmt.Errorf("switchboard: waiting for the rate limiter: %w", ctx.Err())
}

// refused builds the ErrRateLimited error of a wait of d that was not
// started because it would have ended at or after the deadline, left away.
func refused(lim *rate.Limiter, d, left time.Duration, hasDeadline bool) error {
	why := "no token can come within any wait"
	if d != rate.InfDuration && hasDeadline {
		why = fmt.Sprintf("the next token is %v away, the deadline %v", d, max(left, 0))
	}
	return fmt.Errorf("switchboard: %w: %s (requests_per_second %g, burst %d)",
		ErrRateLimited, why, float64(lim.Limit()), lim.Burst())
}

// bucket is one quota of this process: its token bucket, its pause and,
// for a fleet quota, the turn of its waiters.
type bucket struct {
	lim    *rate.Limiter
	paused atomic.Int64 // unix nanoseconds the pause ends at; 0: none
	tenant string
	turn   chan struct{} // holds a value while a waiter asks the store
}

// takeTurn waits until no other waiter of b asks the store, or ctx ends
// (false).
func (b *bucket) takeTurn(ctx context.Context) bool {
	select {
	case b.turn <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// endTurn lets the next waiter of b ask the store.
func (b *bucket) endTurn() { <-b.turn }

// pause extends b's pause to until (the longest wins).
func (b *bucket) pause(until time.Time) {
	u := until.UnixNano()
	for {
		cur := b.paused.Load()
		if cur >= u || b.paused.CompareAndSwap(cur, u) {
			return
		}
	}
}

// buckets are a RateLimit's buckets of one kind in this process: the main
// one and up to MaxPerHeaderQuotas per-header ones, least recently used
// evicted. The zero value is empty. Safe for concurrent use.
type buckets struct {
	main    atomic.Pointer[bucket]
	mu      sync.Mutex
	r       rate.Limit
	burst   int
	tenants map[string]*list.Element // of *bucket
	order   list.List                // most recently used first
}

// get returns the bucket of tenant ("" = the main one), creating it full.
func (bs *buckets) get(tenant string) *bucket {
	if tenant == "" {
		if b := bs.main.Load(); b != nil {
			return b
		}
	}
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if tenant == "" {
		if b := bs.main.Load(); b != nil {
			return b
		}
		b := &bucket{lim: rate.NewLimiter(bs.r, bs.burst), turn: make(chan struct{}, 1)}
		bs.main.Store(b)
		return b
	}
	if e, ok := bs.tenants[tenant]; ok {
		bs.order.MoveToFront(e)
		return e.Value.(*bucket)
	}
	if bs.tenants == nil {
		bs.tenants = map[string]*list.Element{}
	}
	for len(bs.tenants) >= MaxPerHeaderQuotas {
		last := bs.order.Back()
		delete(bs.tenants, last.Value.(*bucket).tenant)
		bs.order.Remove(last)
	}
	b := &bucket{lim: rate.NewLimiter(bs.r, bs.burst), tenant: tenant, turn: make(chan struct{}, 1)}
	bs.tenants[tenant] = bs.order.PushFront(b)
	return b
}

// tune sets the rate and burst of every bucket, keeping their tokens.
func (bs *buckets) tune(now time.Time, r rate.Limit, burst int) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	bs.r, bs.burst = r, burst
	set := func(b *bucket) {
		b.lim.SetBurstAt(now, burst)
		b.lim.SetLimitAt(now, r)
	}
	if b := bs.main.Load(); b != nil {
		set(b)
	}
	for e := bs.order.Front(); e != nil; e = e.Next() {
		set(e.Value.(*bucket))
	}
}

// reset drops every bucket: the next ones start full.
func (bs *buckets) reset() {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	bs.main.Store(nil)
	bs.tenants = nil
	bs.order.Init()
}

// perHeaderQuotas returns how many per-header buckets of the process
// scope are kept (for tests).
func (l *RateLimit) perHeaderQuotas() int {
	l.local.mu.Lock()
	defer l.local.mu.Unlock()
	return len(l.local.tenants)
}
