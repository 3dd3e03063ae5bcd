package middleware_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-http/switchboard/middleware"
)

// rateLimitFake is an in-memory RoundTripper that records when each call
// reached it.
type rateLimitFake struct {
	mu    sync.Mutex
	times []time.Time
}

func (f *rateLimitFake) RoundTrip(req *http.Request) (*http.Response, error) {
	f.mu.Lock()
	f.times = append(f.times, time.Now())
	f.mu.Unlock()
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
}

func (f *rateLimitFake) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.times)
}

// rateLimitDo sends one GET through rt and closes the response.
func rateLimitDo(t *testing.T, rt http.RoundTripper, ctx context.Context) error {
	t.Helper()
	resp, err := rt.RoundTrip(limRequest(t, ctx))
	if err == nil {
		resp.Body.Close()
	}
	return err
}

// tokensNear reports whether got is want up to float rounding.
func tokensNear(got, want float64) bool { return math.Abs(got-want) < 1e-6 }

func TestRateLimitPacing(t *testing.T) {
	tests := []struct {
		name     string
		settings middleware.RateLimitSettings
		requests int
		want     time.Duration
	}{
		{"10rps burst 1", middleware.RateLimitSettings{RequestsPerSecond: 10, Burst: 1}, 11, time.Second},
		{"10rps burst 5", middleware.RateLimitSettings{RequestsPerSecond: 10, Burst: 5}, 15, time.Second},
		{"burst only", middleware.RateLimitSettings{RequestsPerSecond: 1, Burst: 5}, 5, 0},
		{"2rps", middleware.RateLimitSettings{RequestsPerSecond: 2, Burst: 1}, 5, 2 * time.Second},
		{"burst 0 counts as 1", middleware.RateLimitSettings{RequestsPerSecond: 4}, 5, time.Second},
		{"unlimited", middleware.RateLimitSettings{Burst: 1}, 1000, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := &rateLimitFake{}
				rt := middleware.NewRateLimit(tt.settings, middleware.RateLimitOptions{}).Middleware()(fake)
				start := time.Now()
				for range tt.requests {
					if err := rateLimitDo(t, rt, t.Context()); err != nil {
						t.Fatal(err)
					}
				}
				if took := time.Since(start); took != tt.want {
					t.Errorf("%d requests took %v, want %v", tt.requests, took, tt.want)
				}
			})
		})
	}
}

func TestRateLimitPacingConcurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &rateLimitFake{}
		rt := middleware.NewRateLimit(middleware.RateLimitSettings{RequestsPerSecond: 10, Burst: 2}, middleware.RateLimitOptions{}).Middleware()(fake)
		start := time.Now()
		var wg sync.WaitGroup
		for range 12 {
			wg.Go(func() {
				if err := rateLimitDo(t, rt, t.Context()); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if took := time.Since(start); took != time.Second {
			t.Errorf("12 concurrent requests took %v, want 1s", took)
		}
		// Two go at once (the burst), then one every 100ms.
		fake.mu.Lock()
		defer fake.mu.Unlock()
		perSlot := map[time.Duration]int{}
		for _, at := range fake.times {
			perSlot[at.Sub(start)]++
		}
		if perSlot[0] != 2 || len(perSlot) != 11 {
			t.Errorf("send times: got %v, want 2 at 0 and one per 100ms after", perSlot)
		}
	})
}

