package middleware_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/middleware"
)

const ms = time.Millisecond

// hedgeOn returns hedge settings with delay d and max extra copies.
func hedgeOn(d time.Duration, maxHedges int) middleware.HedgeSettings {
	return middleware.HedgeSettings{Enabled: true, Delay: d, MaxHedges: maxHedges}
}

// retryFor returns retry settings that bound nothing but what hedging reads.
func retryFor(maxRetries int) middleware.RetrySettings {
	s := middleware.DefaultRetrySettings()
	s.MaxRetries = maxRetries
	s.AttemptHeader = "X-Attempt"
	return s
}

// arrivals returns when each request reached rt, from start.
func arrivals(rt *fakert.Transport, start time.Time) []time.Duration {
	var out []time.Duration
	for _, r := range rt.Requests() {
		out = append(out, r.At.Sub(start))
	}
	return out
}

func attempts(es []middleware.Event) []int {
	var out []int
	for _, e := range es {
		out = append(out, e.Attempt)
	}
	return out
}

func TestHedgeDelaysExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev, rec := newEvents()
		rt := fakert.New(
			fakert.Step{Delay: time.Second, Body: "first"},
			fakert.Step{Delay: 5 * time.Second, Body: "second"},
			fakert.Step{Delay: 5 * time.Second, Body: "third"},
		)
		h := middleware.Hedge(hedgeOn(100*ms, 2), retryFor(0), middleware.HedgeOptions{Events: ev})(rt)
		start := time.Now()
		resp, err := h.RoundTrip(newReq(t, context.Background(), "GET", ""))
		if err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != time.Second {
			t.Errorf("call took %v, want 1s (the first copy's answer)", got)
		}
		if got := readAll(t, resp); got != "first" {
			t.Errorf("body: got %q, want first", got)
		}
		if got, want := arrivals(rt, start), []time.Duration{0, 100 * ms, 200 * ms}; !slices.Equal(got, want) {
			t.Errorf("copies sent at %v, want %v", got, want)
		}
		var hdr []string
		for _, r := range rt.Requests() {
			hdr = append(hdr, r.Header.Get("X-Attempt"))
		}
		if want := []string{"1", "2", "3"}; !slices.Equal(hdr, want) {
			t.Errorf("X-Attempt: got %v, want %v", hdr, want)
		}
		synctest.Wait() // the losers' goroutines end on their cancellation
		if got := rt.OpenBodies(); got != 0 {
			t.Errorf("open bodies: got %d, want 0", got)
		}
		if got := attempts(rec.named(middleware.EventHedgeSent)); !slices.Equal(got, []int{2, 3}) {
			t.Errorf("hedge.sent attempts: got %v, want [2 3]", got)
		}
		if got := attempts(rec.named(middleware.EventHedgeWon)); !slices.Equal(got, []int{1}) {
			t.Errorf("hedge.won attempts: got %v, want [1]", got)
		}
		if got := attempts(rec.named(middleware.EventHedgeCancelled)); !slices.Equal(got, []int{2, 3}) {
			t.Errorf("hedge.cancelled attempts: got %v, want [2 3]", got)
		}
	})
}

func TestHedgeInFlightCapAndRetryableAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev, rec := newEvents()
		rt := fakert.New(
			fakert.Step{Delay: 30 * ms, Status: 503}, // does not win: the next copy goes at once
			fakert.Step{Delay: time.Second, Body: "slow"},
			fakert.Step{Delay: 50 * ms, Body: "third"},
		)
		h := middleware.Hedge(hedgeOn(100*ms, 1), retryFor(3), middleware.HedgeOptions{Events: ev})(rt)
		start := time.Now()
		resp, err := h.RoundTrip(newReq(t, context.Background(), "GET", ""))
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, resp); got != "third" {
			t.Errorf("body: got %q, want third", got)
		}
		// Copy 1 answers 503 at 30ms: copy 2 goes at once. At 130ms copy 3
		// joins copy 2 (two in flight: 1+max_hedges) and wins at 180ms.
		if got, want := arrivals(rt, start), []time.Duration{0, 30 * ms, 130 * ms}; !slices.Equal(got, want) {
			t.Errorf("copies sent at %v, want %v", got, want)
		}
		if got := time.Since(start); got != 180*ms {
			t.Errorf("call took %v, want 180ms", got)
		}
		synctest.Wait()
		if got := rt.OpenBodies(); got != 0 {
			t.Errorf("open bodies: got %d, want 0 (the 503 drained, the loser none)", got)
		}
		if got := attempts(rec.named(middleware.EventHedgeWon)); !slices.Equal(got, []int{3}) {
			t.Errorf("hedge.won: got %v, want [3]", got)
		}
		if got := attempts(rec.named(middleware.EventHedgeCancelled)); !slices.Equal(got, []int{2}) {
			t.Errorf("hedge.cancelled: got %v, want [2]", got)
		}
	})
}

