package middleware

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
)

// The adaptive mode of Bulkhead (BulkheadAdaptive) is failsafe-go's
// adaptivelimiter, used through its standalone API: a call takes a
// permit with AcquirePermitWithMaxWait, holds it until its response body
// ends, and gives it back with Record (a latency sample) or Drop (none).
// Not its policy executor (failsafe.With(limiter).Get): that gives the
// permit back when the function returns, while a call here holds it until
// its caller is done with the body, and records every return alike, while
// a call here is sampled or not by its outcome (see sampled).
// The limiter compares the p90 of the latencies of a recent window (at
// least 1 s and 50 samples, at most 30 s) with a slow moving baseline and
// lowers the limit while they grow, raises it while they do not; its
// state is guarded by its own lock, it starts no goroutine, and it reads
// time.Now and time.NewTimer, so that it runs inside testing/synctest.
//
// Its limits are fixed when it is built (WithLimits), so a reload that
// changes min_limit or max_limit builds a new limiter whose initial limit
// is the learned one, clamped to the new bounds: the limit is kept, the
// latency baseline is learned again. The calls in flight on the old
// limiter still count against the new one: the new one holds a proxy
// permit for each (taken with TryAcquirePermit, up to its limit), and
// each such call drops one as it ends.

// adaptiveGen is one limiter of an adaptive Bulkhead. lo and hi are the
// bounds it was built with; retired is set, under the Bulkhead's mu, when
// a newer limiter takes its place.
type adaptiveGen struct {
	lim     adaptivelimiter.AdaptiveLimiter[any]
	lo, hi  int
	retired atomic.Bool
	// proxies stand for calls in flight on older limiters; guarded by
	// the Bulkhead's mu.
	proxies []adaptivelimiter.Permit
}

// newAdaptiveGen builds a limiter with bounds [lo, hi] starting at
// initial.
//
// It has no OnLimitChanged listener, on purpose: the limiter calls its
// listener from inside Record or Drop, having unlocked its mutex for the
// call and relocking it after, while Record unlocks it again in a defer;
// a listener that panics (an Observer's, a slog handler's) would unlock
// an unlocked mutex, a fatal error that no recover catches, and the
// permit would be lost. Instead endAdaptive reads Limit once Record or
// Drop has returned and reports a move from there (limitMoved), on the
// caller's goroutine and with no lock held.
func (b *Bulkhead) newAdaptiveGen(lo, hi, initial int) *adaptiveGen {
	g := &adaptiveGen{lo: lo, hi: hi}
	g.lim = adaptivelimiter.NewBuilder[any]().
		WithLimits(uint(lo), uint(hi), uint(initial)).
		Build()
	return g
}

// updateAdaptiveLocked applies adaptive settings s. A first limiter (the
// bulkhead was static) starts at InitialLimit and reports from there; new
// bounds carry the learned limit, clamped, into a new limiter, which takes
// over the calls in flight; a change of InitialLimit or MaxWait alone
// keeps the limiter. b.mu must be held; it returns the proxies of the
// retired limiter, to be dropped once mu is released, and the new
// limiter's limit when new bounds clamped it (0 otherwise), to be
// reported then.
func (b *Bulkhead) updateAdaptiveLocked(s BulkheadSettings) (drop []adaptivelimiter.Permit, clamped int) {
	lo, hi, initial := s.adaptiveLimits()
	old := b.adaptive.Load()
	if old == nil {
		b.reported.Store(int64(initial))
		b.adaptive.Store(b.newAdaptiveGen(lo, hi, initial))
		return nil, 0
	}
	if old.lo == lo && old.hi == hi {
		return nil, 0
	}
	old.retired.Store(true) // before Inflight is read: see acquireAdaptive
	learned := old.lim.Limit()
	kept := min(max(learned, lo), hi)
	if kept != learned {
		clamped = kept
	}
	g := b.newAdaptiveGen(lo, hi, kept)
	for range old.lim.Inflight() {
		p, ok := g.lim.TryAcquirePermit()
		if !ok {
			break
		}
		g.proxies = append(g.proxies, p)
	}
	drop, old.proxies = old.proxies, nil
	b.adaptive.Store(g)
	return drop, clamped
}

// limitMoved reports the limit n after a change: an EventBulkheadLimitChanged
// when it moved by 10 % or more from the last reported value. endAdaptive
// calls it after a permit of the serving limiter was given back, Update
// after new bounds clamped the limit; neither holds a lock, so an
// Observer that panics panics in that caller, as any other event's would.
func (b *Bulkhead) limitMoved(n int) {
	for {
		last := b.reported.Load()
		if diff := int64(n) - last; diff*diff*100 < last*last { // |n - last| < 10 % of last
			return
		}
		if b.reported.CompareAndSwap(last, int64(n)) {
			ctx := context.Background()
			if b.ev.on(ctx, slog.LevelInfo) {
				b.ev.Emit(ctx, slog.LevelInfo, Event{Name: EventBulkheadLimitChanged, OldLimit: int(last), NewLimit: n})
			}
			return
		}
	}
}

