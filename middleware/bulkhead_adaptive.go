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

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
)

// The adaptive mode of Bulkhead (BulkheadAdaptive) is failsafe-go's
// adaptivelimiter, used through its standalone API: a call takes a
// permit with AcquirePermitWithMaxWait, holds it until its response body
// ends, and gives it back with Record (a latency sample) or Drop (none).
// Not its policy executor (failsafe.With(limiter).Get): that gives the
// permit back when the function returns, while a call here holds it until
// its caller is done with the body, and records every return alike, while
// a call here is sampled or not by its outcome (see LatencySample).
// The limiter compares the p90 of the latencies of a recent window (it
// closes with at least 50 samples, after at least 1 s or twice the
// fastest sample, that minimum capped at 30 s: a client with fewer
// samples never closes one) with a slow moving baseline and
// lowers the limit while they grow, raises it while they do not; its
// state is guarded by its own lock, it starts no goroutine, and it reads
// time.Now and time.NewTimer, so that it runs inside testing/synctest.
//
// Its limits are fixed when it is built (WithLimits), so a reload that
// changes min_limit or max_limit builds a new limiter whose initial limit
// is the learned one, clamped to the new bounds: the limit is kept, the
// latency baseline is learned again. The calls in flight on the retired
// limiter still count against the new one. Each call is counted against
// exactly one limiter, at admission and under the Bulkhead's mu, where
// retirement happens too: a retirement moves its limiter's count into
// the run's carry (adaptiveCarry), and the new limiter holds a
// placeholder permit (taken with TryAcquirePermit, up to its limit) for
// each carried call; a carried call that ends lowers the carry and gives
// back a placeholder when more are held than the carry. A permit that a
// retired limiter grants after its retirement was never counted: it is
// dropped and the caller asks the serving limiter. A caller waiting on a
// limiter when it is retired moves its wait to the serving one (or to
// the static slots), with what is left of max_wait.

// adaptiveCarry counts the calls of one adaptive run (until a switch of
// mode) admitted by limiters since retired and still in flight; guarded
// by the Bulkhead's mu.
type adaptiveCarry struct{ calls int }

// adaptiveGen is one limiter of an adaptive Bulkhead. lo and hi are the
// bounds it was built with; retired is set, under the Bulkhead's mu, when
// a newer limiter (or mode static) takes its place, and gone is
// cancelled then, which moves its waiters on.
type adaptiveGen struct {
	lim     adaptivelimiter.AdaptiveLimiter[any]
	lo, hi  int
	retired atomic.Bool
	gone    context.Context
	cancel  context.CancelFunc

	// Guarded by the Bulkhead's mu: calls counts the calls this limiter
	// admitted that are still in flight (until it is retired); carry is
	// the run's; proxies are placeholders for the carried calls.
	calls   int
	carry   *adaptiveCarry
	proxies []adaptivelimiter.Permit
}

// retireLocked retires g: its count goes to the carry, its waiters move
// on. b.mu must be held; it returns g's placeholders, to be dropped once
// mu is released.
func (g *adaptiveGen) retireLocked() (drop []adaptivelimiter.Permit) {
	g.retired.Store(true)
	g.cancel()
	g.carry.calls += g.calls
	g.calls = 0
	drop, g.proxies = g.proxies, nil
	return drop
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
	g.gone, g.cancel = context.WithCancel(context.Background())
	g.lim = adaptivelimiter.NewBuilder[any]().
		WithLimits(uint(lo), uint(hi), uint(initial)).
		Build()
	return g
}

