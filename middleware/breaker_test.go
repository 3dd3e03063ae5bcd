package middleware_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-http/switchboard/middleware"
)

// errBkRefused is the transport error of bkFake.
var errBkRefused = errors.New("dial tcp: connection refused")

// bkFake is a scripted RoundTripper for breaker tests. Each call answers
// with the current status (0: the transport error errBkRefused). While a
// gate is set (block), calls wait for it to close; a call to the path
// "/slow" always waits for the slow gate and then answers 503. A waiting
// call whose context ends returns the context's error, as net/http does.
type bkFake struct {
	mu     sync.Mutex
	status int
	gate   chan struct{}
	slow   chan struct{}
	calls  int
}

func newBkFake() *bkFake { return &bkFake{status: http.StatusOK, slow: make(chan struct{})} }

func (f *bkFake) set(status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status = status
}

// block makes the next calls wait until the returned channel is closed.
func (f *bkFake) block() chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gate = make(chan struct{})
	return f.gate
}

func (f *bkFake) unblock() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gate = nil
}

func (f *bkFake) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *bkFake) RoundTrip(req *http.Request) (*http.Response, error) {
	f.mu.Lock()
	f.calls++
	status, gate := f.status, f.gate
	f.mu.Unlock()
	if req.Body != nil {
		req.Body.Close()
	}
	ctx := req.Context()
	if req.URL.Path == "/slow" {
		gate, status = f.slow, http.StatusServiceUnavailable
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if status == 0 {
		return nil, errBkRefused
	}
	return &http.Response{StatusCode: status, Body: http.NoBody, Request: req}, nil
}

// bk is a breaker over a bkFake.
type bk struct {
	b  *middleware.Breaker
	f  *bkFake
	rt http.RoundTripper
}

func newBk(s middleware.BreakerSettings, o middleware.BreakerOptions) *bk {
	f := newBkFake()
	b := middleware.NewBreaker(s, o)
	return &bk{b: b, f: f, rt: b.Middleware()(f)}
}

// bkSettings returns enabled consecutive settings: threshold 3, cooldown
// 10s, one probe, one success to close; mut adjusts them.
func bkSettings(mut func(*middleware.BreakerSettings)) middleware.BreakerSettings {
	s := middleware.DefaultBreakerSettings()
	s.Enabled = true
	s.FailureThreshold = 3
	s.Cooldown = 10 * time.Second
	if mut != nil {
		mut(&s)
	}
	return s
}

// do makes one call to rawURL with ctx and closes the response body.
func (h *bk) do(t *testing.T, ctx context.Context, rawURL string) error {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := h.rt.RoundTrip(req)
	if err != nil {
		if resp != nil {
			t.Errorf("RoundTrip returned a response with error %v", err)
		}
		return err
	}
	resp.Body.Close()
	return nil
}

// call makes one call to http://svc.test/ answered with status.
func (h *bk) call(t *testing.T, status int) error {
	t.Helper()
	h.f.set(status)
	return h.do(t, context.Background(), "http://svc.test/?token=s3cr3t")
}

// calls makes n calls answered with status and fails on a rejection.
func (h *bk) calls(t *testing.T, n, status int) {
	t.Helper()
	for i := range n {
		if err := h.call(t, status); errors.Is(err, middleware.ErrCircuitOpen) {
			t.Fatalf("call %d of %d (status %d): rejected: %v", i+1, n, status, err)
		}
	}
}

func (h *bk) wantState(t *testing.T, want middleware.BreakerState) {
	t.Helper()
	if got := h.b.State(); got != want {
		t.Fatalf("State() = %v, want %v", got, want)
	}
}

// wantRejected makes one call and checks that it is rejected, without
// reaching the backend, with RetryIn == retryIn.
func (h *bk) wantRejected(t *testing.T, retryIn time.Duration) {
	t.Helper()
	before := h.f.count()
	err := h.call(t, http.StatusOK)
	var ce *middleware.CircuitOpenError
	if !errors.As(err, &ce) || !errors.Is(err, middleware.ErrCircuitOpen) {
		t.Fatalf("err = %v, want a *CircuitOpenError matching ErrCircuitOpen", err)
	}
	if ce.RetryIn != retryIn {
		t.Errorf("RetryIn = %v, want %v", ce.RetryIn, retryIn)
	}
	if n := h.f.count() - before; n != 0 {
		t.Errorf("a rejected call reached the backend %d times", n)
	}
}

// wantAdmitted makes one successful call and checks it reached the backend.
func (h *bk) wantAdmitted(t *testing.T) {
	t.Helper()
	before := h.f.count()
	if err := h.call(t, http.StatusOK); err != nil {
		t.Fatalf("call: %v, want it admitted", err)
	}
	if h.f.count() != before+1 {
		t.Fatalf("the call did not reach the backend")
	}
}

func TestBreakerConsecutive(t *testing.T) {
	const cooldown = 10 * time.Second
	t.Run("opens at the Nth consecutive failure", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newBk(bkSettings(nil), middleware.BreakerOptions{})
			h.calls(t, 2, 500)
			h.calls(t, 1, 200) // resets the count
			h.calls(t, 2, 0)
			h.wantState(t, middleware.BreakerClosed)
			h.calls(t, 1, 503)
			h.wantState(t, middleware.BreakerOpen)
			h.wantRejected(t, cooldown)
		})
	})
	t.Run("rejects until exactly the cooldown has passed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newBk(bkSettings(nil), middleware.BreakerOptions{})
			h.calls(t, 3, 500)
			time.Sleep(cooldown - time.Nanosecond)
			h.wantRejected(t, time.Nanosecond)
			h.wantState(t, middleware.BreakerOpen)
			time.Sleep(time.Nanosecond)
			h.wantState(t, middleware.BreakerHalfOpen)
			h.wantAdmitted(t)
		})
	})
	t.Run("half-open closes after SuccessThreshold successes", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newBk(bkSettings(func(s *middleware.BreakerSettings) { s.SuccessThreshold = 2 }), middleware.BreakerOptions{})
			h.calls(t, 3, 500)
			time.Sleep(cooldown)
			h.wantAdmitted(t)
			h.wantState(t, middleware.BreakerHalfOpen)
			h.wantAdmitted(t)
			h.wantState(t, middleware.BreakerClosed)
			h.calls(t, 2, 500) // counting starts afresh
			h.wantState(t, middleware.BreakerClosed)
		})
	})
	t.Run("half-open failure reopens and restarts the cooldown", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newBk(bkSettings(nil), middleware.BreakerOptions{})
			h.calls(t, 3, 500)
			time.Sleep(cooldown + 5*time.Second)
			h.calls(t, 1, 502)
			h.wantState(t, middleware.BreakerOpen)
			h.wantRejected(t, cooldown)
			time.Sleep(cooldown - time.Nanosecond)
			h.wantRejected(t, time.Nanosecond)
			time.Sleep(time.Nanosecond)
			h.wantAdmitted(t)
			h.wantState(t, middleware.BreakerClosed)
		})
	})
	t.Run("outcomes from an older generation do not count", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newBk(bkSettings(func(s *middleware.BreakerSettings) { s.FailureThreshold = 2 }), middleware.BreakerOptions{})
			done := make(chan error)
			go func() { done <- h.do(t, context.Background(), "http://svc.test/slow") }()
			synctest.Wait() // admitted while closed, in flight
			h.calls(t, 2, 500)
			time.Sleep(cooldown)
			h.wantAdmitted(t) // the probe closes it
			close(h.f.slow)   // the old call fails now, in the new closed state
			if err := <-done; err != nil {
				t.Fatalf("slow call: %v", err)
			}
			h.calls(t, 1, 500)
			h.wantState(t, middleware.BreakerClosed) // 1 failure, not 2
		})
	})
}

