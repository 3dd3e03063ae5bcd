package middleware_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/internal/goroutines"
	"github.com/switchboard-http/switchboard/middleware"
)

// ctxSpy is a fakert step hook that keeps the context each request carried.
type ctxSpy struct{ ctxs []context.Context }

func (s *ctxSpy) hook(r *http.Request) { s.ctxs = append(s.ctxs, r.Context()) }

func TestTimeoutFires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev, rec := newEvents()
		rt := fakert.New(fakert.Step{Delay: time.Hour})
		start := time.Now()
		resp, err := middleware.Timeout(2*time.Second, middleware.TimeoutOptions{Events: ev})(rt).RoundTrip(newReq(t, context.Background(), "GET", ""))
		if resp != nil {
			t.Fatal("got a response, want none")
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want DeadlineExceeded", err)
		}
		var te *middleware.TimeoutError
		if !errors.As(err, &te) || te.Limit != 2*time.Second || te.PerAttempt {
			t.Fatalf("got %#v, want a call *TimeoutError of 2s", err)
		}
		if got := time.Since(start); got != 2*time.Second {
			t.Fatalf("got %v, want 2s", got)
		}
		evs := rec.named(middleware.EventTimeoutExceeded)
		if len(evs) != 1 || evs[0].Delay != 2*time.Second || evs[0].URL != "http://svc.test/v1/items?token=REDACTED&page=2" {
			t.Fatalf("got events %+v, want one timeout.exceeded with the redacted URL", evs)
		}
	})
}

func TestTimeoutDeadlines(t *testing.T) {
	dur := func(d time.Duration) *time.Duration { return &d }
	tests := []struct {
		name       string
		d          time.Duration
		override   *time.Duration
		callerIn   time.Duration // caller deadline; 0 = none
		wantIn     time.Duration // deadline the request carries; 0 = none
		wantCaller bool          // the caller's context is passed on untouched
	}{
		{name: "zero means none", d: 0, wantCaller: true},
		{name: "deadline set", d: 5 * time.Second, wantIn: 5 * time.Second},
		{name: "override replaces", d: 5 * time.Second, override: dur(time.Second), wantIn: time.Second},
		{name: "override longer", d: time.Second, override: dur(7 * time.Second), wantIn: 7 * time.Second},
		{name: "override zero means none", d: 5 * time.Second, override: dur(0), wantCaller: true},
		{name: "override enables", d: 0, override: dur(3 * time.Second), wantIn: 3 * time.Second},
		{name: "caller earlier: skipped", d: 5 * time.Second, callerIn: 2 * time.Second, wantIn: 2 * time.Second, wantCaller: true},
		{name: "caller equal: skipped", d: 5 * time.Second, callerIn: 5 * time.Second, wantIn: 5 * time.Second, wantCaller: true},
		{name: "caller later: ours", d: 5 * time.Second, callerIn: 9 * time.Second, wantIn: 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				if tt.override != nil {
					ctx = middleware.WithOverrides(ctx, middleware.Overrides{Timeout: tt.override})
				}
				if tt.callerIn > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.callerIn)
					defer cancel()
				}
				spy := &ctxSpy{}
				rt := fakert.New(fakert.Step{OnRequest: spy.hook})
				resp, err := middleware.Timeout(tt.d, middleware.TimeoutOptions{})(rt).RoundTrip(newReq(t, ctx, "GET", ""))
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				got := spy.ctxs[0]
				if (got == ctx) != tt.wantCaller {
					t.Fatalf("got caller's context passed on %v, want %v", got == ctx, tt.wantCaller)
				}
				dl, ok := got.Deadline()
				if tt.wantIn == 0 {
					if ok {
						t.Fatalf("got deadline in %v, want none", time.Until(dl))
					}
					return
				}
				if !ok || time.Until(dl) != tt.wantIn {
					t.Fatalf("got deadline %v (set %v), want in %v", time.Until(dl), ok, tt.wantIn)
				}
			})
		})
	}
}

func TestTimeoutCallerDeadlineIsNotOurs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev, rec := newEvents()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		rt := fakert.New(fakert.Step{Delay: time.Hour})
		_, err := middleware.Timeout(5*time.Second, middleware.TimeoutOptions{Events: ev})(rt).RoundTrip(newReq(t, ctx, "GET", ""))
		var te *middleware.TimeoutError
		if !errors.Is(err, context.DeadlineExceeded) || errors.As(err, &te) {
			t.Fatalf("got %v, want the caller's DeadlineExceeded, not a *TimeoutError", err)
		}
		if len(rec.named(middleware.EventTimeoutExceeded)) != 0 {
			t.Fatal("caller's deadline reported as timeout.exceeded")
		}
	})
}

