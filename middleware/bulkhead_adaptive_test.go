package middleware_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/iotest"
	"testing/synctest"
	"time"

	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/middleware"
)

// queueingBackend is a fake backend with a capacity: a call takes base
// while at most capacity calls are in flight, and base·inflight/capacity
// beyond (latency grows with queueing). It answers 200 with a small body.
type queueingBackend struct {
	base     time.Duration
	capacity atomic.Int64
	inflight atomic.Int64
	calls    atomic.Int64
}

func (q *queueingBackend) RoundTrip(req *http.Request) (*http.Response, error) {
	n := q.inflight.Add(1)
	defer q.inflight.Add(-1)
	q.calls.Add(1)
	d := q.base
	if c := q.capacity.Load(); n > c {
		d = q.base * time.Duration(n) / time.Duration(c)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("ok")), Request: req}, nil
}

// adaptiveBulkhead returns mode adaptive with the given limits and a max
// wait of a minute.
func adaptiveBulkhead(lo, hi, initial int) middleware.BulkheadSettings {
	return middleware.BulkheadSettings{Mode: middleware.BulkheadAdaptive, MinLimit: lo, MaxLimit: hi, InitialLimit: initial, MaxWait: time.Minute}
}

// drive runs workers goroutines that call rt in a loop until stop is
// closed, each reading and closing its response.
func drive(ctx context.Context, rt http.RoundTripper, workers int, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequestWithContext(ctx, "GET", "http://svc.test/v1/items", nil)
				resp, err := rt.RoundTrip(req)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		})
	}
	return &wg
}

// TestAdaptiveBulkheadLimitFollowsLatency drives an adaptive bulkhead with
// 40 callers against a backend whose capacity drops from 30 to 5 and comes
// back: while latency holds the limit grows from initial_limit; once
// latency grows with queueing it falls within a few recent windows (1 s
// each here); once latency is back it grows again.
func TestAdaptiveBulkheadLimitFollowsLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		be := &queueingBackend{base: 50 * time.Millisecond}
		be.capacity.Store(30)
		ev, rec := newEvents()
		bh := middleware.NewBulkhead(adaptiveBulkhead(1, 200, 20), middleware.BulkheadOptions{Events: ev})
		stop := make(chan struct{})
		wg := drive(t.Context(), bh.Middleware()(be), 40, stop)
		var path []int
		second := func(n int) {
			for range n {
				time.Sleep(time.Second)
				path = append(path, bh.Limit())
			}
		}
		second(15)
		healthy := bh.Limit()
		be.capacity.Store(5)
		second(5)
		early := bh.Limit()
		second(10)
		slow := bh.Limit()
		lowest := slices.Min(path[15:])
		be.capacity.Store(30)
		second(15)
		back := bh.Limit()
		close(stop)
		wg.Wait()
		t.Logf("limit each second: %v", path)
		if healthy < 28 {
			t.Errorf("healthy backend: limit %d after 15s, want it grown from 20 to >= 28", healthy)
		}
		if early >= healthy {
			t.Errorf("5s after latency grew: limit %d, want below %d", early, healthy)
		}
		if slow > healthy-5 {
			t.Errorf("15s after latency grew: limit %d, want <= %d", slow, healthy-5)
		}
		if back < lowest+5 {
			t.Errorf("15s after latency came back: limit %d, want >= %d (lowest %d + 5)", back, lowest+5, lowest)
		}
		checkLimitEvents(t, rec.named(middleware.EventBulkheadLimitChanged), 20, back)
	})
}