func TestRateLimitWaitEndsWithContext(t *testing.T) {
	tests := []struct {
		name     string
		ctx      func(context.Context) (context.Context, context.CancelFunc)
		want     error
		took     time.Duration
		tokensAt float64 // Tokens() right after the failed wait: its token came back
	}{
		{
			name: "cancelled",
			ctx: func(parent context.Context) (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(parent)
				time.AfterFunc(200*time.Millisecond, cancel)
				return ctx, cancel
			},
			want:     context.Canceled,
			took:     200 * time.Millisecond,
			tokensAt: 0.2,
		},
		{
			name: "deadline before the token",
			ctx: func(parent context.Context) (context.Context, context.CancelFunc) {
				return context.WithTimeout(parent, 500*time.Millisecond)
			},
			want:     middleware.ErrRateLimited,
			took:     0, // not waited for: the wait would pass the deadline
			tokensAt: 0,
		},
		{
			name: "already cancelled",
			ctx: func(parent context.Context) (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(parent)
				cancel()
				return ctx, cancel
			},
			want:     context.Canceled,
			took:     0,
			tokensAt: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := &rateLimitFake{}
				var log limEventLog
				l := middleware.NewRateLimit(middleware.RateLimitSettings{RequestsPerSecond: 1, Burst: 1}, middleware.RateLimitOptions{Events: log.ev()})
				rt := l.Middleware()(fake)
				if err := rateLimitDo(t, rt, t.Context()); err != nil { // empties the bucket
					t.Fatal(err)
				}

				ctx, cancel := tt.ctx(t.Context())
				defer cancel()
				body := &limTrackedBody{Reader: strings.NewReader("payload")}
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://api.test/v1/items", body)
				start := time.Now()
				_, err := rt.RoundTrip(req)
				if !errors.Is(err, tt.want) {
					t.Fatalf("got %v, want an error matching %v", err, tt.want)
				}
				if took := time.Since(start); took != tt.took {
					t.Errorf("wait ended after %v, want %v", took, tt.took)
				}
				if !body.isClosed() {
					t.Error("request body not closed")
				}
				if fake.calls() != 1 {
					t.Errorf("got %d calls through, want 1", fake.calls())
				}
				if got := l.Tokens(); !tokensNear(got, tt.tokensAt) {
					t.Errorf("Tokens: got %v, want %v (the cancelled wait gives its token back)", got, tt.tokensAt)
				}
				if evs := log.Named(middleware.EventRateLimitWaited); len(evs) != 0 {
					t.Errorf("waited events: got %+v, want none for a wait that did not end in an attempt", evs)
				}
				// Only the wait refused up front is a refusal; one cut short is not.
				refusedUpFront := tt.name == "deadline before the token"
				if evs := log.Named(middleware.EventRateLimitRefused); refusedUpFront != (len(evs) == 1) || len(evs) > 1 {
					t.Errorf("refused events: got %+v, want one only for a wait refused up front (%v)", evs, refusedUpFront)
				} else if len(evs) == 1 && evs[0].Scope != "process" {
					t.Errorf("refused event scope %q, want process", evs[0].Scope)
				}
			})
		})
	}
}

func TestRateLimitErrorsThroughClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := middleware.NewRateLimit(middleware.RateLimitSettings{RequestsPerSecond: 1, Burst: 1}, middleware.RateLimitOptions{})
		client := &http.Client{Transport: l.Middleware()(&rateLimitFake{})}
		resp, err := client.Get("http://api.test/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()

		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(100*time.Millisecond, cancel)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/", nil)
		_, err = client.Do(req)
		var ue *url.Error
		if !errors.As(err, &ue) || !errors.Is(err, context.Canceled) {
			t.Errorf("got %v (%T), want *url.Error matching context.Canceled", err, err)
		}
	})
}

func TestRateLimitUpdateKeepsTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &rateLimitFake{}
		l := middleware.NewRateLimit(middleware.RateLimitSettings{RequestsPerSecond: 1, Burst: 10}, middleware.RateLimitOptions{})
		rt := l.Middleware()(fake)
		if got := l.Tokens(); !tokensNear(got, 10) {
			t.Fatalf("new limiter: got %v tokens, want a full bucket of 10", got)
		}
		for range 8 {
			if err := rateLimitDo(t, rt, t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		if got := l.Tokens(); !tokensNear(got, 2) {
			t.Fatalf("got %v tokens, want 2", got)
		}

		// A faster rate keeps the 2 tokens and refills from there.
		l.Update(middleware.RateLimitSettings{RequestsPerSecond: 100, Burst: 10})
		if got := l.Tokens(); !tokensNear(got, 2) {
			t.Fatalf("after Update: got %v tokens, want 2 (kept)", got)
		}
		time.Sleep(30 * time.Millisecond)
		if got := l.Tokens(); !tokensNear(got, 5) {
			t.Fatalf("30ms at 100rps later: got %v tokens, want 5", got)
		}

		// A smaller burst caps them.
		l.Update(middleware.RateLimitSettings{RequestsPerSecond: 100, Burst: 3})
		if got := l.Tokens(); !tokensNear(got, 3) {
			t.Fatalf("after shrinking the burst: got %v tokens, want 3", got)
		}

		for range 3 {
			if err := rateLimitDo(t, rt, t.Context()); err != nil {
				t.Fatal(err)
			}
		}

		// Unlimited bypasses the bucket; a later finite rate starts full.
		l.Update(middleware.RateLimitSettings{Burst: 3})
		if got := l.Tokens(); !math.IsInf(got, 1) {
			t.Fatalf("unlimited: got %v tokens, want +Inf", got)
		}
		start := time.Now()
		for range 50 {
			if err := rateLimitDo(t, rt, t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("unlimited: 50 requests took %v, want 0", took)
		}
		l.Update(middleware.RateLimitSettings{RequestsPerSecond: 10, Burst: 3})
		if got := l.Tokens(); !tokensNear(got, 3) {
			t.Fatalf("back to 10rps: got %v tokens, want 3", got)
		}
		start = time.Now()
		for range 4 {
			if err := rateLimitDo(t, rt, t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		if took := time.Since(start); took != 100*time.Millisecond {
			t.Errorf("3 tokens then one at 10rps: took %v, want 100ms", took)
		}
	})
}

func TestRateLimitUpdateFromUnlimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := middleware.NewRateLimit(middleware.RateLimitSettings{}, middleware.RateLimitOptions{})
		if got := l.Tokens(); !math.IsInf(got, 1) {
			t.Fatalf("got %v tokens, want +Inf", got)
		}
		time.Sleep(time.Hour)
		l.Update(middleware.RateLimitSettings{RequestsPerSecond: 5, Burst: 2})
		if got := l.Tokens(); !tokensNear(got, 2) {
			t.Fatalf("got %v tokens, want a full bucket of 2", got)
		}
	})
}