func TestHedgeAllRetryableReturnsLastIntact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev, rec := newEvents()
		rt := fakert.New(fakert.Step{Status: 503, Body: "busy"})
		h := middleware.Hedge(hedgeOn(100*ms, 1), retryFor(2), middleware.HedgeOptions{Events: ev})(rt)
		resp, err := h.RoundTrip(newReq(t, context.Background(), "GET", ""))
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 503 || readAll(t, resp) != "busy" {
			t.Errorf("got %d, want the last 503 with its body", resp.StatusCode)
		}
		if got := rt.Calls(); got != 3 {
			t.Errorf("copies: got %d, want 3 (1 + max(max_hedges 1, max_retries 2))", got)
		}
		if got := rt.OpenBodies(); got != 0 {
			t.Errorf("open bodies: got %d, want 0", got)
		}
		if got := len(rec.named(middleware.EventRetryExhausted)); got != 1 {
			t.Errorf("retry.exhausted: got %d, want 1", got)
		}
	})
}

func TestHedgePercentileDelay(t *testing.T) {
	tests := []struct {
		name    string
		samples []time.Duration
		pct     float64
		want    time.Duration
	}{
		{"no samples: delay", nil, 0.9, 100 * ms},
		{"p90 of 1..10 x 50ms", []time.Duration{50 * ms, 100 * ms, 150 * ms, 200 * ms, 250 * ms, 300 * ms, 350 * ms, 400 * ms, 450 * ms, 500 * ms}, 0.9, 450 * ms},
		{"never below delay", []time.Duration{5 * ms, 6 * ms, 7 * ms}, 0.5, 100 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lat := middleware.NewLatencies()
				for _, d := range tt.samples {
					lat.Observe(d)
				}
				rt := fakert.New(fakert.Step{Delay: time.Second}, fakert.Step{Delay: 10 * time.Second})
				s := hedgeOn(100*ms, 1)
				s.DelayPercentile = tt.pct
				h := middleware.Hedge(s, retryFor(0), middleware.HedgeOptions{Latencies: lat})(rt)
				start := time.Now()
				resp, err := h.RoundTrip(newReq(t, context.Background(), "GET", ""))
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
				if got := arrivals(rt, start); len(got) != 2 || got[1] != tt.want {
					t.Fatalf("copies sent at %v, want the second at %v", got, tt.want)
				}
				if got, ok := lat.Percentile(1); !ok || got != time.Second && len(tt.samples) == 0 {
					t.Errorf("after the call: max latency %v, %v; want the answered 1s recorded", got, ok)
				}
			})
		})
	}
}

func TestLatenciesPercentile(t *testing.T) {
	var l middleware.Latencies
	if _, ok := l.Percentile(0.5); ok {
		t.Fatal("empty: got a percentile, want none")
	}
	for i := 1; i <= 300; i++ { // only the last 256 count: 45..300
		l.Observe(time.Duration(i) * ms)
	}
	for _, tt := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 172 * ms}, {1, 300 * ms}, {0.001, 45 * ms}} {
		if got, ok := l.Percentile(tt.p); !ok || got != tt.want {
			t.Errorf("Percentile(%v): got %v, %v; want %v", tt.p, got, ok, tt.want)
		}
	}
	if _, ok := l.Percentile(0); ok {
		t.Error("Percentile(0): got one, want none")
	}
}

func TestHedgeBudgetExhaustionStopsHedges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev, rec := newEvents()
		b := middleware.NewBudget(middleware.BudgetSettings{Ratio: 0, MinPerSecond: 0, TTL: 10 * time.Second}, middleware.BudgetOptions{})
		rt := fakert.New(fakert.Step{Delay: time.Second, Body: "only"})
		h := middleware.Hedge(hedgeOn(100*ms, 3), retryFor(0), middleware.HedgeOptions{Budget: b, Events: ev})(rt)
		resp, err := h.RoundTrip(newReq(t, context.Background(), "GET", ""))
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, resp); got != "only" {
			t.Errorf("body: got %q, want only", got)
		}
		if got := rt.Calls(); got != 1 {
			t.Errorf("copies: got %d, want 1 (an empty budget sends no hedge)", got)
		}
		if got := len(rec.named(middleware.EventHedgeSent)); got != 0 {
			t.Errorf("hedge.sent: got %d, want 0", got)
		}
		if got := len(rec.named(middleware.EventRetryBudgetExhausted)); got != 1 {
			t.Errorf("retry.budget_exhausted: got %d, want 1", got)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		// One token (ratio 1, one deposit): one hedge, not two.
		b := middleware.NewBudget(middleware.BudgetSettings{Ratio: 1, TTL: 10 * time.Second}, middleware.BudgetOptions{})
		rt := fakert.New(fakert.Step{Delay: time.Second})
		h := middleware.Hedge(hedgeOn(100*ms, 3), retryFor(0), middleware.HedgeOptions{Budget: b})(rt)
		resp, err := h.RoundTrip(newReq(t, context.Background(), "GET", ""))
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		if got := rt.Calls(); got != 2 {
			t.Errorf("copies: got %d, want 2 (one token, one hedge)", got)
		}
	})
}

