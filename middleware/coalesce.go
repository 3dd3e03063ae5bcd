package middleware

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptrace"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/singleflight"
)

// CoalesceOptions are the code-only parts of the coalescing layer. The zero
// value emits no events and counts nothing.
type CoalesceOptions struct {
	// Events receives coalesce.joined, once per caller that joined a trip
	// already under way (Debug); its Logger also gets, at Error, a trip's
	// panic that came when every caller had gone.
	Events *Events
	// Joined, when not nil, counts the callers that joined a trip already
	// under way (one atomic add each): the factory's cumulative count for
	// Status, which outlives the layer across reloads.
	Joined *atomic.Uint64
}

// alwaysVary are part of every call's identity, whatever
// CoalesceSettings.VaryHeaders says. Authorization, Cookie and
// Proxy-Authorization say who asks (an http.Client's Jar adds cookies
// above every transport, so no vary list written for the layer would see
// them coming; a vary list written without Authorization would let two
// tokens share an answer): two users never share an answer by them. Range and the conditional headers change
// what the answer is (a 206 for a Range, a 304 or 412 for a condition),
// not only how it is shown, so that no caller gets an answer to a
// question it did not ask.
var alwaysVary = []string{"Authorization", "Cookie", "Proxy-Authorization", "Range", "If-Range", "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since"}