func TestTimeoutContextLivesUntilBodyDone(t *testing.T) {
	for _, end := range []string{"close", "eof"} {
		t.Run(end, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				spy := &ctxSpy{}
				rt := fakert.New(fakert.Step{Body: "payload", OnRequest: spy.hook})
				resp, err := middleware.Timeout(time.Minute, middleware.TimeoutOptions{})(rt).RoundTrip(newReq(t, context.Background(), "GET", ""))
				if err != nil {
					t.Fatal(err)
				}
				ctx := spy.ctxs[0]
				if ctx.Err() != nil {
					t.Fatal("context cancelled on return; the body could not be read")
				}
				if end == "close" {
					resp.Body.Close()
				} else {
					b, err := io.ReadAll(resp.Body)
					if err != nil || string(b) != "payload" {
						t.Fatalf("got %q, %v; want payload", b, err)
					}
				}
				if !errors.Is(ctx.Err(), context.Canceled) {
					t.Fatalf("got context error %v after %s, want Canceled", ctx.Err(), end)
				}
				resp.Body.Close()
			})
		})
	}
}

func TestTimeoutFiresWhileReadingBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev, rec := newEvents()
		// The body blocks until the request context ends.
		blocking := middleware.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Body: ctxBody{r.Context()}}, nil
		})
		resp, err := middleware.Timeout(3*time.Second, middleware.TimeoutOptions{Events: ev})(blocking).RoundTrip(newReq(t, context.Background(), "GET", ""))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		start := time.Now()
		_, err = io.ReadAll(resp.Body)
		var te *middleware.TimeoutError
		if !errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want a *TimeoutError", err)
		}
		if got := time.Since(start); got != 3*time.Second {
			t.Fatalf("got %v, want 3s", got)
		}
		if len(rec.named(middleware.EventTimeoutExceeded)) != 1 {
			t.Fatal("want one timeout.exceeded event")
		}
	})
}

// ctxBody blocks in Read until its context ends.
type ctxBody struct{ ctx context.Context }

func (b ctxBody) Read([]byte) (int, error) {
	<-b.ctx.Done()
	return 0, b.ctx.Err()
}
func (ctxBody) Close() error { return nil }

func TestTimeoutNoBodyCancelsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spy := &ctxSpy{}
		rt := middleware.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
			spy.hook(r)
			return &http.Response{StatusCode: 204, Body: http.NoBody}, nil
		})
		resp, err := middleware.Timeout(time.Minute, middleware.TimeoutOptions{})(rt).RoundTrip(newReq(t, context.Background(), "GET", ""))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Body != http.NoBody || spy.ctxs[0].Err() == nil {
			t.Fatal("want NoBody passed through and the context cancelled")
		}
	})
}

func TestAttemptTimeoutWithRetry(t *testing.T) {
	dur := func(d time.Duration) *time.Duration { return &d }
	tests := []struct {
		name     string
		d        time.Duration
		override *time.Duration
		want     time.Duration // total time: attempt timeout + 1s backoff
	}{
		{"configured", 2 * time.Second, nil, 3 * time.Second},
		{"override", 2 * time.Second, dur(5 * time.Second), 6 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				if tt.override != nil {
					ctx = middleware.WithOverrides(ctx, middleware.Overrides{AttemptTimeout: tt.override})
				}
				rt := fakert.New(fakert.Step{Delay: time.Hour}, fakert.Step{Body: "ok"})
				pipeline := middleware.Chain(
					middleware.Retry(fixedSettings(), middleware.RetryOptions{}),
					middleware.AttemptTimeout(tt.d, middleware.TimeoutOptions{}),
				)(rt)
				start := time.Now()
				resp, err := pipeline.RoundTrip(newReq(t, ctx, "GET", ""))
				if err != nil {
					t.Fatal(err)
				}
				if body := readAll(t, resp); body != "ok" {
					t.Fatalf("got %q, want ok", body)
				}
				if got := time.Since(start); got != tt.want {
					t.Fatalf("got %v, want %v", got, tt.want)
				}
			})
		})
	}
	t.Run("error is a per-attempt TimeoutError", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rt := fakert.New(fakert.Step{Delay: time.Hour})
			_, err := middleware.AttemptTimeout(time.Second, middleware.TimeoutOptions{})(rt).RoundTrip(newReq(t, context.Background(), "GET", ""))
			var te *middleware.TimeoutError
			if !errors.As(err, &te) || !te.PerAttempt || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v, want a per-attempt *TimeoutError", err)
			}
		})
	})
}

