package middleware_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-http/switchboard/middleware"
)

// adaptiveSettings is an enabled adaptive breaker with K and a 10s window.
func adaptiveSettings(k float64) middleware.BreakerSettings {
	return bkSettings(func(s *middleware.BreakerSettings) {
		s.Mode = middleware.BreakerAdaptive
		s.AdaptiveK = k
		s.Window = 10 * time.Second
	})
}

// formula is the SRE book's client-side rejection probability.
func formula(requests, accepts int, k float64) float64 {
	return math.Max(0, (float64(requests)-k*float64(accepts))/float64(requests+1))
}

// The rejection probability follows max(0, (requests − K·accepts) /
// (requests + 1)) at several points of a backend's decline, every rejected
// call counting as a request not accepted.
func TestAdaptiveRejectionProbabilityFollowsTheFormula(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		never := func() float64 { return 0.999999 } // draws that never reject (p < 1)
		h := newBk(adaptiveSettings(2), middleware.BreakerOptions{Rand: never})
		requests, accepts := 0, 0
		check := func(when string) {
			t.Helper()
			got := h.b.Probabilities()[""]
			if want := formula(requests, accepts, 2); math.Abs(got-want) > 1e-12 {
				t.Fatalf("%s: probability %v, want %v (requests %d, accepts %d)", when, got, want, requests, accepts)
			}
		}
		check("empty window")
		for range 10 { // healthy
			if err := h.do(t, context.Background(), "http://svc.test/"); err != nil {
				t.Fatal(err)
			}
			requests++
			accepts++
		}
		check("10 successes")
		h.f.set(http.StatusServiceUnavailable)
		for i := range 40 { // overloaded: the probability climbs past 0
			h.do(t, context.Background(), "http://svc.test/")
			requests++
			if i%10 == 9 {
				check("after failures")
			}
		}
		if p := h.b.Probabilities()[""]; p <= 0.5 {
			t.Fatalf("probability after 40 failures and 10 successes: got %v, want > 0.5", p)
		}
		// Past the window the counts age out: back to 0.
		time.Sleep(11 * time.Second)
		requests, accepts = 0, 0
		check("after the window")
	})
}

// With draws that always fall under the probability, a call is rejected
// locally with ErrCircuitOpen and EventCircuitRejected carrying the
// probability, never reaching the backend; the rejection counts as a
// request not accepted.
func TestAdaptiveRejectsLocallyWithTheProbability(t *testing.T) {
	var mu sync.Mutex
	var reasons []string
	ev := &middleware.Events{Client: "c", Observer: middleware.ObserverFunc(func(_ context.Context, e middleware.Event) {
		if e.Name == middleware.EventCircuitRejected {
			mu.Lock()
			reasons = append(reasons, e.Reason)
			mu.Unlock()
		}
	})}
	always := func() float64 { return 0 }
	h := newBk(adaptiveSettings(2), middleware.BreakerOptions{Rand: always, Events: ev})
	h.f.set(http.StatusServiceUnavailable)
	h.do(t, context.Background(), "http://svc.test/") // p(0,0) = 0: admitted, fails
	calls := h.f.count()
	err := h.do(t, context.Background(), "http://svc.test/")
	if !errors.Is(err, middleware.ErrCircuitOpen) {
		t.Fatalf("second call: got %v, want ErrCircuitOpen", err)
	}
	if h.f.count() != calls {
		t.Fatal("a throttled call reached the backend")
	}
	if len(reasons) != 1 || !strings.Contains(reasons[0], "rejection probability 0.500") {
		t.Fatalf("circuit.rejected reasons: got %q, want one with probability 0.500", reasons)
	}
	// requests 2 (one failure, one rejection), accepts 0: 2/3.
	if got, want := h.b.Probabilities()[""], formula(2, 0, 2); math.Abs(got-want) > 1e-12 {
		t.Fatalf("probability after a rejection: got %v, want %v", got, want)
	}
	if st := h.b.State(); st != middleware.BreakerClosed {
		t.Fatalf("adaptive state: got %v, want closed (it never opens)", st)
	}
}

// Local back-pressure is not counted: a bulkhead or rate-limit refusal is
// neither a request nor an accept.
func TestAdaptiveIgnoresLocalRejections(t *testing.T) {
	h := newBk(adaptiveSettings(2), middleware.BreakerOptions{Rand: func() float64 { return 0.999999 }})
	h.f.set(http.StatusServiceUnavailable)
	for range 5 { // 5 requests, 0 accepts
		h.do(t, context.Background(), "http://svc.test/")
	}
	local := middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		return nil, middleware.ErrBulkheadFull
	})
	rt := h.b.Middleware()(local)
	for range 5 {
		req, _ := http.NewRequest(http.MethodGet, "http://svc.test/", nil)
		rt.RoundTrip(req)
	}
	if got, want := h.b.Probabilities()[""], formula(5, 0, 2); math.Abs(got-want) > 1e-12 {
		t.Fatalf("probability after 5 failures and 5 bulkhead refusals: got %v, want %v (refusals not counted)", got, want)
	}
}

// A retune of K keeps the counts: the new K applies to them at once.
func TestAdaptiveRetuneKeepsCounts(t *testing.T) {
	h := newBk(adaptiveSettings(2), middleware.BreakerOptions{Rand: func() float64 { return 0.999999 }})
	h.do(t, context.Background(), "http://svc.test/")
	h.f.set(http.StatusServiceUnavailable)
	for range 3 {
		h.do(t, context.Background(), "http://svc.test/")
	}
	h.b.Update(adaptiveSettings(1.5))
	if got, want := h.b.Probabilities()[""], formula(4, 1, 1.5); math.Abs(got-want) > 1e-12 {
		t.Fatalf("probability after retuning K to 1.5: got %v, want %v (counts kept)", got, want)
	}
}

// TestAdaptiveRejectionNamesTheThrottle guards the defect where a call
// rejected by adaptive throttling, while the breaker is closed, said
// "waiting for the half-open probes in flight": its error names the
// adaptive throttling and the probability it rejected with.
func TestAdaptiveRejectionNamesTheThrottle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newBk(adaptiveSettings(2), middleware.BreakerOptions{Rand: func() float64 { return 0 }})
		h.call(t, http.StatusServiceUnavailable) // requests 1, accepts 0: probability 1/2
		err := h.call(t, http.StatusOK)
		var ce *middleware.CircuitOpenError
		if !errors.As(err, &ce) || !errors.Is(err, middleware.ErrCircuitOpen) {
			t.Fatalf("got %v, want a *CircuitOpenError matching ErrCircuitOpen", err)
		}
		if ce.Probability != 0.5 || ce.RetryIn != 0 {
			t.Errorf("Probability %v, RetryIn %v: want 0.5, 0", ce.Probability, ce.RetryIn)
		}
		msg := err.Error()
		if !strings.Contains(msg, "adaptive throttling") || !strings.Contains(msg, "0.500") || strings.Contains(msg, "half-open") {
			t.Errorf("message %q: want it to name the adaptive throttling and its probability 0.500, not half-open probes", msg)
		}
		h.wantState(t, middleware.BreakerClosed)
	})
}