func TestHedgeOnlyWhatRetryWouldRetry(t *testing.T) {
	tests := []struct {
		name   string
		method string
		body   func() io.Reader
		s      func(*middleware.RetrySettings)
		ctx    func(context.Context) context.Context
		want   int
	}{
		{name: "POST is never hedged", method: "POST", want: 1},
		{name: "PATCH with a body is never hedged", method: "PATCH", body: func() io.Reader { return strings.NewReader("x") }, want: 1},
		{name: "a body over max_buffered_body is sent once", method: "PUT",
			body: func() io.Reader { return newOpaqueBody("0123456789") },
			s:    func(s *middleware.RetrySettings) { s.MaxBufferedBody = 4 }, want: 1},
		{name: "a buffered PUT body is hedged", method: "PUT", body: func() io.Reader { return newOpaqueBody("0123") }, want: 2},
		{name: "POST with retry_all_methods is hedged", method: "POST",
			s: func(s *middleware.RetrySettings) { s.RetryAllMethods = true }, want: 2},
		{name: "an override of 0 retries sends one", method: "GET",
			ctx: func(ctx context.Context) context.Context {
				zero := 0
				return middleware.WithOverrides(ctx, middleware.Overrides{MaxRetries: &zero})
			}, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := fakert.New(fakert.Step{Delay: time.Second}, fakert.Step{Delay: 2 * time.Second})
				s := retryFor(0)
				if tt.s != nil {
					tt.s(&s)
				}
				ctx := context.Background()
				if tt.ctx != nil {
					ctx = tt.ctx(ctx)
				}
				var body io.Reader
				if tt.body != nil {
					body = tt.body()
				}
				req, err := http.NewRequestWithContext(ctx, tt.method, "http://svc.test/v1/items", body)
				if err != nil {
					t.Fatal(err)
				}
				resp, err := middleware.Hedge(hedgeOn(100*ms, 1), s, middleware.HedgeOptions{})(rt).RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
				if got := rt.Calls(); got != tt.want {
					t.Fatalf("copies: got %d, want %d", got, tt.want)
				}
				for _, r := range rt.Requests() {
					if tt.body != nil && len(r.Body) == 0 {
						t.Errorf("copy %d: got an empty body, want the caller's", r.Attempt)
					}
				}
			})
		})
	}
}

func TestHedgeTotalTimeoutBoundsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := fakert.New(fakert.Step{Delay: time.Hour})
		h := middleware.Timeout(time.Second, middleware.TimeoutOptions{})(middleware.Hedge(hedgeOn(100*ms, 2), retryFor(0), middleware.HedgeOptions{})(rt))
		start := time.Now()
		_, err := h.RoundTrip(newReq(t, context.Background(), "GET", ""))
		if err == nil {
			t.Fatal("got a response, want the timeout's error")
		}
		if got := time.Since(start); got != time.Second {
			t.Errorf("call took %v, want 1s", got)
		}
		synctest.Wait()
		if got := rt.Calls(); got != 3 {
			t.Errorf("copies: got %d, want 3", got)
		}
	})
}

func TestHedgeCallerCancellationWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := fakert.New(fakert.Step{Delay: time.Hour})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(250*ms, cancel)
		h := middleware.Hedge(hedgeOn(100*ms, 1), retryFor(3), middleware.HedgeOptions{})(rt)
		_, err := h.RoundTrip(newReq(t, ctx, "GET", ""))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
		synctest.Wait()
		if got := rt.Calls(); got != 2 {
			t.Errorf("copies: got %d, want 2", got)
		}
	})
}

