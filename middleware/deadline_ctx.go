package middleware

import (
	"context"
	"sync"
	"time"
)

// deadlineCtx is the context of a call or attempt that a timeout layer put
// a deadline on. It does what context.WithDeadline's context does, in fewer
// steps: it lives inside the layer's per-call state (no allocation of its
// own), reads the clock once rather than three times, and needs no cancel
// closure; of context.WithTimeout's cost (four allocations, about 700 ns
// here) it keeps the timer and the closure the timer calls.
//
// It is done when its deadline passes (Err: context.DeadlineExceeded), when
// the parent is done (the parent's Err), or when the layer cancels it
// because the call is over (context.Canceled). Contexts derived from it are
// told through the AfterFunc method, which the context package looks for,
// so no goroutine is started for them — but only for contexts derived from
// it directly, or through wrappers that forward AfterFunc (the retry
// layer's attemptCtx): a context.WithValue in between hides the method, and
// the context package then starts a goroutine per cancelable context
// derived below it. The factory therefore uses it only for clients without
// Hooks.Attempt (TimeoutOptions.StdContext). context.Cause of it is its Err
// unless an ancestor of the standard library was cancelled with a cause:
// the layers read ownFired, not Cause, to tell their deadline from the
// caller's.
type deadlineCtx struct {
	parent   context.Context // set before c is shared, then read-only
	deadline time.Time       // likewise

	mu    sync.Mutex
	timer *time.Timer // nil once c has ended
	// stopParent unregisters from the parent's cancellation; nil when the
	// parent cannot be cancelled, and once c has ended.
	stopParent func() bool
	done       chan struct{} // made by the first Done, or closedDone
	err        error
	own        bool       // err is this context's own deadline
	afters     *afterFunc // registered by AfterFunc, newest first
}

// afterFunc is one function registered with deadlineCtx.AfterFunc, in the
// context's list.
type afterFunc struct {
	c    *deadlineCtx
	f    func()
	next *afterFunc
}

// closedDone is the Done channel of a context that ended before anyone
// asked for its channel.
var closedDone = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// start arms c: done at now+d, or when parent is.
// Either may end c before start has stored what undoes them, so each is
// stored under mu only if c is still running, and undone at once if not.
func (c *deadlineCtx) start(parent context.Context, now time.Time, d time.Duration) {
	c.parent = parent
	c.deadline = now.Add(d)
	if parent.Done() != nil {
		if err := parent.Err(); err != nil {
			c.cancel(err, false)
			return
		}
		stop := context.AfterFunc(parent, func() { c.cancel(parent.Err(), false) })
		if !c.keep(func() { c.stopParent = stop }) {
			stop()
			return
		}
	}
	t := time.AfterFunc(d, c.expire)
	if !c.keep(func() { c.timer = t }) {
		t.Stop()
	}
}

// keep runs set under mu if c has not ended, and reports whether it did.
func (c *deadlineCtx) keep(set func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return false
	}
	set()
	return true
}

// expire is the timer's function. A parent that ended first, whose own
// notice has not arrived yet, decides the error, as with the standard
// library's contexts; the deadline is c's own only if the parent was alive
// when it passed, and stays so whatever the parent does later.
func (c *deadlineCtx) expire() {
	if err := c.parent.Err(); err != nil {
		c.cancel(err, false)
		return
	}
	c.cancel(context.DeadlineExceeded, true)
}

// stop ends c because its call is over: its timer and its registration
// with the parent are released, and what derives from it is cancelled.
func (c *deadlineCtx) stop() { c.cancel(context.Canceled, false) }

// cancel ends c with err, once; own says the deadline passed.
func (c *deadlineCtx) cancel(err error, own bool) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err, c.own = err, own
	if c.done == nil {
		c.done = closedDone
	} else {
		close(c.done)
	}
	afters, timer, stopParent := c.afters, c.timer, c.stopParent
	c.afters, c.timer, c.stopParent = nil, nil, nil
	c.mu.Unlock()
	if timer != nil && !own {
		timer.Stop()
	}
	if stopParent != nil {
		stopParent()
	}
	for a := afters; a != nil; a = a.next {
		a.f()
	}
}

// ownFired reports whether c ended because its deadline passed while the
// parent was still alive.
func (c *deadlineCtx) ownFired() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.own
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *deadlineCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
	}
	return c.done
}

func (c *deadlineCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// deadlineCtxKey makes a deadlineCtx findable through the contexts derived
// from it.
type deadlineCtxKey struct{}

func (c *deadlineCtx) Value(key any) any {
	if key == (deadlineCtxKey{}) {
		return c
	}
	return c.parent.Value(key)
}

// AfterFunc arranges for f to be called once c is done, and returns a
// function that unregisters it (true if it did, before f ran). The context
// package calls it to cancel the contexts derived from c; f runs on the
// goroutine that ends c and must not block, as the context package's own
// functions do not.
func (c *deadlineCtx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		// The context package checks Done before it registers, holding a
		// lock that f takes: only a context that ended in between gets
		// here, and f must not run on this goroutine.
		go f()
		return func() bool { return false }
	}
	a := &afterFunc{c: c, f: f, next: c.afters}
	c.afters = a
	return a.stop
}

// stop unregisters a; true if it was registered and has not run.
func (a *afterFunc) stop() bool {
	c := a.c
	c.mu.Lock()
	defer c.mu.Unlock()
	for p := &c.afters; *p != nil; p = &(*p).next {
		if *p == a {
			*p = a.next
			return true
		}
	}
	return false
}

func (c *deadlineCtx) String() string { return "switchboard.deadlineCtx" }

// ownDeadlineFired reports whether ctx ended because the deadline of a
// timeout layer passed (not because the caller's context ended): that of
// the nearest layer's own context ctx derives from, else that of a
// standard one (TimeoutOptions.StdContext), told by its cause.
func ownDeadlineFired(ctx context.Context) bool {
	if c, ok := ctx.Value(deadlineCtxKey{}).(*deadlineCtx); ok && c.ownFired() {
		return true
	}
	return context.Cause(ctx) == errDeadlineCause
}
