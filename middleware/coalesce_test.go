package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/internal/logcapture"
	"github.com/switchboard-http/switchboard/middleware"
)

// coalesceOn is the built-in coalesce settings, switched on.
func coalesceOn() middleware.CoalesceSettings {
	s := middleware.DefaultCoalesceSettings()
	s.Enabled = true
	return s
}

// coalesceRig is a Coalesce layer over next with its events and count.
type coalesceRig struct {
	rt     http.RoundTripper
	rec    *recorder
	joined *atomic.Uint64
}

func newCoalesce(s middleware.CoalesceSettings, next http.RoundTripper) coalesceRig {
	ev, rec := newEvents()
	n := new(atomic.Uint64)
	return coalesceRig{rt: middleware.Coalesce(s, middleware.CoalesceOptions{Events: ev, Joined: n})(next), rec: rec, joined: n}
}

// outcome is what one caller got, and when.
type outcome struct {
	resp *http.Response
	err  error
	at   time.Duration // since the callers started
}

// callAll sends every request through rt, each on its own goroutine,
// within a synctest bubble: the first one first (it leads the trip), the
// others once it waits, all at the same instant of the bubble's clock; it
// returns what each got once all returned.
func callAll(rt http.RoundTripper, reqs ...*http.Request) []outcome {
	out := make([]outcome, len(reqs))
	start := time.Now()
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Go(func() {
			resp, err := rt.RoundTrip(r)
			out[i] = outcome{resp, err, time.Since(start)}
		})
		if i == 0 {
			synctest.Wait()
		}
	}
	wg.Wait()
	return out
}

// gets returns n GET requests to the same URL with ctx.
func gets(t *testing.T, ctx context.Context, n int) []*http.Request {
	reqs := make([]*http.Request, n)
	for i := range reqs {
		reqs[i] = newReq(t, ctx, "GET", "")
	}
	return reqs
}

func TestCoalesceSharesOneTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		backend := fakert.New(fakert.Step{Delay: time.Second, Body: "hello", Header: http.Header{"X-Id": {"1"}}})
		c := newCoalesce(coalesceOn(), backend)
		reqs := gets(t, t.Context(), 10)
		out := callAll(c.rt, reqs...)

		if got := backend.Calls(); got != 1 {
			t.Fatalf("backend requests = %d, want 1", got)
		}
		// Each caller owns its response: one caller spoiling its header
		// and reading half its body changes nothing for the others.
		out[0].resp.Header.Set("X-Id", "spoilt")
		half := make([]byte, 2)
		io.ReadFull(out[0].resp.Body, half)
		out[0].resp.Body.Close()
		for i, o := range out {
			if o.err != nil {
				t.Fatalf("caller %d: %v", i, o.err)
			}
			if o.resp.Request != reqs[i] {
				t.Errorf("caller %d: Request is not its own request", i)
			}
			if i == 0 {
				continue
			}
			if got := o.resp.Header.Get("X-Id"); got != "1" {
				t.Errorf("caller %d: X-Id = %q, want 1", i, got)
			}
			if got := readAll(t, o.resp); got != "hello" {
				t.Errorf("caller %d: body = %q, want hello", i, got)
			}
		}
		if got := c.joined.Load(); got != 9 {
			t.Errorf("joined = %d, want 9", got)
		}
		if got := len(c.rec.named(middleware.EventCoalesceJoined)); got != 9 {
			t.Errorf("%s events = %d, want 9", middleware.EventCoalesceJoined, got)
		}
		if e := c.rec.named(middleware.EventCoalesceJoined)[0]; strings.Contains(e.URL, "s3cr3t") || e.Method != "GET" {
			t.Errorf("event = %+v, want method GET and a redacted URL", e)
		}
		if got := backend.OpenBodies(); got != 0 {
			t.Errorf("backend bodies left open = %d, want 0", got)
		}

		// The trip is over: the next call makes a new one.
		resp, err := c.rt.RoundTrip(newReq(t, t.Context(), "GET", ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := backend.Calls(); got != 2 {
			t.Errorf("backend requests after the trip = %d, want 2", got)
		}
	})
}