// TestHedgeLosersCancelledWinnersBodyIntact runs over real sockets: the
// first copy hangs until it is cancelled, the hedge streams 1 MiB slowly;
// the loser must be cancelled as soon as the hedge's headers win, and the
// winner's body must read to its end long after.
func TestHedgeLosersCancelledWinnersBodyIntact(t *testing.T) {
	const size = 1 << 20
	cancelled := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Attempt") == "1" {
			<-r.Context().Done()
			close(cancelled)
			return
		}
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		chunk := strings.Repeat("x", 64<<10)
		for range size / len(chunk) {
			time.Sleep(2 * ms)
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	ev, rec := newEvents()
	client := &http.Client{Transport: middleware.Hedge(hedgeOn(20*ms, 1), retryFor(0), middleware.HedgeOptions{Events: ev})(tr)}
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the losing copy was not cancelled when the winner was chosen")
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || n != size {
		t.Fatalf("winner's body: read %d bytes, err %v; want %d, nil", n, err, size)
	}
	if got := attempts(rec.named(middleware.EventHedgeWon)); !slices.Equal(got, []int{2}) {
		t.Errorf("hedge.won: got %v, want [2]", got)
	}
	if got := attempts(rec.named(middleware.EventHedgeCancelled)); !slices.Equal(got, []int{1}) {
		t.Errorf("hedge.cancelled: got %v, want [1]", got)
	}
}

// A ShouldRetry hook judges answers; it never clears a method for hedging,
// since a copy goes out before any answer: a slow POST is sent once.
func TestHedgeNeverCopiesAMethodTheGateRefusesEvenWithShouldRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := fakert.New(fakert.Step{Delay: time.Second, Body: "charged"})
		always := func(*http.Request, *http.Response, error) bool { return true }
		h := middleware.Hedge(hedgeOn(100*ms, 2), retryFor(3), middleware.HedgeOptions{ShouldRetry: always})(rt)
		resp, err := h.RoundTrip(newReq(t, context.Background(), http.MethodPost, "amount=1"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if n := rt.Calls(); n != 1 {
			t.Fatalf("POST copies sent: got %d, want 1", n)
		}
	})
}

// TestHedgeFreesTheSlotOfAnEmptyAnswerAtOnce guards the defect where
// hedging wrapped an empty answer (http.NoBody) to release its copy's
// context when the body ended, so that the bulkhead above held its slot
// until the caller closed a body with nothing in it, while a call that is
// not hedged frees it at once. The empty body is handed on as is.
func TestHedgeFreesTheSlotOfAnEmptyAnswerAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var copyCtx context.Context
		empty := middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			copyCtx = req.Context()
			return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Request: req}, nil
		})
		bh := middleware.NewBulkhead(middleware.BulkheadSettings{MaxConcurrent: 1}, middleware.BulkheadOptions{})
		rt := middleware.Chain(bh.Middleware(), middleware.Hedge(hedgeOn(100*ms, 1), retryFor(1), middleware.HedgeOptions{}))(empty)
		resp, err := rt.RoundTrip(newReq(t, context.Background(), http.MethodGet, ""))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Body != http.NoBody {
			t.Errorf("body: got %T, want http.NoBody handed on as is", resp.Body)
		}
		if got := bh.InUse(); got != 0 {
			t.Errorf("bulkhead slots in use before the body is closed: got %d, want 0", got)
		}
		if copyCtx.Err() == nil {
			t.Error("the winning copy's context is still alive: want it ended with the empty answer")
		}
		resp.Body.Close()
	})
}

// TestHedgedCopyWhoseBodyFailsIsNotABackendFailure: Hedge treated a copy
// whose GetBody failed as a local rejection (it neither wins nor starts a
// copy) by deciding so itself, while Classify, which every other judge
// reads, called the same error a backend failure: a call that ended with
// it counted as a failure for the breaker above although the backend
// never saw that copy. The decision now lives in Classify alone.
func TestHedgedCopyWhoseBodyFailsIsNotABackendFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bodyFailed := make(chan struct{})
		rt := middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if req.Body != nil {
				req.Body.Close()
			}
			<-bodyFailed // the first copy answers once the second failed,
			// and after the hedge took that failure (the bubble's clock
			// moves only once every goroutine in it is blocked)
			time.Sleep(ms)
			return nil, middleware.ErrBulkheadFull
		})
		h := middleware.Hedge(hedgeOn(100*ms, 1), retryFor(1), middleware.HedgeOptions{})(rt)
		req := newReq(t, context.Background(), http.MethodPut, "payload")
		errGetBody := errors.New("body source gone")
		req.GetBody = func() (io.ReadCloser, error) {
			close(bodyFailed)
			return nil, errGetBody
		}
		resp, err := h.RoundTrip(req)
		if resp != nil {
			resp.Body.Close()
		}
		if !errors.Is(err, errGetBody) {
			t.Fatalf("got %v, want the second copy's body error as the outcome of last resort", err)
		}
		if got := middleware.Classify(req, resp, err); got != middleware.OutcomeRejected {
			t.Errorf("Classify: got %v, want %v: the backend never saw the copy", got, middleware.OutcomeRejected)
		}
	})
}