// checkLimitEvents checks a run's bulkhead.limit_changed events: a chain
// from initial, each a move of 10 % or more from the one before, the last
// within 10 % of final.
func checkLimitEvents(t *testing.T, evs []middleware.Event, initial, final int) {
	t.Helper()
	if len(evs) < 2 {
		t.Fatalf("bulkhead.limit_changed events: got %d, want the rise and the fall reported", len(evs))
	}
	last := initial
	for i, e := range evs {
		if e.OldLimit != last {
			t.Errorf("event %d: OldLimit %d, want %d (the last reported)", i, e.OldLimit, last)
		}
		if d := e.NewLimit - e.OldLimit; d*d*100 < e.OldLimit*e.OldLimit {
			t.Errorf("event %d: %d -> %d, a move under 10 %%", i, e.OldLimit, e.NewLimit)
		}
		if e.Client != "billing" {
			t.Errorf("event %d: client %q, want billing", i, e.Client)
		}
		last = e.NewLimit
	}
	if d := final - last; d*d*100 >= last*last {
		t.Errorf("last reported limit %d, final %d: a move of 10 %% or more went unreported", last, final)
	}
}

// getVia sends one GET through rt with ctx and returns its response (body
// still open) or error.
func getVia(ctx context.Context, rt http.RoundTripper) (*http.Response, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://svc.test/v1/items", nil)
	return rt.RoundTrip(req)
}

// TestAdaptiveBulkheadHoldsPermitUntilBodyEnds: a call holds its permit
// while its caller has the response body, and gives it back when the body
// is closed or read to its end.
func TestAdaptiveBulkheadHoldsPermitUntilBodyEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := adaptiveBulkhead(1, 1, 1)
		s.MaxWait = 0
		bh := middleware.NewBulkhead(s, middleware.BulkheadOptions{})
		rt := bh.Middleware()(fakert.New(fakert.Step{Body: "hello"}))
		resp, err := getVia(t.Context(), rt)
		if err != nil {
			t.Fatal(err)
		}
		if got := bh.InUse(); got != 1 {
			t.Fatalf("body open: InUse %d, want 1", got)
		}
		if _, err := getVia(t.Context(), rt); !errors.Is(err, middleware.ErrBulkheadFull) {
			t.Fatalf("second call while the body is open: err %v, want ErrBulkheadFull", err)
		}
		resp.Body.Close()
		if got := bh.InUse(); got != 0 {
			t.Fatalf("body closed: InUse %d, want 0", got)
		}
		resp, err = getVia(t.Context(), rt)
		if err != nil {
			t.Fatalf("call after the body was closed: %v", err)
		}
		io.Copy(io.Discard, resp.Body) // read to EOF, not closed
		if got := bh.InUse(); got != 0 {
			t.Fatalf("body read to its end: InUse %d, want 0", got)
		}
		resp.Body.Close()
	})
}

// netTimeout is a transport's own timeout (a net.Error), such as
// response_header_timeout's.
type netTimeout struct{}

func (netTimeout) Error() string   { return "net/http: timeout awaiting response headers" }
func (netTimeout) Timeout() bool   { return true }
func (netTimeout) Temporary() bool { return true }