func TestBreakerRate(t *testing.T) {
	const window = 10 * time.Second
	rate := func(s *middleware.BreakerSettings) {
		s.Mode = middleware.BreakerRate
		s.FailureRateThreshold = 0.5
		s.Window = window
		s.MinimumCalls = 4
	}
	t.Run("opens only after MinimumCalls", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rec := &bkObserver{}
			h := newBk(bkSettings(rate), middleware.BreakerOptions{Events: &middleware.Events{Observer: rec}})
			h.calls(t, 3, 500)
			h.wantState(t, middleware.BreakerClosed)
			h.calls(t, 1, 0)
			h.wantState(t, middleware.BreakerOpen)
			h.wantRejected(t, 10*time.Second)
			opened := rec.named(middleware.EventCircuitOpened)
			if len(opened) != 1 || opened[0].Reason != "failure rate 1.00 over 4 calls in 10s" {
				t.Fatalf("opened events = %+v, want one with the rate as reason", opened)
			}
		})
	})
	t.Run("opens when the rate reaches the threshold", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newBk(bkSettings(rate), middleware.BreakerOptions{})
			h.calls(t, 3, 200)
			h.calls(t, 1, 500) // 1/4
			h.calls(t, 1, 500) // 2/5
			h.wantState(t, middleware.BreakerClosed)
			h.calls(t, 1, 500) // 3/6 = 0.5
			h.wantState(t, middleware.BreakerOpen)
		})
	})
	t.Run("failures age out of the window", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newBk(bkSettings(rate), middleware.BreakerOptions{})
			h.calls(t, 3, 500)
			time.Sleep(window)
			h.calls(t, 1, 500) // the 3 are out: 1 call
			h.wantState(t, middleware.BreakerClosed)
		})
	})
	t.Run("failures count until the window has passed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newBk(bkSettings(rate), middleware.BreakerOptions{})
			h.calls(t, 3, 500)
			time.Sleep(window - time.Nanosecond)
			h.calls(t, 1, 500)
			h.wantState(t, middleware.BreakerOpen)
		})
	})
	t.Run("closing starts a fresh window", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newBk(bkSettings(rate), middleware.BreakerOptions{})
			h.calls(t, 4, 500)
			time.Sleep(10 * time.Second)
			h.wantAdmitted(t)
			h.wantState(t, middleware.BreakerClosed)
			h.calls(t, 3, 500)
			h.wantState(t, middleware.BreakerClosed)
		})
	})
}

func TestBreakerHalfOpenProbeBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const callers, probes = 50, 3
		h := newBk(bkSettings(func(s *middleware.BreakerSettings) {
			s.HalfOpenMaxRequests = probes
			s.SuccessThreshold = probes
		}), middleware.BreakerOptions{})
		h.calls(t, 3, 500)
		time.Sleep(10 * time.Second)
		h.f.set(200)
		gate := h.f.block()
		before := h.f.count()
		var rejected atomic.Int32
		var wg sync.WaitGroup
		for range callers {
			wg.Go(func() {
				err := h.do(t, context.Background(), "http://svc.test/")
				var ce *middleware.CircuitOpenError
				switch {
				case errors.As(err, &ce) && ce.RetryIn == 0:
					rejected.Add(1)
				case err != nil:
					t.Errorf("call: %v", err)
				}
			})
		}
		synctest.Wait() // every caller is rejected or blocked in the backend
		if got := h.f.count() - before; got != probes {
			t.Errorf("probes admitted = %d, want %d", got, probes)
		}
		if got := rejected.Load(); got != callers-probes {
			t.Errorf("rejected = %d, want %d", got, callers-probes)
		}
		close(gate)
		wg.Wait()
		h.wantState(t, middleware.BreakerClosed)
	})
}

func TestBreakerAbandonedProbeFreesItsSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newBk(bkSettings(nil), middleware.BreakerOptions{})
		h.calls(t, 3, 500)
		time.Sleep(10 * time.Second)
		h.f.set(500)
		gate := h.f.block()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- h.do(t, ctx, "http://svc.test/") }()
		synctest.Wait()
		h.wantRejected(t, 0) // the one slot is taken
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("abandoned probe: %v, want context.Canceled", err)
		}
		close(gate)
		h.f.unblock()
		h.wantState(t, middleware.BreakerHalfOpen) // not a failure: still half-open
		h.wantAdmitted(t)                          // the slot is free again
		h.wantState(t, middleware.BreakerClosed)
	})
}

func TestBreakerCallerCancellationCountsAsNeither(t *testing.T) {
	tests := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}},
		{"caller's deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), time.Second)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newBk(bkSettings(func(s *middleware.BreakerSettings) { s.FailureThreshold = 2 }), middleware.BreakerOptions{})
				h.calls(t, 1, 500)
				gate := h.f.block()
				for range 5 {
					ctx, cancel := tt.ctx()
					if err := h.do(t, ctx, "http://svc.test/"); err == nil {
						t.Fatal("call with an ended context succeeded")
					}
					cancel()
				}
				close(gate)
				h.f.unblock()
				h.wantState(t, middleware.BreakerClosed) // not failures
				h.calls(t, 1, 500)
				h.wantState(t, middleware.BreakerOpen) // and not successes: the count was kept
			})
		})
	}
}