func TestCoalesceIdentity(t *testing.T) {
	withHeader := func(name, value string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set(name, value) }
	}
	tests := []struct {
		name   string
		a, b   func(*http.Request)
		shared bool
	}{
		{"same", nil, nil, true},
		{"authorization differs", withHeader("Authorization", "Bearer a"), withHeader("Authorization", "Bearer b"), false},
		{"accept differs", withHeader("Accept", "text/csv"), withHeader("Accept", "application/json"), false},
		{"unlisted header differs", withHeader("X-Trace", "1"), withHeader("X-Trace", "2"), true},
		{"cookie always counts", withHeader("Cookie", "session=alice"), withHeader("Cookie", "session=bob"), false},
		{"proxy-authorization always counts", withHeader("Proxy-Authorization", "Basic YQ=="), withHeader("Proxy-Authorization", "Basic Yg=="), false},
		{"authorization under a lower-case name", func(r *http.Request) { r.Header["authorization"] = []string{"Bearer a"} },
			func(r *http.Request) { r.Header["authorization"] = []string{"Bearer b"} }, false},
		{"cookie under a lower-case name", func(r *http.Request) { r.Header["cookie"] = []string{"session=alice"} }, nil, false},
		{"range always counts", withHeader("Range", "bytes=0-9"), nil, false},
		{"if-none-match always counts", withHeader("If-None-Match", `"v1"`), nil, false},
		{"host differs", func(r *http.Request) { r.Host = "other.test" }, nil, false},
		{"query differs", func(r *http.Request) { r.URL.RawQuery = "page=3" }, nil, false},
		{"overrides differ", func(r *http.Request) {
			zero := 0
			*r = *r.WithContext(middleware.WithOverrides(r.Context(), middleware.Overrides{MaxRetries: &zero}))
		}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				backend := fakert.New(fakert.Step{Delay: time.Second})
				c := newCoalesce(coalesceOn(), backend)
				reqs := gets(t, t.Context(), 2)
				for i, f := range []func(*http.Request){tt.a, tt.b} {
					if f != nil {
						f(reqs[i])
					}
				}
				for _, o := range callAll(c.rt, reqs...) {
					if o.err != nil {
						t.Fatal(o.err)
					}
					o.resp.Body.Close()
				}
				want := 2
				if tt.shared {
					want = 1
				}
				if got := backend.Calls(); got != want {
					t.Errorf("backend requests = %d, want %d", got, want)
				}
			})
		})
	}
}

func TestCoalesceIdentityHashesSecrets(t *testing.T) {
	req := newReq(t, t.Context(), "GET", "")
	req.Header.Set("Authorization", "Bearer tok-123")
	key, ok := middleware.CoalesceIdentity(coalesceOn(), req)
	if !ok {
		t.Fatal("a GET is not coalesced")
	}
	if len(key) != 32 || strings.Contains(key, "tok-123") || strings.Contains(key, "s3cr3t") {
		t.Errorf("identity %q: want a 32-byte SHA-256 digest holding no secret", key)
	}
}

func TestCoalesceNeverWithBody(t *testing.T) {
	posts := coalesceOn()
	posts.Methods = []string{"GET", "POST"}
	tests := []struct {
		name string
		s    middleware.CoalesceSettings
		req  func(t *testing.T) *http.Request
	}{
		{"POST not listed", coalesceOn(), func(t *testing.T) *http.Request { return newReq(t, t.Context(), "POST", "") }},
		{"POST listed, with a body", posts, func(t *testing.T) *http.Request { return newReq(t, t.Context(), "POST", "x") }},
		{"GET with a body", coalesceOn(), func(t *testing.T) *http.Request { return newReq(t, t.Context(), "GET", "x") }},
		{"GET with a content length", coalesceOn(), func(t *testing.T) *http.Request {
			r := newReq(t, t.Context(), "GET", "")
			r.ContentLength = -1
			return r
		}},
		{"GET asking for an upgrade", coalesceOn(), func(t *testing.T) *http.Request {
			r := newReq(t, t.Context(), "GET", "")
			r.Header.Set("Upgrade", "websocket")
			return r
		}},
		{"GET with an httptrace.ClientTrace", coalesceOn(), func(t *testing.T) *http.Request {
			trace := &httptrace.ClientTrace{GotFirstResponseByte: func() {}}
			return newReq(t, httptrace.WithClientTrace(t.Context(), trace), "GET", "")
		}},
		{"no methods", middleware.CoalesceSettings{Enabled: true, Methods: []string{}}, func(t *testing.T) *http.Request {
			return newReq(t, t.Context(), "GET", "")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				backend := fakert.New(fakert.Step{Delay: time.Second})
				c := newCoalesce(tt.s, backend)
				for _, o := range callAll(c.rt, tt.req(t), tt.req(t), tt.req(t)) {
					if o.err != nil {
						t.Fatal(o.err)
					}
					o.resp.Body.Close()
				}
				if got := backend.Calls(); got != 3 {
					t.Errorf("backend requests = %d, want 3", got)
				}
				if got := c.joined.Load(); got != 0 {
					t.Errorf("joined = %d, want 0", got)
				}
			})
		})
	}
}

func TestCoalesceLeaderCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The backend fails the trip if its context ends before the answer.
		backend := fakert.New(fakert.Step{Delay: time.Second, Body: "ok"})
		c := newCoalesce(coalesceOn(), backend)
		lctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(500*time.Millisecond, cancel)
		out := callAll(c.rt, newReq(t, lctx, "GET", ""), newReq(t, t.Context(), "GET", ""))

		if !errors.Is(out[0].err, context.Canceled) || out[0].at != 500*time.Millisecond {
			t.Errorf("leader: err %v at %v, want context.Canceled at 500ms", out[0].err, out[0].at)
		}
		if out[1].err != nil || out[1].at != time.Second {
			t.Fatalf("waiter: err %v at %v, want the answer at 1s", out[1].err, out[1].at)
		}
		if got := readAll(t, out[1].resp); got != "ok" {
			t.Errorf("waiter's body = %q, want ok", got)
		}
		if got := backend.Calls(); got != 1 {
			t.Errorf("backend requests = %d, want 1", got)
		}
	})
}