// Coalesce returns the middleware that lets concurrent identical calls
// share one trip through the layers below it, on
// golang.org/x/sync/singleflight's DoChan. It is meant to sit just inside
// the layers that shape a caller's request (BaseURL, code's Outer
// middleware) and outside the Router and the total Timeout, so that the
// retries, the breaker, the bulkhead and the rate limit see one call per
// trip.
//
// A call is coalesced when its method is one of s.Methods, it has no body
// (Body nil or http.NoBody, and ContentLength 0), it asks for no protocol
// upgrade (no Upgrade header), its context carries no httptrace.ClientTrace
// (whose hooks would run for one caller only, on the trip's goroutine, even
// after that caller returned) and, on a redirect hop, its chain back to the
// first request is intact (Redirects). Its identity is a SHA-256 digest of
// its method, URL (as resolved above: base_url), Host, the values of
// s.VaryHeaders and, always, of Authorization, Cookie, Proxy-Authorization,
// Range and the conditional headers (names matched case-insensitively), the
// URLs of the earlier hops of its redirect chain (the layers below decide
// credentials by them) and its Overrides; secret header values are in the
// digest only, never kept in clear. Every other call passes through
// untouched.
//
// Calls with the same identity while a trip is under way join it: the
// first caller's request, with its context's values but neither its
// deadline nor its cancellation (context.WithoutCancel), goes down once,
// on a goroutine of its own (DoChan runs the trip so, and the trip must
// outlive a first caller that leaves): one goroutine per coalesced trip,
// ending with it; calls that are not coalesced start none. The trip
// reads up to s.MaxBody+1 bytes of the answer. An answer within MaxBody
// is shared: each caller gets its own *http.Response, a copy with its own
// Header and Trailer (Clone), a body of its own over the shared bytes,
// and its own request as Request. An error, the same value, goes to every
// caller; a panic below is raised again in every caller's goroutine, as it
// would have been without coalescing (DoChan would crash the process), as
// an error that holds the value and the stack where it happened (Unwrap
// gives the value when it is an error); when every caller has gone, it is
// logged at Error to Options.Events' Logger instead.
//
// An answer larger than MaxBody is not shared: the first caller (or, if it
// left, the first caller to take the answer) gets it whole, the buffered bytes
// and then the rest of the stream, with the trip's own Trailer map (net/http
// fills it in at the end of the body), and its cancellation now ends that
// read; every other caller sends its own request below, uncoalesced. A
// body that failed while it was buffered is shared as such: each caller
// reads the bytes that came, then the error.
//
// A caller whose context ends stops waiting at once and gets its
// context's error (and its cause, context.Cause, when it has one),
// whoever it is, the first caller too; the trip goes on for the others;
// a caller whose context ended just as the answer came leaves too (a
// large answer's stream then goes to a caller still waiting). When the
// last caller leaves, the trip's context is cancelled (the layers below
// end it) and a new call starts a new trip. The total timeout below
// bounds every trip, from the trip's start: a caller that joins late
// inherits the trip's age and may get the timeout sooner than its own
// call alone would have.
//
// With s.Enabled false it returns its next RoundTripper itself: no
// goroutine, no change. The caller's request is never changed; the trip's
// request is a Request.Clone of the first caller's (its own Header and
// URL). It is safe
// for concurrent use.
func Coalesce(s CoalesceSettings, o CoalesceOptions) Middleware {
	if !s.Enabled {
		return identity
	}
	methods, vary := s.Methods, s.VaryHeaders
	if methods == nil {
		methods = DefaultCoalesceMethods()
	}
	if vary == nil {
		vary = DefaultCoalesceVaryHeaders()
	}
	keys := make([]string, 0, len(vary)+len(alwaysVary))
	for _, h := range append(slices.Clone(vary), alwaysVary...) {
		if k := http.CanonicalHeaderKey(h); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return func(next http.RoundTripper) http.RoundTripper {
		return &coalescer{
			next: next, methods: slices.Clone(methods), headers: keys,
			maxBody: min(max(s.MaxBody, 0), math.MaxInt64-1), // maxBody+1 is read
			ev:      o.Events, joined: o.Joined, trips: map[string]*trip{},
		}
	}
}

// coalescer is the layer Coalesce builds.
//
// singleflight serves the trip's goroutine and the fan-out of its result,
// but it has no count of the callers still waiting, which "the trip ends
// when every caller has gone" needs: trips keeps that count per key. mu
// guards trips and every trip's waiters and stream, and is held around
// each DoChan and Forget, so that trips[key] is t exactly while t's call
// is singleflight's call for key: a trip leaves both at once (Forget), when
// it ends or when its last caller leaves, and a later call starts afresh.
// (singleflight's own cleanup deletes its entry only while it is still the
// same call, so a Forget before it is safe.)
type coalescer struct {
	next    http.RoundTripper
	methods []string
	headers []string // canonical names of the identity headers
	maxBody int64
	ev      *Events
	joined  *atomic.Uint64

	g     singleflight.Group
	mu    sync.Mutex
	trips map[string]*trip
}

// trip is one shared trip through the layers below.
type trip struct {
	ctx    context.Context // the first caller's values; cancelled when the trip is over
	cancel context.CancelFunc

	// Guarded by coalescer.mu.
	waiters  int            // callers waiting for it
	leading  bool           // its first caller is among them
	stream   *http.Response // an answer over maxBody that no caller took yet
	taken    bool           // a caller took the stream: its reading, not the waiters, ends the trip
	panicked *coalescePanic // the trip's panic, once it ended so; nil if none
	raised   bool           // a caller raised panicked again
}

// shared is what a trip hands every caller: the answer (its Body unused)
// and the bytes read of its body, or a panic.
type shared struct {
	resp    *http.Response
	body    []byte
	err     error          // the trip's error; resp is nil then
	bodyErr error          // reading the body failed after body
	large   bool           // the body is over maxBody: resp.Body is the rest of the stream
	panic   *coalescePanic // a layer below panicked; nil if none
}

// coalescePanic is a panic below a coalesced trip, recovered on the
// trip's goroutine and raised again in each caller's, whose own stack
// does not show where it happened: it keeps the value and that stack, as
// singleflight's panicError does (Do's, which DoChan cannot give: it
// would crash the process). Error is the value and the stack; Unwrap is
// the value when it is an error.
type coalescePanic struct {
	value any
	stack []byte
}

func (p *coalescePanic) Error() string { return fmt.Sprintf("%v\n\n%s", p.value, p.stack) }

func (p *coalescePanic) Unwrap() error {
	err, _ := p.value.(error)
	return err
}

func (c *coalescer) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	key, ok := c.identity(req)
	if !ok || ctx.Err() != nil { // a caller already gone starts no trip
		return c.next.RoundTrip(req)
	}
	c.mu.Lock()
	t := c.trips[key]
	joined := t != nil
	if !joined {
		tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		t = &trip{ctx: tctx, cancel: cancel, leading: true}
		c.trips[key] = t
	}
	t.waiters++
	// DoChan runs fn only when no call for key is under way, which is
	// exactly when t is new (see coalescer). The trip gets a deep copy
	// (Clone), made here, before this caller can return: a first caller
	// that leaves owns its request again and may change its Header or URL
	// while the layers below still read the trip's (made in fn, on the
	// trip's goroutine, the copy itself would race with that change, and
	// could carry credentials other than those the identity was made of).
	var treq *http.Request
	if !joined {
		treq = req.Clone(t.ctx)
	}
	ch := c.g.DoChan(key, func() (any, error) { return c.run(key, t, treq), nil })
	c.mu.Unlock()
	if joined {
		c.join(req)
	}
	select {
	case res := <-ch:
		sh := res.Val.(*shared)
		if ctx.Err() == nil {
			return c.deliver(req, t, !joined, sh)
		}
		// Gone just as the answer came (select picks either): this
		// caller leaves as if it had been first, so that a large answer's
		// stream goes to a caller still waiting, or is closed, and a panic
		// is raised by a caller still waiting, or logged.
		c.leave(key, t, !joined)
		return nil, waitErr(ctx)
	case <-ctx.Done():
		c.leave(key, t, !joined)
		return nil, waitErr(ctx)
	}
}

