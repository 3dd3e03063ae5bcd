package factory

import (
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-http/switchboard/middleware"
)

// DefaultDrainGrace is the drain grace period used when Options.DrainGrace
// is zero.
const DefaultDrainGrace = 30 * time.Second

// base wraps a client's base transport to know when it is idle, so that a
// transport retired by a reload can close its connections as soon as the
// last request that started on it is done (its response body closed or read
// to the end), and not before.
//
// The *http.Transport itself is built on the first request: a client that
// is configured but not called costs no transport (nor its HTTP/2 set-up),
// which was a third of what loading a config of many clients allocated.
// It is safe for concurrent use.
type base struct {
	build    func() *http.Transport // see newTransport
	mu       sync.Mutex             // serializes the build
	t        atomic.Pointer[http.Transport]
	inflight atomic.Int64
	doneFn   func() // done as a func value, made once for OnBodyEnd
	// maxAge is transport.max_conn_age in nanoseconds (0: forever); a
	// reload retunes it in place (see connage.go).
	maxAge atomic.Int64
	// drain is the drainer that retired the transport; nil while it serves.
	drain atomic.Pointer[drainer]
}

// newBase returns the base of the transport that build makes, closing
// connections older than maxAge (0: none) after their current request.
func newBase(build func() *http.Transport, maxAge time.Duration) *base {
	b := &base{build: build}
	b.doneFn = b.done
	b.maxAge.Store(int64(maxAge))
	return b
}

// RoundTrip counts the request in flight until its response body is done.
func (b *base) RoundTrip(req *http.Request) (*http.Response, error) {
	b.inflight.Add(1)
	if age := time.Duration(b.maxAge.Load()); age > 0 {
		req = closeIfOlder(req, age)
	}
	resp, err := b.transport().RoundTrip(req)
	// A 101 Switching Protocols response owns its connection, which has left
	// the transport's pool, and its body must stay an io.Writer: nothing to
	// track.
	if err != nil || resp == nil || resp.Body == nil || resp.Body == http.NoBody ||
		resp.StatusCode == http.StatusSwitchingProtocols {
		b.done()
		return resp, err
	}
	resp.Body = middleware.OnBodyEnd(resp.Body, b.doneFn)
	return resp, nil
}

// done ends one request; the last one on a retired transport drains it.
// A request that loaded the old generation just before a reload may start
// on a retired transport and end later: it calls done again, which closes
// the connection it used as well.
func (b *base) done() {
	if b.inflight.Add(-1) == 0 {
		if d := b.drain.Load(); d != nil {
			d.drained(b)
		}
	}
}

// transport returns the transport, built on the first call.
func (b *base) transport() *http.Transport {
	if t := b.t.Load(); t != nil {
		return t
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.t.Load(); t != nil {
		return t
	}
	t := b.build()
	wrapDial(t)
	b.t.Store(t)
	return t
}

// closeIdle closes the idle connections, if the transport has been built
// (a request that builds it later, on a retired base, ends with done, which
// closes them then). It also sets the transport's closeIdle flag, so that
// connections becoming idle later are closed instead of pooled, until a new
// request asks for a connection.
func (b *base) closeIdle() {
	if t := b.t.Load(); t != nil {
		t.CloseIdleConnections()
	}
}

// drainer closes the connections of the base transports that reloads
// retire. A retired transport with no request in flight has its idle
// connections closed at once; one with requests in flight is closed when
// the last of them ends, and at the latest when the grace period runs out:
// then CloseIdleConnections is called once more and a WARN is logged. A
// request still running at that point is not cut short: it finishes on its
// connection, which closes when it becomes idle (net/http's closeIdle flag,
// and done, which drains again when that request ends).
//
// Each transport waiting for its requests holds one timer, no goroutine;
// close stops them all and waits for an expiry that is running, so nothing
// outlives Registry.Close. A drainer is safe for concurrent use; its zero
// value is ready, with DefaultDrainGrace.
type drainer struct {
	grace time.Duration
	log   *slog.Logger

	mu     sync.Mutex
	timers map[*base]*time.Timer // retired transports with requests in flight
	closed bool
	wg     sync.WaitGroup // one per timer not yet stopped or run
}

// retire marks b, the base transport of client name, as replaced and
// drains it now or once its requests in flight have ended.
func (d *drainer) retire(b *base, name string) {
	if !b.drain.CompareAndSwap(nil, d) {
		return // retired already
	}
	if b.inflight.Load() == 0 {
		d.drained(b)
		return
	}
	grace := d.grace
	if grace <= 0 {
		grace = DefaultDrainGrace
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		b.closeIdle()
		return
	}
	if d.timers == nil {
		d.timers = map[*base]*time.Timer{}
	}
	if _, ok := d.timers[b]; !ok {
		d.wg.Add(1)
		d.timers[b] = time.AfterFunc(grace, func() { d.expire(b, name, grace) })
	}
	d.mu.Unlock()
	// The last request may have ended between the check above and the
	// timer's start, finding no timer to stop.
	if b.inflight.Load() == 0 {
		d.drained(b)
	}
}

// drained closes b's idle connections and stops its grace timer: the last
// request in flight on the retired b has ended.
func (d *drainer) drained(b *base) {
	b.closeIdle()
	d.mu.Lock()
	defer d.mu.Unlock()
	if t, ok := d.timers[b]; ok && t.Stop() {
		delete(d.timers, b)
		d.wg.Done()
	} // else: no timer, or it fired and expire removes it
}

// expire runs when b's grace period has passed with requests still in
// flight.
func (d *drainer) expire(b *base, name string, grace time.Duration) {
	defer d.wg.Done()
	d.mu.Lock()
	delete(d.timers, b)
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return // close has closed its idle connections
	}
	b.closeIdle()
	if n := b.inflight.Load(); n > 0 {
		log := d.log
		if log == nil {
			log = slog.Default()
		}
		log.Warn("retired transport still has requests in flight after the drain grace period; "+
			"their connections close when they end (an unclosed response body keeps one open)",
			"client", name, "in_flight", n, "grace", grace)
	}
}

// close stops every grace timer, closes the idle connections of every
// transport still draining, and waits for an expiry that is running.
// Transports retired later are closed at once. Idempotent.
func (d *drainer) close() {
	d.mu.Lock()
	d.closed = true
	timers := d.timers
	d.timers = nil
	d.mu.Unlock()
	for b, t := range timers {
		if t.Stop() {
			d.wg.Done()
		}
		b.closeIdle()
	}
	d.wg.Wait()
}