// ctxMark is a context key of the tests.
type ctxMark struct{}

func TestCoalesceTripKeepsLeaderValuesNotDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var trip context.Context
		backend := fakert.New(fakert.Step{Delay: 2 * time.Second, OnRequest: func(r *http.Request) { trip = r.Context() }})
		c := newCoalesce(coalesceOn(), backend)
		lctx, cancel := context.WithTimeout(context.WithValue(t.Context(), ctxMark{}, "leader"), time.Second)
		defer cancel()
		out := callAll(c.rt, newReq(t, lctx, "GET", ""), newReq(t, t.Context(), "GET", ""))
		if got := backend.Calls(); got != 1 {
			t.Errorf("backend requests = %d, want 1", got)
		}
		if trip.Value(ctxMark{}) != "leader" {
			t.Errorf("trip's context value = %v, want the leader's", trip.Value(ctxMark{}))
		}
		if _, ok := trip.Deadline(); ok {
			t.Error("trip's context has the leader's deadline")
		}
		if !errors.Is(out[0].err, context.DeadlineExceeded) || out[0].at != time.Second {
			t.Errorf("leader: err %v at %v, want its deadline at 1s", out[0].err, out[0].at)
		}
		if out[1].err != nil || out[1].at != 2*time.Second {
			t.Fatalf("waiter: err %v at %v, want the answer at 2s", out[1].err, out[1].at)
		}
		out[1].resp.Body.Close()
	})
}

func TestCoalesceWaiterCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		backend := fakert.New(fakert.Step{Delay: time.Second, Body: "ok"})
		c := newCoalesce(coalesceOn(), backend)
		wctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(500*time.Millisecond, cancel)
		out := callAll(c.rt, newReq(t, t.Context(), "GET", ""), newReq(t, wctx, "GET", ""), newReq(t, t.Context(), "GET", ""))
		if !errors.Is(out[1].err, context.Canceled) || out[1].at != 500*time.Millisecond {
			t.Errorf("cancelled waiter: err %v at %v, want context.Canceled at 500ms", out[1].err, out[1].at)
		}
		for _, i := range []int{0, 2} {
			if out[i].err != nil || out[i].at != time.Second {
				t.Fatalf("caller %d: err %v at %v, want the answer at 1s", i, out[i].err, out[i].at)
			}
			if got := readAll(t, out[i].resp); got != "ok" {
				t.Errorf("caller %d: body = %q", i, got)
			}
		}
		if got := backend.Calls(); got != 1 {
			t.Errorf("backend requests = %d, want 1", got)
		}
	})
}

func TestCoalesceAllCallersGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var trip context.Context
		backend := fakert.New(fakert.Step{Delay: time.Hour, OnRequest: func(r *http.Request) { trip = r.Context() }})
		c := newCoalesce(coalesceOn(), backend)
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(500*time.Millisecond, cancel)
		out := callAll(c.rt, newReq(t, ctx, "GET", ""), newReq(t, ctx, "GET", ""))
		for i, o := range out {
			if !errors.Is(o.err, context.Canceled) || o.at != 500*time.Millisecond {
				t.Errorf("caller %d: err %v at %v, want context.Canceled at 500ms", i, o.err, o.at)
			}
		}
		// The trip's context is cancelled with the last caller's leave, and
		// its goroutine ends (synctest.Test fails on one left blocked).
		synctest.Wait()
		if trip.Err() == nil {
			t.Error("trip's context not cancelled after every caller left")
		}
		// A new call starts a new trip rather than joining the dead one.
		backend2Done := make(chan struct{})
		go func() {
			defer close(backend2Done)
			c.rt.RoundTrip(newReq(t, t.Context(), "GET", ""))
		}()
		synctest.Wait()
		if got := backend.Calls(); got != 2 {
			t.Errorf("backend requests = %d, want 2 (a new trip)", got)
		}
		if got := c.joined.Load(); got != 1 {
			t.Errorf("joined = %d, want 1", got)
		}
		time.Sleep(time.Hour)
		<-backend2Done
	})
}