// TestAdaptiveBulkheadSamples: calls the backend served (a status below
// 500) are latency samples, which move the limit (here down: 1 call in
// flight allows at most 5); 5xx answers, timeouts, local rejections,
// callers gone and transport errors are dropped (LatencySample), and 120
// such calls over 2.4 s leave it at initial_limit.
func TestAdaptiveBulkheadSamples(t *testing.T) {
	const lat = 20 * time.Millisecond
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	tests := []struct {
		name   string
		step   fakert.Step
		wrap   func(http.RoundTripper) http.RoundTripper // outside the bulkhead
		below  func(http.RoundTripper) http.RoundTripper // between the bulkhead and the backend
		ctx    func(context.Context) (context.Context, context.CancelFunc)
		cancel bool // the caller cancels after the response, before closing the body
		read   bool // the caller reads the body before closing it
		sample bool
	}{
		{name: "200 answered", step: fakert.Step{Delay: lat}, sample: true},
		{name: "404 answered", step: fakert.Step{Status: 404, Delay: lat}, sample: true},
		{name: "503 answered", step: fakert.Step{Status: 503, Delay: lat}},
		{name: "timeout layer", step: fakert.Step{Delay: time.Hour},
			wrap: func(rt http.RoundTripper) http.RoundTripper {
				return middleware.Timeout(lat, middleware.TimeoutOptions{})(rt)
			}},
		{name: "transport timeout", step: fakert.Step{Err: netTimeout{}, Delay: lat}},
		{name: "caller cancelled", step: fakert.Step{Delay: time.Hour},
			ctx: func(ctx context.Context) (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(ctx)
				time.AfterFunc(lat, cancel)
				return ctx, cancel
			}},
		{name: "caller deadline", step: fakert.Step{Delay: time.Hour},
			ctx: func(ctx context.Context) (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, lat) }},
		{name: "caller gone before the body ended", step: fakert.Step{Body: "ok", Delay: lat}, cancel: true},
		{name: "connection refused", step: fakert.Step{Err: refused, Delay: lat}},
		{name: "local rejection below", step: fakert.Step{Err: middleware.ErrRateLimited, Delay: lat}},
		{name: "body cut by a read error", read: true,
			below: func(http.RoundTripper) http.RoundTripper {
				return middleware.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
					time.Sleep(lat)
					body := io.NopCloser(iotest.ErrReader(io.ErrUnexpectedEOF))
					return &http.Response{StatusCode: 200, Body: body, Request: r}, nil
				})
			}},
		{name: "waited for a rate-limit token below", step: fakert.Step{Delay: lat},
			below: func(rt http.RoundTripper) http.RoundTripper {
				return middleware.NewRateLimit(middleware.RateLimitSettings{RequestsPerSecond: 10, Burst: 1}, middleware.RateLimitOptions{}).Middleware()(rt)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				bh := middleware.NewBulkhead(adaptiveBulkhead(1, 200, 20), middleware.BulkheadOptions{})
				var be http.RoundTripper = fakert.New(tt.step)
				if tt.below != nil {
					be = tt.below(be)
				}
				rt := bh.Middleware()(be)
				if tt.wrap != nil {
					rt = tt.wrap(rt)
				}
				for range 120 {
					ctx, cancel := context.WithCancel(t.Context())
					if tt.ctx != nil {
						ctx, cancel = tt.ctx(t.Context())
					}
					resp, err := getVia(ctx, rt)
					if err == nil {
						if tt.cancel {
							cancel()
						}
						if tt.read {
							_, _ = io.Copy(io.Discard, resp.Body)
						}
						resp.Body.Close()
					}
					cancel()
				}
				if got := bh.InUse(); got != 0 {
					t.Fatalf("InUse %d after every call ended, want 0", got)
				}
				if got := bh.Limit(); tt.sample && got >= 20 {
					t.Errorf("limit %d after 120 samples, want it moved down from 20", got)
				} else if !tt.sample && got != 20 {
					t.Errorf("limit %d after 120 dropped calls, want 20 (no sample)", got)
				}
			})
		})
	}
}

// TestAdaptiveBulkheadFull: with every permit taken a call is refused with
// ErrBulkheadFull (a local rejection) at once without max_wait, after
// exactly max_wait with one; a deadline ending the wait matches both
// ErrBulkheadFull and context.DeadlineExceeded; a cancellation matches
// context.Canceled alone. Each refusal but the cancellation emits
// bulkhead.rejected.
func TestAdaptiveBulkheadFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev, rec := newEvents()
		s := adaptiveBulkhead(1, 1, 1)
		s.MaxWait = 0
		bh := middleware.NewBulkhead(s, middleware.BulkheadOptions{Events: ev})
		rt := bh.Middleware()(fakert.New(fakert.Step{Body: "x"}))
		held, err := getVia(t.Context(), rt)
		if err != nil {
			t.Fatal(err)
		}
		defer held.Body.Close()

		req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://svc.test/", nil)
		_, err = rt.RoundTrip(req)
		if !errors.Is(err, middleware.ErrBulkheadFull) || middleware.Classify(req, nil, err) != middleware.OutcomeRejected {
			t.Fatalf("no max_wait: err %v (%v), want ErrBulkheadFull, rejected", err, middleware.Classify(req, nil, err))
		}

		s.MaxWait = 2 * time.Second
		bh.Update(s)
		start := time.Now()
		if _, err := getVia(t.Context(), rt); !errors.Is(err, middleware.ErrBulkheadFull) || time.Since(start) != 2*time.Second {
			t.Fatalf("max_wait 2s: err %v after %v, want ErrBulkheadFull after 2s", err, time.Since(start))
		}

		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		_, err = getVia(ctx, rt)
		cancel()
		if !errors.Is(err, middleware.ErrBulkheadFull) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("deadline during the wait: err %v, want ErrBulkheadFull and DeadlineExceeded", err)
		}

		ctx, cancel = context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		_, err = getVia(ctx, rt)
		if errors.Is(err, middleware.ErrBulkheadFull) || !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled during the wait: err %v, want context.Canceled alone", err)
		}
		if got := len(rec.named(middleware.EventBulkheadRejected)); got != 3 {
			t.Errorf("bulkhead.rejected events: got %d, want 3", got)
		}
		if got := bh.InUse(); got != 1 {
			t.Errorf("InUse %d, want 1 (the held call's)", got)
		}
	})
}