// waitErr is the error of a caller whose context ended while it waited:
// the context's error and, when it ended with a cause of its own
// (context.WithCancelCause, WithTimeoutCause), that cause, both wrapped.
func waitErr(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause == err {
		return fmt.Errorf("switchboard: waiting for a coalesced call: %w", err)
	}
	return fmt.Errorf("switchboard: waiting for a coalesced call: %w: %w", err, cause)
}

// identity returns the digest that names req's call, and false when req is
// not to be coalesced (see Coalesce).
func (c *coalescer) identity(req *http.Request) (string, bool) {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	if !slices.Contains(c.methods, method) || req.URL == nil ||
		(req.Body != nil && req.Body != http.NoBody) || req.ContentLength != 0 || callerHas(req.Header, "Upgrade") {
		return "", false
	}
	// A caller's httptrace.ClientTrace would travel with the trip's
	// context values: its hooks would run on the trip's goroutine after
	// that caller returned, and the others' would never run.
	if httptrace.ContextClientTrace(req.Context()) != nil {
		return "", false
	}
	// Every part goes in with its length, so no two different calls write
	// the same bytes; the buffer, which may hold credentials, is cleared
	// once hashed.
	b := make([]byte, 0, 256)
	field := func(s string) { b = append(binary.AppendUvarint(b, uint64(len(s))), s...) }
	field(method)
	field(req.URL.String())
	field(req.Host)
	// A header set under a name that is not canonical (Header["cookie"])
	// is sent as well: its values count under the canonical name, in the
	// order of the names (the map's order is random).
	var odd []string
	for k := range req.Header {
		if http.CanonicalHeaderKey(k) != k {
			odd = append(odd, k)
		}
	}
	slices.Sort(odd)
	for _, h := range c.headers {
		vs := req.Header[h]
		for _, k := range odd {
			if http.CanonicalHeaderKey(k) == h {
				vs = append(slices.Clip(vs), req.Header[k]...)
			}
		}
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, v := range vs {
			field(v)
		}
	}
	if _, _, ok := walkRedirects(req, func(r *http.Request) {
		field(r.Method)
		field(r.URL.String())
	}); !ok {
		clear(b)
		return "", false
	}
	if ov, ok := OverridesFrom(req.Context()); ok {
		field(fmt.Sprint(deref(ov.MaxRetries), deref(ov.AttemptTimeout), deref(ov.Timeout)))
	}
	sum := sha256.Sum256(b)
	clear(b)
	return string(sum[:]), true
}

// deref returns *p as text, or "-" for nil.
func deref[T any](p *T) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

// join counts and reports a caller that joined a trip under way.
func (c *coalescer) join(req *http.Request) {
	if c.joined != nil {
		c.joined.Add(1)
	}
	if c.ev.on(req.Context(), slog.LevelDebug) {
		c.ev.Emit(req.Context(), slog.LevelDebug, Event{
			Name: EventCoalesceJoined, Method: req.Method, URL: RedactURL(req.URL), Host: hostOf(req),
		})
	}
}

// run is the trip, on DoChan's goroutine: req goes down once and the
// answer's body is buffered up to maxBody+1 bytes. A panic below is
// recovered into the result (DoChan would re-raise it where no caller can
// recover it); a runtime.Goexit below is not supported (singleflight then
// sends no result, and the callers wait until their contexts end).
func (c *coalescer) run(key string, t *trip, req *http.Request) (sh *shared) {
	sh = &shared{}
	defer c.finish(key, t, sh)
	defer func() {
		if v := recover(); v != nil {
			if sh.resp != nil {
				sh.resp.Body.Close()
			}
			*sh = shared{panic: &coalescePanic{value: v, stack: debug.Stack()}}
		}
	}()
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		// The error travels in shared, not as DoChan's error, so that
		// deliver reads one value.
		sh.err = err
		return sh
	}
	sh.resp = resp
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, c.maxBody+1))
	if int64(len(body)) > c.maxBody {
		sh.body, sh.large = body, true
		return sh
	}
	resp.Body.Close()
	sh.body, sh.bodyErr = body, rerr
	return sh
}