// An attempt cut off by attempt_timeout is reported even when the retry
// that follows succeeds: ops must see slow attempts, not only failed calls.
func TestAttemptTimeoutEmitsEventWithAttemptNumber(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev, rec := newEvents()
		rt := fakert.New(fakert.Step{Delay: time.Hour}, fakert.Step{Delay: time.Hour}, fakert.Step{Body: "ok"})
		pipeline := middleware.Chain(
			middleware.Retry(fixedSettings(), middleware.RetryOptions{}),
			middleware.AttemptTimeout(2*time.Second, middleware.TimeoutOptions{Events: ev}),
		)(rt)
		resp, err := pipeline.RoundTrip(newReq(t, context.Background(), "GET", ""))
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		got := rec.named(middleware.EventTimeoutExceeded)
		if len(got) != 2 {
			t.Fatalf("got %d timeout.exceeded events, want 2 (attempts 1 and 2)", len(got))
		}
		for i, e := range got {
			if e.Attempt != i+1 || e.Reason != "attempt_timeout" || e.Delay != 2*time.Second || e.Client != "billing" {
				t.Errorf("event %d: got attempt %d, reason %q, delay %v, client %q; want %d, attempt_timeout, 2s, billing",
					i, e.Attempt, e.Reason, e.Delay, e.Client, i+1)
			}
		}
	})
}

func TestTimeoutOverRetryStopsWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Timeout 4s: attempts at 0s and 1s; the next wait (2s) would end at 3s,
		// fine; the one after (4s) would end at 7s: the last 503 comes back.
		rt := fakert.New(fakert.Step{Status: 503, Body: "busy"})
		pipeline := middleware.Chain(
			middleware.Timeout(4*time.Second, middleware.TimeoutOptions{}),
			middleware.Retry(fixedSettings(), middleware.RetryOptions{}),
		)(rt)
		start := time.Now()
		resp, err := pipeline.RoundTrip(newReq(t, context.Background(), "GET", ""))
		if err != nil {
			t.Fatal(err)
		}
		if body := readAll(t, resp); resp.StatusCode != 503 || body != "busy" {
			t.Fatalf("got %d %q, want 503 busy", resp.StatusCode, body)
		}
		if rt.Calls() != 3 || time.Since(start) != 3*time.Second {
			t.Fatalf("got %d calls after %v, want 3 after 3s", rt.Calls(), time.Since(start))
		}
	})
}

func TestTimeoutDuringRetryWaitIsTimeoutError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The fake is slow, so the deadline fires during the second attempt.
		rt := fakert.New(fakert.Step{Status: 503}, fakert.Step{Delay: time.Hour})
		ev, rec := newEvents()
		pipeline := middleware.Chain(
			middleware.Timeout(4*time.Second, middleware.TimeoutOptions{Events: ev}),
			middleware.Retry(fixedSettings(), middleware.RetryOptions{}),
		)(rt)
		start := time.Now()
		_, err := pipeline.RoundTrip(newReq(t, context.Background(), "GET", ""))
		var te *middleware.TimeoutError
		if !errors.As(err, &te) || time.Since(start) != 4*time.Second {
			t.Fatalf("got %v after %v, want a *TimeoutError after 4s", err, time.Since(start))
		}
		if len(rec.named(middleware.EventTimeoutExceeded)) != 1 || rt.OpenBodies() != 0 {
			t.Fatal("want one timeout.exceeded event and no open bodies")
		}
	})
}

func TestTimeoutErrorText(t *testing.T) {
	tests := []struct {
		err  *middleware.TimeoutError
		want string
	}{
		{&middleware.TimeoutError{Limit: time.Second}, "switchboard: timeout of 1s exceeded"},
		{&middleware.TimeoutError{Limit: time.Second, PerAttempt: true, Err: io.EOF}, "switchboard: attempt timeout of 1s exceeded: EOF"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
		if !tt.err.Timeout() || !errors.Is(tt.err, context.DeadlineExceeded) {
			t.Errorf("%v: want Timeout() and errors.Is DeadlineExceeded", tt.err)
		}
	}
}

func BenchmarkTimeout(b *testing.B) {
	benchRT(b, middleware.Timeout(30*time.Second, middleware.TimeoutOptions{})(prebuilt()))
}

func TestTimeoutRetriesStartNoGoroutine(t *testing.T) {
	// A retry marks its attempt's context with context.WithValue; the
	// contexts derived below it (the attempt timeout's, a transport's) must
	// still find the timeout layer's, or the context package starts a
	// goroutine for each.
	synctest.Test(t, func(t *testing.T) {
		var counts []int
		n := 0
		rt := middleware.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
			n++
			_, cancel := context.WithCancelCause(r.Context()) // as *http.Transport does
			defer cancel(nil)
			counts = append(counts, goroutines.ContextWatchers())
			code := http.StatusServiceUnavailable
			if n >= 3 {
				code = http.StatusOK
			}
			return &http.Response{StatusCode: code, Body: http.NoBody, Request: r}, nil
		})
		pipeline := middleware.Chain(
			middleware.Timeout(time.Hour, middleware.TimeoutOptions{}),
			middleware.Retry(fixedSettings(), middleware.RetryOptions{}),
			middleware.AttemptTimeout(time.Minute, middleware.TimeoutOptions{}),
		)(rt)
		resp, err := pipeline.RoundTrip(newReq(t, context.Background(), "GET", ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if !slices.Equal(counts, []int{0, 0, 0}) {
			t.Errorf("context watcher goroutines seen by attempts 1 to 3: %v; want none", counts)
		}
	})
}