// learn sends n sequential calls of 20ms through rt: with one call in
// flight the limiter lowers its limit towards 5.
func learn(t *testing.T, rt http.RoundTripper, n int) {
	t.Helper()
	for range n {
		resp, err := getVia(t.Context(), rt)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
}

// TestAdaptiveBulkheadUpdateKeepsLimit: new bounds keep the learned limit,
// clamped to them; the calls in flight keep counting against the new
// limiter and free their places when they end; a new initial_limit alone
// or max_wait changes nothing; a clamp is reported as a change.
func TestAdaptiveBulkheadUpdateKeepsLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := adaptiveBulkhead(1, 200, 20)
		ev, rec := newEvents()
		bh := middleware.NewBulkhead(s, middleware.BulkheadOptions{Events: ev})
		lastReported := func() middleware.Event {
			evs := rec.named(middleware.EventBulkheadLimitChanged)
			if len(evs) == 0 {
				return middleware.Event{}
			}
			return evs[len(evs)-1]
		}
		rt := bh.Middleware()(fakert.New(fakert.Step{Delay: 20 * time.Millisecond, Body: "x"}))
		learn(t, rt, 150)
		learned := bh.Limit()
		if learned >= 20 {
			t.Fatalf("learned limit %d, want below 20 before the reload", learned)
		}

		s.InitialLimit, s.MaxWait = 30, time.Second
		bh.Update(s)
		if got := bh.Limit(); got != learned {
			t.Errorf("new initial_limit: limit %d, want %d kept", got, learned)
		}
		s.MaxLimit = 100
		bh.Update(s)
		if got := bh.Limit(); got != learned {
			t.Errorf("new max_limit above it: limit %d, want %d kept", got, learned)
		}

		var open []*http.Response
		for range 3 {
			resp, err := getVia(t.Context(), rt)
			if err != nil {
				t.Fatal(err)
			}
			open = append(open, resp)
		}
		s.MaxLimit, s.InitialLimit, s.MaxWait = 3, 3, 0
		bh.Update(s)
		if got := bh.Limit(); got != 3 {
			t.Errorf("max_limit 3 below it: limit %d, want 3 (clamped)", got)
		}
		if e := lastReported(); e.NewLimit != 3 {
			t.Errorf("clamp to 3: last bulkhead.limit_changed %+v, want NewLimit 3", e)
		}
		if got := bh.InUse(); got != 3 {
			t.Errorf("after new bounds: InUse %d, want the 3 calls in flight", got)
		}
		if _, err := getVia(t.Context(), rt); !errors.Is(err, middleware.ErrBulkheadFull) {
			t.Errorf("a 4th call with 3 in flight and limit 3: err %v, want ErrBulkheadFull", err)
		}
		s.MinLimit, s.MaxLimit, s.InitialLimit = 8, 50, 8
		bh.Update(s) // a second reload while the calls are in flight
		if got := bh.Limit(); got != 8 {
			t.Errorf("min_limit 8 above it: limit %d, want 8 (clamped)", got)
		}
		if e := lastReported(); e.OldLimit != 3 || e.NewLimit != 8 {
			t.Errorf("clamp to 8: last bulkhead.limit_changed %+v, want 3 -> 8", e)
		}
		for _, r := range open {
			r.Body.Close()
		}
		if got := bh.InUse(); got != 0 {
			t.Errorf("after the old calls ended: InUse %d, want 0", got)
		}
		for range 8 { // every place is free again
			resp, err := getVia(t.Context(), rt)
			if err != nil {
				t.Fatalf("calls up to the limit after the old ones ended: %v", err)
			}
			defer resp.Body.Close()
		}
	})
}