func TestRateLimitUpdateWhileTaking(t *testing.T) {
	// Attempts that take tokens while Updates replace the bucket lose none:
	// no time passes in the bubble, so the bucket ends exactly that many
	// tokens short.
	synctest.Test(t, func(t *testing.T) {
		const burst, takers, each = 1 << 20, 8, 200
		l := middleware.NewRateLimit(middleware.RateLimitSettings{RequestsPerSecond: 1e6, Burst: burst}, middleware.RateLimitOptions{})
		rt := l.Middleware()(&rateLimitFake{})
		var wg sync.WaitGroup
		for range takers {
			wg.Go(func() {
				for range each {
					if err := rateLimitDo(t, rt, t.Context()); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Go(func() {
			for i := range 500 {
				l.Update(middleware.RateLimitSettings{RequestsPerSecond: float64(1e6 + i%2*1e6), Burst: burst})
			}
		})
		wg.Wait()
		if got, want := l.Tokens(), float64(burst-takers*each); !tokensNear(got, want) {
			t.Errorf("Tokens: got %v, want %v", got, want)
		}
	})
}

func TestRateLimitCancelledWaitGivesBackToRetunedBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := middleware.NewRateLimit(middleware.RateLimitSettings{RequestsPerSecond: 1, Burst: 1}, middleware.RateLimitOptions{})
		rt := l.Middleware()(&rateLimitFake{})
		if err := rateLimitDo(t, rt, t.Context()); err != nil { // empties the bucket
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- rateLimitDo(t, rt, ctx) }()
		synctest.Wait() // the attempt waits for a token it reserved: -1
		if got := l.Tokens(); !tokensNear(got, -1) {
			t.Fatalf("while waiting: got %v tokens, want -1", got)
		}
		// A retune keeps the -1 (capped burst 3, rate 10: refills 1 per 100ms).
		l.Update(middleware.RateLimitSettings{RequestsPerSecond: 10, Burst: 3})
		time.Sleep(50 * time.Millisecond)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
		// -1 + 0.5 refilled + 1 given back, to the new bucket.
		if got := l.Tokens(); !tokensNear(got, 0.5) {
			t.Errorf("after the cancelled wait: got %v tokens, want 0.5", got)
		}
	})
}

func TestRateLimitExtremeRates(t *testing.T) {
	// sends n requests through l and returns how long they took in the
	// bubble.
	sends := func(t *testing.T, l *middleware.RateLimit, n int) time.Duration {
		rt := l.Middleware()(&rateLimitFake{})
		start := time.Now()
		for range n {
			if err := rateLimitDo(t, rt, t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		return time.Since(start)
	}
	t.Run("a rate above one per ns waits for nothing", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := middleware.NewRateLimit(middleware.RateLimitSettings{RequestsPerSecond: 1e12, Burst: 4}, middleware.RateLimitOptions{})
			if took := sends(t, l, 1000); took > time.Microsecond {
				t.Errorf("1000 requests took %v, want at most 1µs", took)
			}
		})
	})
	t.Run("a rate too slow to wait for is refused, not waited for", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := middleware.NewRateLimit(middleware.RateLimitSettings{RequestsPerSecond: 1e-10, Burst: 1}, middleware.RateLimitOptions{})
			if took := sends(t, l, 1); took != 0 {
				t.Fatalf("first request took %v, want 0", took)
			}
			// The next token is 1e10 s away, past what a time.Duration holds:
			// even without a deadline the wait would never end.
			err := rateLimitDo(t, l.Middleware()(&rateLimitFake{}), t.Context())
			if !errors.Is(err, middleware.ErrRateLimited) {
				t.Errorf("got %v, want an error matching ErrRateLimited", err)
			}
			if got := l.Tokens(); got < -1e-6 || got > 1e-6 {
				t.Errorf("Tokens after the refusal: got %v, want 0 (nothing reserved)", got)
			}
		})
	})
	t.Run("a burst too large to count in ns", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := middleware.NewRateLimit(middleware.RateLimitSettings{RequestsPerSecond: 1e-3, Burst: math.MaxInt}, middleware.RateLimitOptions{})
			if took := sends(t, l, 1000); took != 0 {
				t.Errorf("1000 requests took %v, want 0 (no overflow into a wait)", took)
			}
		})
	})
}

// TestRateLimitCancelledWaiterLetsNoExtraAttemptThrough guards the schedule
// that the hand-made token bucket got wrong: at 1/s with burst 1, A goes at
// 0s, B and C queue for the tokens of 1s and 2s, B gives up at 0.5s, and D,
// sent after that, must wait for the token of 3s. B's token is not given
// back, since C's reservation already counts on it: attempts at 0s, 2s, 3s
// (the bucket gave D the freed slot and sent at 0s, 2s, 2s).
func TestRateLimitCancelledWaiterLetsNoExtraAttemptThrough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &rateLimitFake{}
		rt := middleware.NewRateLimit(middleware.RateLimitSettings{RequestsPerSecond: 1, Burst: 1}, middleware.RateLimitOptions{}).Middleware()(fake)
		start := time.Now()
		if err := rateLimitDo(t, rt, t.Context()); err != nil { // A
			t.Fatal(err)
		}
		bctx, cancelB := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		var errB error
		wg.Go(func() { errB = rateLimitDo(t, rt, bctx) }) // B
		synctest.Wait()
		wg.Go(func() { // C
			if err := rateLimitDo(t, rt, t.Context()); err != nil {
				t.Error(err)
			}
		})
		synctest.Wait()
		time.Sleep(500 * time.Millisecond)
		cancelB()
		synctest.Wait()
		if err := rateLimitDo(t, rt, t.Context()); err != nil { // D
			t.Fatal(err)
		}
		wg.Wait()
		if !errors.Is(errB, context.Canceled) {
			t.Errorf("B: got %v, want an error matching context.Canceled", errB)
		}
		fake.mu.Lock()
		defer fake.mu.Unlock()
		var got []time.Duration
		for _, at := range fake.times {
			got = append(got, at.Sub(start))
		}
		if want := []time.Duration{0, 2 * time.Second, 3 * time.Second}; !slices.Equal(got, want) {
			t.Errorf("attempts at %v, want %v", got, want)
		}
	})
}

