package middleware

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
)

// ErrBulkheadFull is the error of a call that a Bulkhead turned away because
// all its slots stayed taken for MaxWait, or until a deadline ended the
// wait. Match it with errors.Is; it is found through the *url.Error that
// http.Client wraps around it.
var ErrBulkheadFull = errors.New("bulkhead is full")

// Bulkhead bounds how many logical calls of a client are in flight at once.
// A call holds one slot from the moment it is admitted until its RoundTrip
// returns an error or, when it returns a response, until the response body
// is closed or read to its end (io.EOF or any other read error). A caller
// that finds every slot taken waits up to BulkheadSettings.MaxWait for one
// (not at all when MaxWait is zero) and then gets an error matching
// ErrBulkheadFull. Its wait ends early when the request context ends: a
// deadline (the caller's or the Timeout layer's) gives an error matching
// both ErrBulkheadFull and context.DeadlineExceeded, and emits the
// rejection event, since no slot came in time (a local rejection, never
// a backend failure; see Classify); a cancellation gives an error matching
// the context's error alone (the caller is gone). Waiters are admitted in
// arrival order.
//
// In mode adaptive (BulkheadSettings.Mode BulkheadAdaptive) the limit is
// not MaxConcurrent but learned from the calls' latencies, within
// [MinLimit, MaxLimit] from InitialLimit, by failsafe-go's adaptivelimiter
// (see bulkhead_adaptive.go): a call holds a permit of the limiter as it
// would a slot, and gives it back with a latency sample (the time it held
// it) when LatencySample says so, the backend having served it, and
// without one otherwise (a status >= 500, a transport error or timeout, a
// local rejection, a caller gone). A change of the limit by 10 % or more from the
// last one reported emits EventBulkheadLimitChanged.
//
// In mode static, a MaxConcurrent of zero means unlimited: the layer
// passes requests through without counting them, at the cost of two
// atomic loads. Calls admitted while the bulkhead is unlimited therefore
// do not count against a limit set later by Update, and InUse does not
// report them.
//
// The settings can be retuned with Update while calls are in flight; the
// slots in use are kept, and in mode adaptive the learned limit too. A
// Bulkhead is created with NewBulkhead (the zero value is not usable) and
// is safe for concurrent use.
type Bulkhead struct {
	ev        *Events
	unlimited atomic.Bool // mirrors limit <= 0 for the lock-free fast path

	// A call takes a slot with a compare-and-swap on inUse, without mu,
	// while no one waits; waiting callers queue under mu. waiting counts
	// the callers in the queue or about to check for a slot before joining
	// it: a release that sees it zero has no one to hand its slot to, and
	// one that does not takes mu to grant (see acquire for why no wake-up
	// is lost).
	limit   atomic.Int64 // written under mu; <= 0 means unlimited
	inUse   atomic.Int64 // slots held, including granted waiters
	waiting atomic.Int64 // written under mu

	// releaseFn is release as a func value, made once for OnBodyEnd.
	releaseFn func()

	// adaptive is the serving limiter in mode adaptive, nil in mode
	// static; written under mu. reported is the limit last reported by
	// an event (limitMoved); wait is MaxWait, for the adaptive path.
	adaptive atomic.Pointer[adaptiveGen]
	reported atomic.Int64
	reportMu sync.Mutex // orders limitMoved's read of the limit and reported
	wait     atomic.Int64

	mu      sync.Mutex
	maxWait time.Duration // guarded by mu
	head    *bulkheadWaiter
	tail    *bulkheadWaiter
}

// bulkheadWaiter is one caller waiting for a slot; it sits in the Bulkhead's
// FIFO list while it waits. All its fields but ready are guarded by the
// Bulkhead's mu.
type bulkheadWaiter struct {
	ready      chan struct{} // closed when the waiter is granted a slot
	granted    bool
	prev, next *bulkheadWaiter
}

// BulkheadOptions are the code-only options of NewBulkhead. The zero value
// emits no events. NewBulkhead copies it.
type BulkheadOptions struct {
	// Events receives EventBulkheadRejected at slog.LevelWarn for every call
	// turned away, and EventBulkheadLimitChanged at slog.LevelInfo in mode
	// adaptive; nil means no events.
	Events *Events
}

// NewBulkhead returns a Bulkhead with the settings s; the zero
// BulkheadSettings make it unlimited. The Bulkhead is safe for concurrent
// use.
func NewBulkhead(s BulkheadSettings, o BulkheadOptions) *Bulkhead {
	b := &Bulkhead{ev: o.Events}
	b.releaseFn = b.release
	b.Update(s)
	return b
}