// TestAdaptiveBulkheadModeSwitchStartsAfresh: Update into mode static
// serves max_concurrent, and back into adaptive starts at initial_limit,
// not at the limit learned before.
func TestAdaptiveBulkheadModeSwitchStartsAfresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := adaptiveBulkhead(1, 200, 20)
		bh := middleware.NewBulkhead(s, middleware.BulkheadOptions{})
		rt := bh.Middleware()(fakert.New(fakert.Step{Delay: 20 * time.Millisecond}))
		learn(t, rt, 150)
		if got := bh.Limit(); got >= 20 {
			t.Fatalf("learned limit %d, want below 20", got)
		}
		static := s
		static.Mode, static.MaxConcurrent = middleware.BulkheadStatic, 7
		bh.Update(static)
		if got, mode := bh.Limit(), bh.Mode(); got != 7 || mode != middleware.BulkheadStatic {
			t.Errorf("static: limit %d, mode %s, want 7, static", got, mode)
		}
		bh.Update(s)
		if got, mode := bh.Limit(), bh.Mode(); got != 20 || mode != middleware.BulkheadAdaptive {
			t.Errorf("adaptive again: limit %d, mode %s, want 20 (initial_limit), adaptive", got, mode)
		}
	})
}

// TestAdaptiveBulkheadWaiterAcrossUpdate: a caller waiting when new bounds
// replace the limiter, and granted a permit of the old one, waits on at
// the new one, so that it counts there.
func TestAdaptiveBulkheadWaiterAcrossUpdate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := adaptiveBulkhead(1, 1, 1)
		bh := middleware.NewBulkhead(s, middleware.BulkheadOptions{})
		rt := bh.Middleware()(fakert.New(fakert.Step{Body: "x"}))
		held, err := getVia(t.Context(), rt)
		if err != nil {
			t.Fatal(err)
		}
		got := callInBackground(t, t.Context(), rt)
		synctest.Wait() // the second caller waits for the permit
		s.MaxLimit = 2
		bh.Update(s)
		held.Body.Close()
		resp := <-got
		if n := bh.InUse(); n != 1 {
			t.Errorf("the waiter, granted after the update: InUse %d, want 1", n)
		}
		resp.Body.Close()
		if n := bh.InUse(); n != 0 {
			t.Errorf("after it ended: InUse %d, want 0", n)
		}
	})
}

// TestAdaptiveBulkheadPanickingObserver: an Observer that panics on
// bulkhead.limit_changed panics in the caller that ended the call (where
// it can be recovered), not inside the limiter (where it was a fatal
// "unlock of unlocked RWMutex"), and the permit is given back first.
func TestAdaptiveBulkheadPanickingObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var panics atomic.Int64
		ev := &middleware.Events{Client: "billing", Observer: middleware.ObserverFunc(func(_ context.Context, e middleware.Event) {
			if e.Name == middleware.EventBulkheadLimitChanged {
				panics.Add(1)
				panic("observer failed")
			}
		})}
		bh := middleware.NewBulkhead(adaptiveBulkhead(1, 200, 20), middleware.BulkheadOptions{Events: ev})
		rt := bh.Middleware()(fakert.New(fakert.Step{Delay: 20 * time.Millisecond, Body: "x"}))
		for range 150 {
			resp, err := getVia(t.Context(), rt)
			if err != nil {
				t.Fatal(err)
			}
			func() {
				defer func() { recover() }()
				resp.Body.Close()
			}()
		}
		if panics.Load() == 0 {
			t.Fatalf("limit %d: the observer never saw a limit change", bh.Limit())
		}
		if got := bh.InUse(); got != 0 {
			t.Errorf("InUse %d after every call ended, want 0 (no permit lost to a panic)", got)
		}
	})
}