func TestRateLimitRefusalMatchesErrRateLimitedThroughClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &rateLimitFake{}
		l := middleware.NewRateLimit(middleware.RateLimitSettings{RequestsPerSecond: 1, Burst: 1}, middleware.RateLimitOptions{})
		client := &http.Client{Transport: l.Middleware()(fake)}
		resp, err := client.Get("http://api.test/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()

		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/", nil)
		start := time.Now()
		_, err = client.Do(req)
		var ue *url.Error
		if !errors.As(err, &ue) || !errors.Is(err, middleware.ErrRateLimited) {
			t.Fatalf("got %v (%T), want *url.Error matching ErrRateLimited", err, err)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v: a refusal is not the deadline's expiry", err)
		}
		if msg := err.Error(); !strings.Contains(msg, "rate limit") {
			t.Errorf("error %q does not name the rate limit", msg)
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("refusal took %v, want 0 (refused at once)", took)
		}
		if fake.calls() != 1 {
			t.Errorf("got %d calls through, want 1", fake.calls())
		}
		if got := l.Tokens(); !tokensNear(got, 0) {
			t.Errorf("Tokens after the refusal: got %v, want 0 (its reservation cancelled)", got)
		}
	})
}

func TestRateLimitEmitsWaited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log limEventLog
		rt := middleware.NewRateLimit(middleware.RateLimitSettings{RequestsPerSecond: 4, Burst: 1}, middleware.RateLimitOptions{Events: log.ev()}).Middleware()(&rateLimitFake{})
		for range 2 {
			if err := rateLimitDo(t, rt, t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		evs := log.all()
		if len(evs) != 1 {
			t.Fatalf("events: got %+v, want exactly one (the first request did not wait)", evs)
		}
		e := evs[0]
		if e.Name != middleware.EventRateLimitWaited || e.Delay != 250*time.Millisecond {
			t.Errorf("event: got %s with Delay %v, want %s with 250ms", e.Name, e.Delay, middleware.EventRateLimitWaited)
		}
		if e.Client != "test" || e.Method != http.MethodGet || e.Host != "api.test" ||
			strings.Contains(e.URL, "s3cret") || !strings.Contains(e.URL, middleware.Redacted) {
			t.Errorf("event: got %+v, want client, method, host and a redacted URL", e)
		}
	})
}

func BenchmarkRateLimit(b *testing.B) {
	b.Run("unlimited", func(b *testing.B) {
		benchRT(b, middleware.NewRateLimit(middleware.RateLimitSettings{}, middleware.RateLimitOptions{}).Middleware()(limBenchRT{}))
	})
	b.Run("high_rate", func(b *testing.B) {
		l := middleware.NewRateLimit(middleware.RateLimitSettings{RequestsPerSecond: 1e12, Burst: 1 << 20}, middleware.RateLimitOptions{})
		benchRT(b, l.Middleware()(limBenchRT{}))
	})
}