// Update retunes the bulkhead in place. Slots in use stay in use. Raising
// MaxConcurrent (or setting it to zero, unlimited) admits waiters at once, up
// to the new limit; lowering it lets the calls in flight finish and admits new
// ones only once fewer than the new limit are in flight. A new MaxWait
// applies to callers that start waiting after Update; those already waiting
// keep theirs.
//
// In mode adaptive, new MinLimit or MaxLimit keep the learned limit,
// clamped to the new bounds (the limiter's latency baseline is learned
// again; a clamp that moves it by 10 % or more is reported as any other
// change), the calls in flight keep counting against the limit, and
// callers waiting on the old limiter wait on at the new one (or for the
// static slots after a switch to mode static) at once; a new
// InitialLimit alone changes nothing until the mode is switched. A change
// of Mode starts afresh: into adaptive at InitialLimit, into static at
// MaxConcurrent, and the calls in flight no longer count. It is safe for
// concurrent use.
func (b *Bulkhead) Update(s BulkheadSettings) {
	var drop []adaptivelimiter.Permit
	var clamped int
	b.mu.Lock()
	b.maxWait = s.MaxWait
	b.wait.Store(int64(s.MaxWait))
	if s.Mode == BulkheadAdaptive {
		drop, clamped = b.updateAdaptiveLocked(s)
		b.limit.Store(0) // static waiters, if any, go on: the mode changed
		b.unlimited.Store(false)
	} else {
		if old := b.adaptive.Load(); old != nil {
			drop = old.retireLocked() // its waiters move to the static slots
			b.adaptive.Store(nil)
		}
		b.limit.Store(int64(s.MaxConcurrent))
		b.unlimited.Store(s.MaxConcurrent <= 0)
	}
	b.grantLocked()
	b.mu.Unlock()
	for _, p := range drop {
		p.Drop()
	}
	if clamped > 0 {
		b.limitMoved()
	}
}

// Mode returns BulkheadAdaptive while the bulkhead learns its limit,
// BulkheadStatic otherwise. It is safe for concurrent use.
func (b *Bulkhead) Mode() BulkheadMode {
	if b.adaptive.Load() != nil {
		return BulkheadAdaptive
	}
	return BulkheadStatic
}

// InUse returns how many slots are held now: calls in flight and waiters just
// granted a slot. Calls admitted while the bulkhead was unlimited are not
// counted. In mode adaptive it is the limiter's permits in flight. It is
// safe for concurrent use.
func (b *Bulkhead) InUse() int {
	if g := b.adaptive.Load(); g != nil {
		return g.lim.Inflight()
	}
	return int(b.inUse.Load())
}

// Limit returns the current MaxConcurrent, zero meaning unlimited; in mode
// adaptive, the learned limit (never zero). It is safe for concurrent use.
func (b *Bulkhead) Limit() int {
	if g := b.adaptive.Load(); g != nil {
		return g.lim.Limit()
	}
	return int(max(b.limit.Load(), 0))
}

// Middleware returns the bulkhead layer: one slot per logical call, so it
// sits outside Retry. Every RoundTripper it returns shares b's slots and is
// safe for concurrent use.
//
// It keeps the RoundTripper contract: it passes the caller's request on
// unchanged (in mode adaptive, a Request.WithContext copy whose context
// carries the marker of local waits that LatencySample reads), closes the request body when it rejects a request without
// passing it on, and returns a response or an error, never both nil. The
// response body is wrapped so that closing it (or reading it to its end)
// frees the slot, exactly once; a body that is also an io.Writer (a 101
// Switching Protocols response) stays one.
func (b *Bulkhead) Middleware() Middleware { return b.MiddlewareFor(b.ev) }

// MiddlewareFor is Middleware for one of several clients that share the
// bulkhead (a bulkhead.group): the layer's events go to ev, which names the
// client and the group, instead of the bulkhead's own. Its slots are the
// bulkhead's, shared by every layer made from it. A nil ev emits nothing.
func (b *Bulkhead) MiddlewareFor(ev *Events) Middleware {
	return func(next http.RoundTripper) http.RoundTripper {
		return &bulkheadRT{b: b, next: next, ev: ev}
	}
}

// bulkheadRT is the RoundTripper of Bulkhead.Middleware.
type bulkheadRT struct {
	b    *Bulkhead
	next http.RoundTripper
	ev   *Events
}

func (t *bulkheadRT) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.b.adaptive.Load() != nil {
		return t.roundTripAdaptive(req)
	}
	return t.roundTripStatic(req)
}

// roundTripStatic is RoundTrip in mode static.
func (t *bulkheadRT) roundTripStatic(req *http.Request) (*http.Response, error) {
	b := t.b
	if b.unlimited.Load() {
		return t.next.RoundTrip(req)
	}
	if err := b.acquire(req, t.ev); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	held := true
	defer func() {
		if held { // next panicked: do not leak the slot
			b.release()
		}
	}()
	resp, err := t.next.RoundTrip(req)
	switch {
	case err != nil:
		held = false
		b.release()
		return nil, err
	case resp == nil:
		held = false
		b.release()
		return nil, errors.New("switchboard: round tripper returned neither a response nor an error")
	}
	held = false
	endAfterBody(resp, b.releaseFn) // an empty body frees the slot now
	return resp, nil
}