func TestCoalesceLargeAnswerNotShared(t *testing.T) {
	const body = "0123456789"
	small := coalesceOn()
	small.MaxBody = 4
	t.Run("waiters send their own", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			backend := fakert.New(fakert.Step{Delay: time.Second, Body: body})
			c := newCoalesce(small, backend)
			out := callAll(c.rt, gets(t, t.Context(), 3)...)
			for i, o := range out {
				if o.err != nil {
					t.Fatalf("caller %d: %v", i, o.err)
				}
				if got := readAll(t, o.resp); got != body {
					t.Errorf("caller %d: body = %q, want %q", i, got, body)
				}
			}
			if got := backend.Calls(); got != 3 {
				t.Errorf("backend requests = %d, want 3 (one trip, then two of their own)", got)
			}
			if out[0].at != time.Second || out[1].at != 2*time.Second {
				t.Errorf("answers at %v and %v, want the trip's at 1s and the others' at 2s", out[0].at, out[1].at)
			}
			if got := backend.OpenBodies(); got != 0 {
				t.Errorf("backend bodies left open = %d", got)
			}
		})
	})
	t.Run("leader gone: a waiter takes the stream", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			backend := fakert.New(fakert.Step{Delay: time.Second, Body: body})
			c := newCoalesce(small, backend)
			lctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(500*time.Millisecond, cancel)
			out := callAll(c.rt, newReq(t, lctx, "GET", ""), newReq(t, t.Context(), "GET", ""))
			if out[0].err == nil {
				t.Fatal("cancelled leader got an answer")
			}
			if got := readAll(t, out[1].resp); got != body {
				t.Errorf("waiter's body = %q, want %q", got, body)
			}
			if got := backend.Calls(); got != 1 {
				t.Errorf("backend requests = %d, want 1", got)
			}
		})
	})
	// The backend ignores the trip's context: its large answer comes
	// after its callers left, or while the only one left is not looking.
	late := func(backend *fakert.Transport) http.RoundTripper {
		return middleware.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
			time.Sleep(time.Second)
			return backend.RoundTrip(r.WithContext(context.WithoutCancel(r.Context())))
		})
	}
	t.Run("everyone gone before the answer: the stream is closed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			backend := fakert.New(fakert.Step{Body: body})
			c := newCoalesce(small, late(backend))
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(500*time.Millisecond, cancel)
			for i, o := range callAll(c.rt, newReq(t, ctx, "GET", ""), newReq(t, ctx, "GET", "")) {
				if !errors.Is(o.err, context.Canceled) {
					t.Errorf("caller %d: %v, want context.Canceled", i, o.err)
				}
			}
			time.Sleep(time.Second)
			synctest.Wait()
			if backend.BodiesHanded() != 1 || backend.OpenBodies() != 0 {
				t.Errorf("backend bodies handed %d, open %d; want 1, 0", backend.BodiesHanded(), backend.OpenBodies())
			}
		})
	})
	t.Run("everyone gone after the answer: the stream is closed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			backend := fakert.New(fakert.Step{Body: body})
			// The waiter is held in its coalesce.joined event, before it
			// waits, until the test lets it go.
			release := make(chan struct{})
			ev := &middleware.Events{Observer: middleware.ObserverFunc(func(context.Context, middleware.Event) { <-release })}
			rt := middleware.Coalesce(small, middleware.CoalesceOptions{Events: ev})(late(backend))
			lctx, lcancel := context.WithCancel(t.Context())
			wctx, wcancel := context.WithCancel(t.Context())
			time.AfterFunc(500*time.Millisecond, lcancel)
			var wg sync.WaitGroup
			var errs [2]error
			for i, ctx := range []context.Context{lctx, wctx} {
				wg.Go(func() {
					resp, err := rt.RoundTrip(newReq(t, ctx, "GET", ""))
					if err == nil {
						resp.Body.Close()
					}
					errs[i] = err
				})
				synctest.Wait()
			}
			time.Sleep(time.Second)
			synctest.Wait()
			// The leader left at 500ms; the answer came at 1s and its
			// stream is kept for the waiter, which has not taken it yet.
			if got := backend.OpenBodies(); got != 1 {
				t.Fatalf("backend bodies open before the waiter leaves = %d, want 1 (the kept stream)", got)
			}
			wcancel()
			close(release)
			wg.Wait()
			for i, err := range errs {
				if !errors.Is(err, context.Canceled) {
					t.Errorf("caller %d: %v, want context.Canceled", i, err)
				}
			}
			if got := backend.OpenBodies(); got != 0 {
				t.Errorf("backend bodies left open = %d, want 0", got)
			}
		})
	})
}

func TestCoalesceErrorsShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		backend := fakert.New(fakert.Step{Delay: time.Second, Err: boom})
		c := newCoalesce(coalesceOn(), backend)
		for i, o := range callAll(c.rt, gets(t, t.Context(), 3)...) {
			if !errors.Is(o.err, boom) || o.resp != nil {
				t.Errorf("caller %d: %v, %v; want boom", i, o.resp, o.err)
			}
		}
		if got := backend.Calls(); got != 1 {
			t.Errorf("backend requests = %d, want 1", got)
		}
	})
}

func TestCoalesceBodyErrorShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		c := newCoalesce(coalesceOn(), middleware.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
			calls.Add(1)
			time.Sleep(time.Second)
			return &http.Response{StatusCode: 200, Header: http.Header{}, Request: r,
				Body: io.NopCloser(io.MultiReader(strings.NewReader("par"), fakeErrReader{io.ErrUnexpectedEOF}))}, nil
		}))
		for i, o := range callAll(c.rt, gets(t, t.Context(), 2)...) {
			b, err := io.ReadAll(o.resp.Body)
			o.resp.Body.Close()
			if string(b) != "par" || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("caller %d: read %q, %v; want par, then unexpected EOF", i, b, err)
			}
		}
		if got := calls.Load(); got != 1 {
			t.Errorf("backend requests = %d, want 1", got)
		}
	})
}

type fakeErrReader struct{ err error }

func (e fakeErrReader) Read([]byte) (int, error) { return 0, e.err }

func TestCoalescePanicReachesEveryCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		c := newCoalesce(coalesceOn(), middleware.RoundTripperFunc(func(*http.Request) (*http.Response, error) {
			calls.Add(1)
			time.Sleep(time.Second)
			panic("below")
		}))
		var got [2]any
		var wg sync.WaitGroup
		for i := range got {
			wg.Go(func() {
				defer func() { got[i] = recover() }()
				c.rt.RoundTrip(newReq(t, t.Context(), "GET", ""))
			})
		}
		wg.Wait()
		for i, v := range got {
			// The value, and the stack where it happened (this test's
			// function, on the trip's goroutine).
			err, ok := v.(error)
			if !ok || !strings.HasPrefix(err.Error(), "below\n") || !strings.Contains(err.Error(), "TestCoalescePanicReachesEveryCaller") {
				t.Errorf("caller %d recovered %v, want the panic with its stack", i, v)
			}
		}
		if n := calls.Load(); n != 1 {
			t.Errorf("backend requests = %d, want 1", n)
		}
	})
}

func TestCoalesceDisabled(t *testing.T) {
	backend := fakert.New()
	if rt := middleware.Coalesce(middleware.DefaultCoalesceSettings(), middleware.CoalesceOptions{})(backend); rt != backend {
		t.Errorf("disabled Coalesce wraps its next RoundTripper (%T)", rt)
	}
}

// TestCoalesceRedirectKeepsOneDeadline: the total timeout below bounds
// every hop of a coalesced call together, as it does without coalescing:
// each caller's next hop finds the call's start.
func TestCoalesceRedirectKeepsOneDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		backend := fakert.New(
			fakert.Step{Delay: 3 * time.Second, Status: http.StatusFound, Header: http.Header{"Location": {"/next"}}},
			fakert.Step{Delay: 3 * time.Second, Body: "late"},
		)
		c := newCoalesce(coalesceOn(), middleware.Timeout(5*time.Second, middleware.TimeoutOptions{})(backend))
		client := &http.Client{Transport: c.rt}
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				start := time.Now()
				resp, err := client.Get("http://svc.test/first")
				if err == nil {
					resp.Body.Close()
				}
				var te *middleware.TimeoutError
				if !errors.As(err, &te) || time.Since(start) != 5*time.Second {
					t.Errorf("got %v after %v, want the timeout after 5s", err, time.Since(start))
				}
			})
		}
		wg.Wait()
		if got := backend.Calls(); got != 2 {
			t.Errorf("backend requests = %d, want 2 (one per hop)", got)
		}
	})
}

// TestCoalesceRedirectChainIsIdentity: hops to the same URL from
// different chains do not share a trip (the layers below decide
// credentials by the chain).
func TestCoalesceRedirectChainIsIdentity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		c := newCoalesce(coalesceOn(), middleware.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
			calls.Add(1)
			time.Sleep(time.Second)
			resp := &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: r}
			if r.URL.Path != "/x" {
				resp.StatusCode = http.StatusFound
				resp.Header.Set("Location", "/x")
			}
			return resp, nil
		}))
		client := &http.Client{Transport: c.rt}
		var wg sync.WaitGroup
		for _, u := range []string{"http://svc.test/a", "http://svc.test/b", "http://svc.test/a"} {
			wg.Go(func() {
				resp, err := client.Get(u)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
			})
		}
		wg.Wait()
		if got := calls.Load(); got != 4 {
			t.Errorf("backend requests = %d, want 4 (/a and /b, then /x from each)", got)
		}
	})
}

// BenchmarkCoalesce measures the layer over prebuilt(): a call it does not
// take (a DELETE: the method check only) and a GET, which hashes its
// identity and makes a trip on a goroutine of its own (serial: every call
// leads a trip; parallel: calls in flight together share one).
func BenchmarkCoalesce(b *testing.B) {
	rt := middleware.Coalesce(coalesceOn(), middleware.CoalesceOptions{})(prebuilt())
	b.Run("passed", func(b *testing.B) {
		req, _ := http.NewRequest(http.MethodDelete, "http://svc.test/v1/items", nil)
		serialRT(b, rt, req)
	})
	b.Run("coalesced", func(b *testing.B) { benchRT(b, rt) })
}

// TestCoalesceTripOwnsItsRequest: a first caller that left owns its
// request again and may change it while the trip is still below; the trip
// reads a copy of its own (under -race, a shared Header map is a race).
func TestCoalesceTripOwnsItsRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var late, path string
		c := newCoalesce(coalesceOn(), middleware.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
			time.Sleep(time.Second) // ignores the trip's context
			late, path = r.Header.Get("X-Late"), r.URL.Path
			r.Clone(context.Background()) // what a layer below does: read every header
			return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
		}))
		lctx, cancel := context.WithCancel(t.Context())
		lead, wait := newReq(t, lctx, "GET", ""), newReq(t, t.Context(), "GET", "")
		var wg sync.WaitGroup
		wg.Go(func() {
			if _, err := c.rt.RoundTrip(lead); !errors.Is(err, context.Canceled) {
				t.Errorf("leader: %v, want context.Canceled", err)
			}
			// The caller has its request back and changes it.
			lead.Header.Set("X-Late", "1")
			lead.URL.Path = "/changed"
		})
		synctest.Wait()
		wg.Go(func() {
			resp, err := c.rt.RoundTrip(wait)
			if err != nil {
				t.Errorf("waiter: %v", err)
				return
			}
			resp.Body.Close()
		})
		synctest.Wait()
		time.Sleep(500 * time.Millisecond)
		cancel()
		wg.Wait()
		if late != "" || path != "/v1/items" {
			t.Errorf("the trip saw X-Late %q and path %q, want the request as it was sent (\"\", /v1/items)", late, path)
		}
	})
}