// adaptiveCall is one call holding a permit; end runs when its response
// body ends.
type adaptiveCall struct {
	b   *Bulkhead
	g   *adaptiveGen
	p   adaptivelimiter.Permit
	req *http.Request
}

// end gives the permit back once the body ended: a sample, unless the
// caller had gone by then (its latency is then unknown).
func (c *adaptiveCall) end() { c.b.endAdaptive(c.g, c.p, !callerGone(c.req.Context())) }

// roundTripAdaptive is RoundTrip in mode adaptive.
func (t *bulkheadRT) roundTripAdaptive(req *http.Request) (*http.Response, error) {
	b := t.b
	g, p, err := b.acquireAdaptive(req, t.ev)
	if g == nil && err == nil {
		return t.roundTripStatic(req)
	}
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	held := true
	defer func() {
		if held { // next panicked: do not leak the permit
			b.endAdaptive(g, p, false)
		}
	}()
	resp, err := t.next.RoundTrip(req)
	held = false
	switch {
	case err != nil:
		b.endAdaptive(g, p, sampled(req, err))
		return nil, err
	case resp == nil:
		b.endAdaptive(g, p, false)
		return nil, errors.New("switchboard: round tripper returned neither a response nor an error")
	}
	c := &adaptiveCall{b: b, g: g, p: p, req: req}
	endAfterBody(resp, c.end) // an empty body ends the call now
	return resp, nil
}

// sampled reports whether a call that ended with err is a latency sample:
// only a timeout is (the deadline of a Timeout or AttemptTimeout layer, or
// a transport's own, such as response_header_timeout), as a call that
// took at least that long, which is how overload shows when latency grows
// past the deadlines. Every other error is dropped: a local rejection and
// a caller gone (its latency is unknown: the caller's own deadline may be
// as short as it likes), a permanent error, and a refused or reset
// connection, which fails fast and, recorded, would read as a healthy
// backend.
func sampled(req *http.Request, err error) bool {
	if Classify(req, nil, err) != OutcomeFailure {
		return false
	}
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// acquireAdaptive takes a permit for req from the serving limiter,
// waiting up to max_wait. A permit granted by a limiter that a reload
// retired meanwhile is given back and the wait goes on at the new one,
// with what is left of max_wait, so that every call in flight counts
// against the serving limiter (see updateAdaptiveLocked).
func (b *Bulkhead) acquireAdaptive(req *http.Request, ev *Events) (*adaptiveGen, adaptivelimiter.Permit, error) {
	ctx := req.Context()
	wait := time.Duration(b.wait.Load())
	start := time.Now()
	for {
		g := b.adaptive.Load()
		if g == nil { // Update switched to mode static meanwhile
			return nil, nil, nil
		}
		left := max(wait-time.Since(start), 0)
		p, err := g.lim.AcquirePermitWithMaxWait(ctx, left)
		switch {
		case errors.Is(err, adaptivelimiter.ErrExceeded):
			return nil, nil, b.rejected(req, ev, g.lim.Limit(), time.Since(start), nil)
		case err != nil:
			if waitRejected(ctx) { // no permit before the deadline: a rejection, not a backend failure
				return nil, nil, b.rejected(req, ev, g.lim.Limit(), time.Since(start), ctx.Err())
			}
			return nil, nil, fmt.Errorf("switchboard: waiting for a bulkhead slot: %w", ctx.Err())
		}
		if !g.retired.Load() {
			return g, p, nil
		}
		b.endAdaptive(g, p, false)
	}
}

// endAdaptive gives back p, a permit of g, with a sample or without; a
// call of a retired limiter also drops one proxy of the serving one.
func (b *Bulkhead) endAdaptive(g *adaptiveGen, p adaptivelimiter.Permit, sample bool) {
	if sample {
		p.Record()
	} else {
		p.Drop()
	}
	if !g.retired.Load() {
		b.limitMoved(g.lim.Limit()) // a retired limiter's moves serve no one
		return
	}
	b.mu.Lock()
	var proxy adaptivelimiter.Permit
	if cur := b.adaptive.Load(); cur != nil && len(cur.proxies) > 0 {
		proxy = cur.proxies[len(cur.proxies)-1]
		cur.proxies = cur.proxies[:len(cur.proxies)-1]
	}
	b.mu.Unlock()
	if proxy != nil {
		proxy.Drop()
	}
}
