package middleware_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/internal/goroutines"
	"github.com/switchboard-http/switchboard/middleware"
)

func TestTimeoutBehaviour(t *testing.T) {
	opts := func(ev *middleware.Events) middleware.TimeoutOptions {
		return middleware.TimeoutOptions{Events: ev}
	}
	t.Run("fires in RoundTrip", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ev, rec := newEvents()
			rt := fakert.New(fakert.Step{Delay: time.Hour})
			_, err := middleware.Timeout(2*time.Second, opts(ev))(rt).RoundTrip(newReq(t, context.Background(), "GET", ""))
			var te *middleware.TimeoutError
			if !errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) || len(rec.named(middleware.EventTimeoutExceeded)) != 1 {
				t.Fatalf("got %v, want a *TimeoutError and one event", err)
			}
		})
	})
	t.Run("fires while the body is read, after the caller's context ended", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ev, rec := newEvents()
			blocking := middleware.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: 200, Body: ctxBody{r.Context()}}, nil
			})
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			defer cancel()
			resp, err := middleware.Timeout(time.Second, opts(ev))(blocking).RoundTrip(newReq(t, ctx, "GET", ""))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			time.Sleep(2 * time.Second) // the layer's deadline passed at 1s, the caller's at 1.5s
			_, err = io.ReadAll(resp.Body)
			var te *middleware.TimeoutError
			if !errors.As(err, &te) || len(rec.named(middleware.EventTimeoutExceeded)) != 1 {
				t.Fatalf("got %v, want a *TimeoutError and one event: the layer's deadline came first", err)
			}
		})
	})
	t.Run("the caller's cancel is not a timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(time.Second, cancel)
			rt := fakert.New(fakert.Step{Delay: time.Hour})
			_, err := middleware.Timeout(time.Minute, opts(nil))(rt).RoundTrip(newReq(t, ctx, "GET", ""))
			var te *middleware.TimeoutError
			if !errors.Is(err, context.Canceled) || errors.As(err, &te) {
				t.Fatalf("got %v, want context.Canceled, not a *TimeoutError", err)
			}
		})
	})
	t.Run("an earlier caller deadline adds nothing", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			spy := &ctxSpy{}
			rt := fakert.New(fakert.Step{OnRequest: spy.hook})
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			resp, err := middleware.Timeout(time.Minute, opts(nil))(rt).RoundTrip(newReq(t, ctx, "GET", ""))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if spy.ctxs[0] != ctx {
				t.Error("the layer made a context although the caller's deadline is earlier")
			}
		})
	})
	t.Run("the breaker counts the layer's timeout as a failure", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := middleware.DefaultBreakerSettings()
			s.Enabled, s.FailureThreshold = true, 1
			b := middleware.NewBreaker(s, middleware.BreakerOptions{})
			rt := middleware.Chain(middleware.Timeout(time.Second, opts(nil)), b.Middleware())(fakert.New(fakert.Step{Delay: time.Hour}))
			if _, err := rt.RoundTrip(newReq(t, context.Background(), "GET", "")); err == nil {
				t.Fatal("want the timeout's error")
			}
			if got := b.State(); got != middleware.BreakerOpen {
				t.Errorf("breaker %v after the layer's own timeout, want open", got)
			}
		})
	})
	t.Run("a panic below releases the deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var seen context.Context
			panicky := middleware.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
				seen = r.Context()
				panic("boom")
			})
			func() {
				defer func() { _ = recover() }()
				_, _ = middleware.Timeout(time.Hour, opts(nil))(panicky).RoundTrip(newReq(t, context.Background(), "GET", ""))
			}()
			if !errors.Is(seen.Err(), context.Canceled) {
				t.Errorf("after a panic below: context %v, want cancelled at once", seen.Err())
			}
		})
	})
}

func TestTimeoutUnderAValueLayerStartsNoGoroutine(t *testing.T) {
	// A layer below that wraps the context with context.WithValue (tracing
	// does) and derives a cancelable context under it, as *http.Transport
	// does, must cost no goroutine: the timeout layers' contexts are the
	// standard library's, which the context package cancels through its own
	// bookkeeping, however they are wrapped.
	type key struct{}
	synctest.Test(t, func(t *testing.T) {
		var before, after int
		derive := middleware.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
			ctx := context.WithValue(r.Context(), key{}, "trace")
			before = goroutines.ContextWatchers()
			_, cancel := context.WithCancelCause(ctx) // as *http.Transport does
			after = goroutines.ContextWatchers()
			cancel(nil)
			return &http.Response{StatusCode: 200, Body: http.NoBody, Request: r}, nil
		})
		rt := middleware.Chain(
			middleware.Timeout(time.Minute, middleware.TimeoutOptions{}),
			middleware.AttemptTimeout(time.Second, middleware.TimeoutOptions{}),
		)(derive)
		resp, err := rt.RoundTrip(newReq(t, context.Background(), "GET", ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := after - before; got != 0 {
			t.Errorf("goroutines started: %d, want 0", got)
		}
	})
}