// TestCoalesceStreamKeepsTrailers: the caller that takes a large answer's
// stream reads its trailers once the body is read, as net/http gives them.
func TestCoalesceStreamKeepsTrailers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Sum")
		io.WriteString(w, strings.Repeat("x", 100))
		w.Header().Set("X-Sum", "abc")
	}))
	defer srv.Close()
	tr := srv.Client().Transport.(*http.Transport)
	defer tr.CloseIdleConnections()
	s := coalesceOn()
	s.MaxBody = 10
	c := newCoalesce(s, tr)
	req, _ := http.NewRequestWithContext(t.Context(), "GET", srv.URL, nil)
	resp, err := c.rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, resp); len(got) != 100 {
		t.Fatalf("body: %d bytes, want 100", len(got))
	}
	if got := resp.Trailer.Get("X-Sum"); got != "abc" {
		t.Errorf("trailer X-Sum = %q, want abc", got)
	}
}

// TestCoalesceJarCookiesAreIdentity: http.Client's Jar adds a user's
// cookies above the transport, where no vary list is written for them;
// two users' calls in flight together still get each their own answer.
func TestCoalesceJarCookiesAreIdentity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		c := newCoalesce(coalesceOn(), middleware.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
			calls.Add(1)
			time.Sleep(time.Second)
			who, _ := r.Cookie("session")
			return &http.Response{StatusCode: 200, Header: http.Header{}, Request: r,
				Body: io.NopCloser(strings.NewReader("account of " + who.Value))}, nil
		}))
		var wg sync.WaitGroup
		for _, user := range []string{"alice", "bob"} {
			jar, err := cookiejar.New(nil)
			if err != nil {
				t.Fatal(err)
			}
			u, _ := url.Parse("http://svc.test/")
			jar.SetCookies(u, []*http.Cookie{{Name: "session", Value: user}})
			client := &http.Client{Transport: c.rt, Jar: jar}
			wg.Go(func() {
				resp, err := client.Get("http://svc.test/account")
				if err != nil {
					t.Error(err)
					return
				}
				if got := readAll(t, resp); got != "account of "+user {
					t.Errorf("%s got %q", user, got)
				}
			})
			synctest.Wait()
		}
		wg.Wait()
		if got := calls.Load(); got != 2 {
			t.Errorf("backend requests = %d, want 2 (one per user)", got)
		}
	})
}

// blockingBody gives its bytes, then blocks until ctx ends, as a
// transport's body does while the server is silent.
type blockingBody struct {
	r   io.Reader
	ctx context.Context
}

func (b *blockingBody) Read(p []byte) (int, error) {
	if n, _ := b.r.Read(p); n > 0 {
		return n, nil
	}
	<-b.ctx.Done()
	return 0, b.ctx.Err()
}

func (b *blockingBody) Close() error { return nil }

// TestCoalesceStreamEndsWithItsCaller: the caller that took a large
// answer's stream owns the trip: its cancellation ends the read below.
func TestCoalesceStreamEndsWithItsCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := coalesceOn()
		s.MaxBody = 4
		c := newCoalesce(s, middleware.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Header: http.Header{}, Request: r,
				Body: &blockingBody{r: strings.NewReader("0123456789"), ctx: r.Context()}}, nil
		}))
		ctx, cancel := context.WithCancel(t.Context())
		resp, err := c.rt.RoundTrip(newReq(t, ctx, "GET", ""))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		time.AfterFunc(time.Second, cancel)
		start := time.Now()
		b, err := io.ReadAll(resp.Body)
		if string(b) != "0123456789" || !errors.Is(err, context.Canceled) || time.Since(start) != time.Second {
			t.Errorf("read %q, %v after %v; want the bytes, then context.Canceled at the caller's cancel (1s)", b, err, time.Since(start))
		}
	})
}

// TestCoalesceTrailersOwnPerCaller: each caller of a shared answer gets
// its own Trailer map, as it gets its own Header.
func TestCoalesceTrailersOwnPerCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCoalesce(coalesceOn(), middleware.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
			time.Sleep(time.Second)
			return &http.Response{StatusCode: 200, Header: http.Header{}, Request: r, Body: io.NopCloser(strings.NewReader("ok")),
				Trailer: http.Header{"X-Sum": {"abc"}}}, nil
		}))
		out := callAll(c.rt, gets(t, t.Context(), 2)...)
		for i, o := range out {
			if o.err != nil {
				t.Fatalf("caller %d: %v", i, o.err)
			}
			readAll(t, o.resp)
		}
		out[0].resp.Trailer.Set("X-Sum", "spoilt")
		if got := out[1].resp.Trailer.Get("X-Sum"); got != "abc" {
			t.Errorf("caller 1's trailer X-Sum = %q after caller 0 changed its own, want abc", got)
		}
	})
}