// acquire takes a slot for req, waiting for one if the settings allow. A nil
// error means the caller holds a slot and must release it.
//
// While no one waits, a free slot is taken without mu. Otherwise the caller
// counts itself in waiting before it looks for a slot under mu, and a
// release gives its slot back before it reads waiting: of two such
// sequences, at least one sees the other's write, so either the caller
// finds the slot or the release sees the caller and grants under mu once
// the caller has queued.
func (b *Bulkhead) acquire(req *http.Request, ev *Events) error {
	if b.waiting.Load() == 0 && b.tryTake() {
		return nil
	}
	b.mu.Lock()
	b.waiting.Add(1)
	if b.head == nil && b.tryTake() { // no one queued ahead
		b.waiting.Add(-1)
		b.mu.Unlock()
		return nil
	}
	limit, wait := b.limit.Load(), b.maxWait
	if wait <= 0 {
		b.waiting.Add(-1)
		b.mu.Unlock()
		return b.rejected(req, ev, int(limit), 0, nil)
	}
	w := &bulkheadWaiter{ready: make(chan struct{})}
	b.pushLocked(w)
	b.mu.Unlock()

	ctx := req.Context()
	start := time.Now()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-w.ready:
		return nil
	case <-timer.C:
		if b.abandon(w) {
			return nil // granted as the timer fired: use the slot
		}
		return b.rejected(req, ev, int(limit), wait, nil)
	case <-ctx.Done():
		if b.abandon(w) {
			b.release()
		}
		if waitRejected(ctx) { // no slot before the deadline: a rejection, not a backend failure
			return b.rejected(req, ev, int(limit), time.Since(start), ctx.Err())
		}
		return fmt.Errorf("switchboard: waiting for a bulkhead slot: %w", ctx.Err())
	}
}

// rejected builds the ErrBulkheadFull error and emits the event; cut is
// the context's error when a deadline ended the wait (the error then
// matches it too), nil when max_wait did.
func (b *Bulkhead) rejected(req *http.Request, ev *Events, limit int, waited time.Duration, cut error) error {
	var err error
	if cut != nil {
		err = fmt.Errorf("switchboard: %w (%s %d, waited %v): a deadline ended the wait: %w", ErrBulkheadFull, b.limitName(), limit, waited, cut)
	} else {
		err = fmt.Errorf("switchboard: %w (%s %d, waited %v)", ErrBulkheadFull, b.limitName(), limit, waited)
	}
	if ctx := req.Context(); ev.on(ctx, slog.LevelWarn) {
		ev.Emit(ctx, slog.LevelWarn, Event{
			Name:   EventBulkheadRejected,
			Method: req.Method,
			URL:    RedactURL(req.URL),
			Host:   hostOf(req),
			Delay:  waited,
			Err:    err,
		})
	}
	return err
}

// limitName names the limit in a rejection's error: the key in mode
// static, "adaptive limit" in mode adaptive.
func (b *Bulkhead) limitName() string {
	if b.adaptive.Load() != nil {
		return "adaptive limit"
	}
	return "max_concurrent"
}

// abandon takes w out of the queue after its wait ended without it seeing
// the grant. It reports whether w was granted a slot meanwhile, in which
// case the caller holds that slot.
func (b *Bulkhead) abandon(w *bulkheadWaiter) (granted bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if w.granted {
		return true
	}
	b.removeLocked(w)
	b.waiting.Add(-1)
	return false
}

// tryTake takes a free slot, if there is one.
func (b *Bulkhead) tryTake() bool {
	for {
		n, limit := b.inUse.Load(), b.limit.Load()
		if limit > 0 && n >= limit {
			return false
		}
		if b.inUse.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release frees one slot and hands it to the first waiter, if any.
func (b *Bulkhead) release() {
	b.inUse.Add(-1)
	if b.waiting.Load() > 0 {
		b.mu.Lock()
		b.grantLocked()
		b.mu.Unlock()
	}
}

// grantLocked admits waiters, oldest first, while the limit allows. b.mu
// must be held.
func (b *Bulkhead) grantLocked() {
	for b.head != nil && b.tryTake() {
		w := b.head
		b.removeLocked(w)
		w.granted = true
		b.waiting.Add(-1)
		close(w.ready)
	}
}

// pushLocked appends w to the waiter list. b.mu must be held.
func (b *Bulkhead) pushLocked(w *bulkheadWaiter) {
	w.prev = b.tail
	if b.tail != nil {
		b.tail.next = w
	} else {
		b.head = w
	}
	b.tail = w
}

// removeLocked unlinks w from the waiter list. b.mu must be held.
func (b *Bulkhead) removeLocked(w *bulkheadWaiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		b.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		b.tail = w.prev
	}
	w.prev, w.next = nil, nil
}