// TestAdaptiveBulkheadReloadNeverExceedsLimit: with two calls A and B in
// flight on a limiter of 2 and a waiter W, new bounds keep the limit 2;
// A ends, W is admitted; B still runs, so a fourth call must be refused:
// each call gives back only the placeholder that stands for it.
func TestAdaptiveBulkheadReloadNeverExceedsLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := adaptiveBulkhead(2, 2, 2)
		bh := middleware.NewBulkhead(s, middleware.BulkheadOptions{})
		rt := bh.Middleware()(fakert.New(fakert.Step{Body: "x"}))
		a, err := getVia(t.Context(), rt)
		if err != nil {
			t.Fatal(err)
		}
		b, err := getVia(t.Context(), rt)
		if err != nil {
			t.Fatal(err)
		}
		got := callInBackground(t, t.Context(), rt)
		synctest.Wait() // W waits
		s.MinLimit, s.MaxLimit = 1, 3
		bh.Update(s)
		if n, l := bh.InUse(), bh.Limit(); n != 2 || l != 2 {
			t.Fatalf("after new bounds: InUse %d, limit %d, want 2, 2 (A and B count)", n, l)
		}
		a.Body.Close()
		w := <-got
		if n := bh.InUse(); n != 2 {
			t.Errorf("A ended, W admitted, B running: InUse %d, want 2", n)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if resp, err := getVia(ctx, rt); !errors.Is(err, middleware.ErrBulkheadFull) {
			if err == nil {
				resp.Body.Close()
			}
			t.Errorf("a third call with B and W running, limit 2: err %v, want ErrBulkheadFull", err)
		}
		b.Body.Close()
		w.Body.Close()
		if n := bh.InUse(); n != 0 {
			t.Errorf("all ended: InUse %d, want 0", n)
		}
	})
}

// TestAdaptiveBulkheadWaiterMovesOnUpdate: a caller waiting on a full
// limiter is admitted at once when new bounds raise the limit, or when
// Update switches to mode static with room, while the call that filled
// the limiter still runs.
func TestAdaptiveBulkheadWaiterMovesOnUpdate(t *testing.T) {
	for _, tt := range []struct {
		name string
		next func(middleware.BulkheadSettings) middleware.BulkheadSettings
	}{
		{"raised min_limit", func(s middleware.BulkheadSettings) middleware.BulkheadSettings {
			s.MinLimit, s.MaxLimit, s.InitialLimit = 2, 4, 2
			return s
		}},
		{"mode static", func(s middleware.BulkheadSettings) middleware.BulkheadSettings {
			s.Mode, s.MaxConcurrent = middleware.BulkheadStatic, 4
			return s
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := adaptiveBulkhead(1, 1, 1)
				bh := middleware.NewBulkhead(s, middleware.BulkheadOptions{})
				rt := bh.Middleware()(fakert.New(fakert.Step{Body: "x"}))
				held, err := getVia(t.Context(), rt)
				if err != nil {
					t.Fatal(err)
				}
				defer held.Body.Close()
				got := callInBackground(t, t.Context(), rt)
				synctest.Wait() // the second caller waits
				start := time.Now()
				bh.Update(tt.next(s))
				resp := <-got
				if resp == nil {
					t.FailNow()
				}
				resp.Body.Close()
				if d := time.Since(start); d != 0 {
					t.Errorf("waiter admitted %v after the update, want at once", d)
				}
			})
		})
	}
}

// TestBulkheadAdaptiveBounds: a zero limit stands for its default, the
// one rule that the bulkhead and config's validation share.
func TestBulkheadAdaptiveBounds(t *testing.T) {
	lo, hi, initial := middleware.BulkheadSettings{MaxLimit: 50}.AdaptiveBounds()
	if lo != middleware.DefaultBulkheadMinLimit || hi != 50 || initial != middleware.DefaultBulkheadInitialLimit {
		t.Errorf("AdaptiveBounds of {MaxLimit: 50} = %d, %d, %d, want %d, 50, %d", lo, hi, initial,
			middleware.DefaultBulkheadMinLimit, middleware.DefaultBulkheadInitialLimit)
	}
}