// finish ends t's part in the trip table, and its context unless a caller
// still needs the stream of a large answer.
func (c *coalescer) finish(key string, t *trip, sh *shared) {
	c.mu.Lock()
	if c.trips[key] == t {
		delete(c.trips, key)
		c.g.Forget(key)
	}
	keep := sh.large && t.waiters > 0
	if keep {
		t.stream = sh.resp
	}
	t.panicked = sh.panic
	lost := sh.panic != nil && t.waiters == 0
	c.mu.Unlock()
	if lost {
		c.logPanic(t.ctx, sh.panic)
	}
	if sh.large && !keep {
		sh.resp.Body.Close()
	}
	if !keep {
		t.cancel()
	}
}

// leave is a caller giving up its wait; the last one ends the trip: no
// new caller joins it, its context is cancelled, and the stream of a large
// answer that nobody took is closed.
func (c *coalescer) leave(key string, t *trip, lead bool) {
	c.mu.Lock()
	t.waiters--
	if lead {
		t.leading = false
	}
	last := t.waiters == 0
	var stream *http.Response
	var lost *coalescePanic
	if last {
		if c.trips[key] == t {
			delete(c.trips, key)
			c.g.Forget(key)
		}
		stream, t.stream = t.stream, nil
		if !t.raised {
			lost = t.panicked
		}
	}
	// A caller reading the stream ends the trip itself (closing its body,
	// or its own cancellation): the last waiter to leave must not cut
	// that read.
	end := last && !t.taken
	c.mu.Unlock()
	if stream != nil {
		stream.Body.Close()
	}
	if lost != nil {
		c.logPanic(t.ctx, lost)
	}
	if end {
		t.cancel()
	}
}

// deliver gives req's caller (the trip's first one when lead) its own
// copy of the trip's result. The stream of a large answer goes to the
// first caller, or, once it left, to the first caller that takes it.
func (c *coalescer) deliver(req *http.Request, t *trip, lead bool, sh *shared) (*http.Response, error) {
	c.mu.Lock()
	t.waiters--
	var stream *http.Response
	if sh.large && (lead || !t.leading) {
		stream, t.stream = t.stream, nil
		if stream != nil {
			t.taken = true
		}
	}
	if lead {
		t.leading = false
	}
	if sh.panic != nil {
		t.raised = true
	}
	c.mu.Unlock()
	switch {
	case sh.panic != nil:
		panic(sh.panic)
	case sh.err != nil:
		return nil, sh.err
	case sh.large && stream == nil:
		// Another caller has the answer; this one asks on its own.
		return c.next.RoundTrip(req)
	}
	r := new(http.Response)
	*r = *sh.resp
	r.Header = sh.resp.Header.Clone()
	r.Trailer = sh.resp.Trailer.Clone()
	if stream != nil {
		// net/http fills the trailers into the trip's response's own map
		// at the end of its body, which this caller reads: a copy made
		// now would stay empty. The whole answer is this caller's.
		r.Trailer = sh.resp.Trailer
	}
	r.TransferEncoding = slices.Clone(sh.resp.TransferEncoding)
	r.Request = withCallStart(req, sh.resp.Request)
	switch {
	case stream != nil:
		// The whole answer, and the trip's context, are this caller's
		// now: its cancellation ends the read, closing the body ends the
		// trip.
		stop := context.AfterFunc(req.Context(), t.cancel)
		r.Body = &streamBody{Reader: io.MultiReader(bytes.NewReader(sh.body), stream.Body), rc: stream.Body, end: func() { stop(); t.cancel() }}
	case sh.bodyErr != nil:
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(sh.body), errReader{sh.bodyErr}))
	case len(sh.body) == 0:
		r.Body = http.NoBody
	default:
		r.Body = io.NopCloser(bytes.NewReader(sh.body))
	}
	return r, nil
}

// streamBody is the body of a large answer: the buffered bytes, then the
// rest of the stream; Close closes the stream and ends the trip.
type streamBody struct {
	io.Reader
	rc   io.Closer
	once sync.Once
	end  func()
}

func (b *streamBody) Close() error {
	err := b.rc.Close()
	b.once.Do(b.end)
	return err
}

// logPanic logs, at Error, a trip's panic that no caller is left to
// raise again: every caller had gone when it came. It is not an event
// (logging.events does not filter it): like a panic, it is never routine.
func (c *coalescer) logPanic(ctx context.Context, p *coalescePanic) {
	if c.ev == nil || c.ev.Logger == nil || !c.ev.Logger.Enabled(ctx, slog.LevelError) {
		return
	}
	c.ev.Logger.LogAttrs(ctx, slog.LevelError, "switchboard: a coalesced trip panicked after every caller had gone",
		slog.String("client", c.ev.Client), slog.String("panic", fmt.Sprint(p.value)), slog.String("stack", string(p.stack)))
}

// errReader fails every read with err.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