// updateAdaptiveLocked applies adaptive settings s. A first limiter (the
// bulkhead was static) starts at InitialLimit and reports from there; new
// bounds carry the learned limit, clamped, into a new limiter, which takes
// over the calls in flight; a change of InitialLimit or MaxWait alone
// keeps the limiter. b.mu must be held; it returns the placeholders of
// the retired limiter, to be dropped once mu is released, and the new
// limiter's limit when new bounds clamped it (0 otherwise), to be
// reported then.
func (b *Bulkhead) updateAdaptiveLocked(s BulkheadSettings) (drop []adaptivelimiter.Permit, clamped int) {
	lo, hi, initial := s.adaptiveLimits()
	old := b.adaptive.Load()
	if old == nil {
		b.reported.Store(int64(initial))
		g := b.newAdaptiveGen(lo, hi, initial)
		g.carry = &adaptiveCarry{}
		b.adaptive.Store(g)
		return nil, 0
	}
	if old.lo == lo && old.hi == hi {
		return nil, 0
	}
	drop = old.retireLocked()
	learned := old.lim.Limit()
	kept := min(max(learned, lo), hi)
	if kept != learned {
		clamped = kept
	}
	g := b.newAdaptiveGen(lo, hi, kept)
	g.carry = old.carry
	for range g.carry.calls {
		p, ok := g.lim.TryAcquirePermit()
		if !ok {
			break
		}
		g.proxies = append(g.proxies, p)
	}
	b.adaptive.Store(g)
	return drop, clamped
}

// limitMoved reports the serving limiter's limit after a change: an
// EventBulkheadLimitChanged when it moved by 10 % or more from the last
// reported value. endAdaptive calls it after a permit of the serving
// limiter was given back, Update after new bounds clamped the limit. The
// limit is read and compared under reportMu, so that of two calls ending
// at once the one that read an older limit cannot report it after the
// other reported a newer one (which left reported stale); the event is
// emitted after the lock, so an Observer that panics panics in that
// caller, as any other event's would, and one that calls through this
// bulkhead cannot deadlock on it.
func (b *Bulkhead) limitMoved() {
	b.reportMu.Lock()
	g := b.adaptive.Load()
	if g == nil {
		b.reportMu.Unlock()
		return
	}
	n := int64(g.lim.Limit())
	last := b.reported.Load()
	if diff := n - last; diff*diff*100 < last*last { // |n - last| < 10 % of last
		b.reportMu.Unlock()
		return
	}
	b.reported.Store(n)
	b.reportMu.Unlock()
	ctx := context.Background()
	if b.ev.on(ctx, slog.LevelInfo) {
		b.ev.Emit(ctx, slog.LevelInfo, Event{Name: EventBulkheadLimitChanged, OldLimit: int(last), NewLimit: int(n)})
	}
}

// adaptiveCall is one call holding a permit, and the wrapper of its
// response body (endBody, embedded): bodyEnded runs when the body ends.
// One allocation per call beside the limiter's permit, where a closure
// given to OnBodyEnd would cost two more.
type adaptiveCall struct {
	endBody
	b      *Bulkhead
	g      *adaptiveGen
	p      adaptivelimiter.Permit
	req    *http.Request // as passed below, with the marker
	resp   *http.Response
	waited atomic.Bool // the marker: set when the call waited below
	broken atomic.Bool // a read of the body failed (not io.EOF)
}

// Read is endBody's, noting a read that failed (not io.EOF): a body cut
// by a transport error is no latency sample, however fast it came.
func (c *adaptiveCall) Read(p []byte) (int, error) {
	n, err := c.rc.Read(p)
	if err != nil {
		if err != io.EOF {
			c.broken.Store(true)
		}
		c.finish()
	}
	return n, err
}

// bodyEnded gives the permit back once the body ended, a sample or not
// by LatencySample (and none when a read of the body failed).
func (c *adaptiveCall) bodyEnded() {
	c.b.endAdaptive(c.g, c.p, !c.broken.Load() && LatencySample(c.req, c.resp, nil))
}

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
	// The call's context carries the marker of local waits below (see
	// LatencySample), in the call's own allocation: next gets a
	// WithContext copy of req.
	c := &adaptiveCall{b: b, g: g, p: p}
	req = req.WithContext(context.WithValue(req.Context(), localWaitKey{}, &c.waited))
	c.req = req
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
		b.endAdaptive(g, p, LatencySample(req, nil, err)) // never a sample: see LatencySample
		return nil, err
	case resp == nil:
		b.endAdaptive(g, p, false)
		return nil, errors.New("switchboard: round tripper returned neither a response nor an error")
	}
	c.resp = resp
	switch body := resp.Body; body.(type) {
	case nil:
		c.bodyEnded() // nothing to read: the call ends now
	case io.ReadWriteCloser: // a 101's connection must stay an io.Writer
		endAfterBody(resp, c.bodyEnded)
	default:
		if body == http.NoBody {
			c.bodyEnded()
			break
		}
		c.rc, c.ender = body, c
		resp.Body = c
	}
	return resp, nil
}