// TestCoalesceCallerAlreadyGoneStartsNoTrip: a caller whose context has
// ended before it arrives starts no trip: its own request goes below, as
// without coalescing, and fails there.
func TestCoalesceCallerAlreadyGoneStartsNoTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		backend := fakert.New()
		c := newCoalesce(coalesceOn(), backend)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		req := newReq(t, ctx, "GET", "")
		if _, err := c.rt.RoundTrip(req); !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
		synctest.Wait()
		if reqs := backend.Requests(); len(reqs) != 1 || reqs[0].Req != req {
			t.Errorf("backend saw %d requests, want 1: the caller's own", len(reqs))
		}
	})
}

// TestCoalescePanicUnwraps: a panic with an error value is that error.
func TestCoalescePanicUnwraps(t *testing.T) {
	boom := errors.New("boom")
	c := newCoalesce(coalesceOn(), middleware.RoundTripperFunc(func(*http.Request) (*http.Response, error) { panic(boom) }))
	defer func() {
		if err, ok := recover().(error); !ok || !errors.Is(err, boom) {
			t.Errorf("recovered %v, want an error that is boom", err)
		}
	}()
	c.rt.RoundTrip(newReq(t, t.Context(), "GET", ""))
}

// TestCoalescePanicWithNobodyLeftIsLogged: a panic below that comes once
// every caller has gone is logged, with its stack, not dropped.
func TestCoalescePanicWithNobodyLeftIsLogged(t *testing.T) {
	for _, name := range []string{"gone before the trip ends", "gone as it ends"} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				logger, logs := logcapture.New()
				ev := &middleware.Events{Client: "billing", Logger: logger}
				release := make(chan struct{})
				if name == "gone as it ends" {
					// The only caller is held before it waits until the
					// trip has ended, then finds its context ended too.
					ev.Observer = middleware.ObserverFunc(func(context.Context, middleware.Event) { <-release })
				} else {
					close(release)
				}
				rt := middleware.Coalesce(coalesceOn(), middleware.CoalesceOptions{Events: ev})(
					middleware.RoundTripperFunc(func(*http.Request) (*http.Response, error) {
						time.Sleep(time.Second) // ignores the trip's context
						panic("below")
					}))
				lctx, lcancel := context.WithCancel(t.Context())
				wctx, wcancel := context.WithCancel(t.Context())
				defer wcancel()
				time.AfterFunc(500*time.Millisecond, lcancel)
				var wg sync.WaitGroup
				for _, ctx := range []context.Context{lctx, wctx} {
					wg.Go(func() {
						if _, err := rt.RoundTrip(newReq(t, ctx, "GET", "")); !errors.Is(err, context.Canceled) {
							t.Errorf("caller: %v, want context.Canceled", err)
						}
					})
					synctest.Wait()
				}
				if name == "gone before the trip ends" {
					time.AfterFunc(700*time.Millisecond, wcancel)
				}
				time.Sleep(time.Second)
				synctest.Wait()
				if name == "gone as it ends" {
					wcancel()
					close(release)
				}
				wg.Wait()
				recs := logs.Records(t, "switchboard: a coalesced trip panicked after every caller had gone")
				if len(recs) != 1 || recs[0]["panic"] != "below" || recs[0]["client"] != "billing" ||
					!strings.Contains(fmt.Sprint(recs[0]["stack"]), "TestCoalescePanicWithNobodyLeftIsLogged") {
					t.Errorf("logged %v, want one record with the panic, its stack and the client", recs)
				}
			})
		})
	}
}

// TestCoalesceWaitKeepsTheCause: a caller cancelled with a cause gets
// the cause, and context.Canceled, wrapped.
func TestCoalesceWaitKeepsTheCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errGone := errors.New("user navigated away")
		c := newCoalesce(coalesceOn(), fakert.New(fakert.Step{Delay: time.Second}))
		ctx, cancel := context.WithCancelCause(t.Context())
		time.AfterFunc(500*time.Millisecond, func() { cancel(errGone) })
		out := callAll(c.rt, newReq(t, ctx, "GET", ""), newReq(t, t.Context(), "GET", ""))
		if err := out[0].err; !errors.Is(err, errGone) || !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled caller: %v, want its cause and context.Canceled", err)
		}
		out[1].resp.Body.Close()
	})
}