// rtFunc adapts a function to http.RoundTripper.
type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestBulkheadContractInBothModes: in each mode, with a limit of 1, a
// layer below that panics or returns neither a response nor an error
// gives the slot back (the next call is admitted, InUse is 0), and a call
// refused has its request body closed.
func TestBulkheadContractInBothModes(t *testing.T) {
	modes := map[string]middleware.BulkheadSettings{
		"static":   {MaxConcurrent: 1},
		"adaptive": {Mode: middleware.BulkheadAdaptive, MinLimit: 1, MaxLimit: 1, InitialLimit: 1},
	}
	for name, s := range modes {
		t.Run(name, func(t *testing.T) {
			bh := middleware.NewBulkhead(s, middleware.BulkheadOptions{})
			ok := bh.Middleware()(fakert.New(fakert.Step{Body: "x"}))
			free := func(what string) {
				t.Helper()
				if n := bh.InUse(); n != 0 {
					t.Fatalf("after %s: InUse %d, want 0", what, n)
				}
				resp, err := getVia(t.Context(), ok)
				if err != nil {
					t.Fatalf("after %s: the next call: %v, want admitted", what, err)
				}
				resp.Body.Close()
			}

			panics := bh.Middleware()(rtFunc(func(*http.Request) (*http.Response, error) { panic("below") }))
			func() {
				defer func() {
					if recover() == nil {
						t.Error("the panic below did not reach the caller")
					}
				}()
				getVia(t.Context(), panics)
			}()
			free("a panic below")

			neither := bh.Middleware()(rtFunc(func(*http.Request) (*http.Response, error) { return nil, nil }))
			if resp, err := getVia(t.Context(), neither); resp != nil || err == nil {
				t.Errorf("neither response nor error below: got %v, %v, want an error", resp, err)
			}
			free("neither a response nor an error")

			held, err := getVia(t.Context(), ok)
			if err != nil {
				t.Fatal(err)
			}
			body := &limTrackedBody{Reader: strings.NewReader("payload")}
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://svc.test/", body)
			if _, err := ok.RoundTrip(req); !errors.Is(err, middleware.ErrBulkheadFull) {
				t.Fatalf("with the slot held: err %v, want ErrBulkheadFull", err)
			}
			if !body.isClosed() {
				t.Error("request body not closed on refusal")
			}
			held.Body.Close()
			free("the held call ended")
		})
	}
}

// TestLatencySampleDropsACallWhoseContextEnded: a call answered 200 whose
// body ended after its context did (a Timeout layer above the bulkhead
// cut it with its deadline, which is not the caller's) is no sample.
func TestLatencySampleDropsACallWhoseContextEnded(t *testing.T) {
	ctx, cancel := context.WithDeadlineCause(context.Background(), time.Now().Add(-time.Second), middleware.ErrTimeoutCause)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://svc.test/", nil)
	if middleware.LatencySample(req, &http.Response{StatusCode: 200, Request: req}, nil) {
		t.Error("a 200 whose body a timeout cut is a sample; want dropped")
	}
	req = req.WithContext(context.Background())
	if !middleware.LatencySample(req, &http.Response{StatusCode: 200, Request: req}, nil) {
		t.Error("a 200 whose caller is there is no sample; want recorded")
	}
}

// callInBackground sends a GET through rt under ctx on a goroutine of its
// own and returns where its response arrives (nil after an error, which
// fails the test): a caller that will wait, for the test to act meanwhile.
func callInBackground(t *testing.T, ctx context.Context, rt http.RoundTripper) <-chan *http.Response {
	t.Helper()
	got := make(chan *http.Response, 1)
	go func() {
		resp, err := getVia(ctx, rt)
		if err != nil {
			t.Error(err)
		}
		got <- resp
	}()
	return got
}