// acquireAdaptive takes a permit for req from the serving limiter,
// waiting up to max_wait, and counts the call against that limiter. A
// nil limiter and error mean that the bulkhead is static now. A permit
// granted by a limiter retired meanwhile is dropped and the caller asks
// the serving one, and a wait on a limiter that is retired moves there,
// with what is left of max_wait (see updateAdaptiveLocked).
func (b *Bulkhead) acquireAdaptive(req *http.Request, ev *Events) (*adaptiveGen, adaptivelimiter.Permit, error) {
	ctx := req.Context()
	wait := time.Duration(b.wait.Load())
	start := time.Now()
	for {
		g := b.adaptive.Load()
		if g == nil { // Update switched to mode static meanwhile
			return nil, nil, nil
		}
		p, ok := g.lim.TryAcquirePermit()
		if !ok {
			left := max(wait-time.Since(start), 0)
			if left == 0 {
				return nil, nil, b.rejected(req, ev, g.lim.Limit(), time.Since(start), nil)
			}
			var err error
			p, err = g.waitPermit(ctx, left)
			switch {
			case err == nil:
			case ctx.Err() == nil && g.gone.Err() != nil: // retired while we waited: wait on at the serving one
				continue
			case errors.Is(err, adaptivelimiter.ErrExceeded):
				return nil, nil, b.rejected(req, ev, g.lim.Limit(), time.Since(start), nil)
			case waitRejected(ctx): // no permit before the deadline: a rejection, not a backend failure
				return nil, nil, b.rejected(req, ev, g.lim.Limit(), time.Since(start), ctx.Err())
			default:
				return nil, nil, fmt.Errorf("switchboard: waiting for a bulkhead slot: %w", ctx.Err())
			}
		}
		b.mu.Lock()
		counted := !g.retired.Load()
		if counted {
			g.calls++
		}
		b.mu.Unlock()
		if counted {
			return g, p, nil
		}
		p.Drop() // granted after the retirement, so never counted: ask the serving limiter
	}
}

// waitPermit waits up to left for a permit of g; the wait ends early,
// with g.gone's error, when g is retired. Only a caller that must wait
// pays for the link (a context and an AfterFunc registration).
func (g *adaptiveGen) waitPermit(ctx context.Context, left time.Duration) (adaptivelimiter.Permit, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(g.gone, cancel)
	defer stop()
	return g.lim.AcquirePermitWithMaxWait(wctx, left)
}

// endAdaptive gives back p, a permit of g, with a sample or without, and
// uncounts the call: from g while it serves, else from the carry, giving
// back a placeholder of the serving limiter when it holds more than the
// carry.
func (b *Bulkhead) endAdaptive(g *adaptiveGen, p adaptivelimiter.Permit, sample bool) {
	if sample {
		p.Record()
	} else {
		p.Drop()
	}
	var proxy adaptivelimiter.Permit
	b.mu.Lock()
	retired := g.retired.Load()
	if !retired {
		g.calls--
	} else {
		g.carry.calls--
		if cur := b.adaptive.Load(); cur != nil && cur.carry == g.carry && len(cur.proxies) > g.carry.calls {
			proxy = cur.proxies[len(cur.proxies)-1]
			cur.proxies = cur.proxies[:len(cur.proxies)-1]
		}
	}
	b.mu.Unlock()
	if proxy != nil {
		proxy.Drop()
	}
	if !retired {
		b.limitMoved() // a retired limiter's moves serve no one
	}
}