// TestCoalesceLateJoinerInheritsTheTripsAge: the total timeout below
// counts from the trip's start, so a caller that joins 4s into a trip
// under a 5s timeout gets the timeout 1s later.
func TestCoalesceLateJoinerInheritsTheTripsAge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		backend := fakert.New(fakert.Step{Delay: 10 * time.Second})
		c := newCoalesce(coalesceOn(), middleware.Timeout(5*time.Second, middleware.TimeoutOptions{})(backend))
		var wg sync.WaitGroup
		wg.Go(func() { c.rt.RoundTrip(newReq(t, t.Context(), "GET", "")) })
		time.Sleep(4 * time.Second)
		start := time.Now()
		_, err := c.rt.RoundTrip(newReq(t, t.Context(), "GET", ""))
		var te *middleware.TimeoutError
		if !errors.As(err, &te) || time.Since(start) != time.Second {
			t.Errorf("late joiner: %v after %v, want the timeout after 1s", err, time.Since(start))
		}
		wg.Wait()
		if got := backend.Calls(); got != 1 {
			t.Errorf("backend requests = %d, want 1", got)
		}
	})
}

// TestCoalesceTripCopiesBeforeTheLeaderReturns: the trip's copy of the
// first caller's request is made before that caller can return, not on
// the trip's goroutine: a caller whose deadline ends its wait and that
// then changes its request races with nothing (under -race), and the trip
// sends the credentials its identity was made of.
func TestCoalesceTripCopiesBeforeTheLeaderReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sent atomic.Value
		c := newCoalesce(coalesceOn(), middleware.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
			sent.Store(r.Header.Get("Authorization"))
			time.Sleep(2 * time.Second) // ignores the trip's context
			return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
		}))
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		lead := newReq(t, ctx, "GET", "")
		lead.Header.Set("Authorization", "Bearer alice")
		if _, err := c.rt.RoundTrip(lead); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("leader: %v, want its deadline", err)
		}
		lead.Header.Set("Authorization", "Bearer bob") // the caller's own again
		time.Sleep(2 * time.Second)
		if got := sent.Load(); got != "Bearer alice" {
			t.Errorf("the trip sent Authorization %q, want the leader's as it called (Bearer alice)", got)
		}
	})
}

// liveBody gives its bytes while ctx lives and fails once it ended, as a
// transport's body does when its request is cancelled.
type liveBody struct {
	r   io.Reader
	ctx context.Context
}

func (b *liveBody) Read(p []byte) (int, error) {
	if err := b.ctx.Err(); err != nil {
		return 0, err
	}
	return b.r.Read(p)
}

func (b *liveBody) Close() error { return nil }

// TestCoalesceLastWaiterLeavingKeepsTheStreamRead: the caller that took a
// large answer's stream owns the trip; a waiter that leaves after it (the
// last one, gone just as the answer came) must not cancel the trip and
// cut that caller's read.
func TestCoalesceLastWaiterLeavingKeepsTheStreamRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := coalesceOn()
		s.MaxBody = 10
		gate, hold := make(chan struct{}), make(chan struct{})
		next := middleware.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
			<-gate
			return &http.Response{StatusCode: 200, Header: http.Header{}, Request: r,
				Body: &liveBody{r: strings.NewReader(strings.Repeat("x", 100)), ctx: r.Context()}}, nil
		})
		ev := &middleware.Events{Observer: middleware.ObserverFunc(func(_ context.Context, e middleware.Event) {
			if e.Name == middleware.EventCoalesceJoined {
				<-hold // the joiner stays a waiter until released
			}
		})}
		rt := middleware.Coalesce(s, middleware.CoalesceOptions{Events: ev})(next)
		var lead *http.Response
		var wg sync.WaitGroup
		wg.Go(func() {
			resp, err := rt.RoundTrip(newReq(t, t.Context(), "GET", ""))
			if err != nil {
				t.Errorf("leader: %v", err)
				return
			}
			lead = resp
		})
		synctest.Wait()
		jctx, jcancel := context.WithCancel(t.Context())
		wg.Go(func() {
			if _, err := rt.RoundTrip(newReq(t, jctx, "GET", "")); !errors.Is(err, context.Canceled) {
				t.Errorf("joiner: %v, want context.Canceled", err)
			}
		})
		synctest.Wait()
		close(gate) // the large answer comes; the leader takes its stream
		synctest.Wait()
		jcancel() // the joiner is gone as the answer comes, and leaves last
		close(hold)
		wg.Wait()
		if lead == nil {
			t.Fatal("no answer for the leader")
		}
		defer lead.Body.Close()
		b, err := io.ReadAll(lead.Body)
		if len(b) != 100 || err != nil {
			t.Errorf("leader read %d bytes, %v; want all 100 and no error", len(b), err)
		}
	})
}

// TestCoalesceAuthorizationAlwaysCounts: a vary_headers list written
// without Authorization still keeps two tokens from sharing an answer.
func TestCoalesceAuthorizationAlwaysCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		backend := fakert.New(fakert.Step{Delay: time.Second})
		s := coalesceOn()
		s.VaryHeaders = []string{"Accept"}
		c := newCoalesce(s, backend)
		reqs := gets(t, t.Context(), 2)
		reqs[0].Header.Set("Authorization", "Bearer alice")
		reqs[1].Header.Set("Authorization", "Bearer bob")
		for _, o := range callAll(c.rt, reqs...) {
			if o.err != nil {
				t.Fatal(o.err)
			}
			o.resp.Body.Close()
		}
		if got := backend.Calls(); got != 2 {
			t.Errorf("backend requests = %d, want 2 (one per token)", got)
		}
	})
}
