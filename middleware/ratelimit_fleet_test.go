package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/time/rate"

	"github.com/switchboard-http/switchboard/internal/logcapture"
	"github.com/switchboard-http/switchboard/middleware"
)

// fakeQuotas is an in-memory QuotaStore: one x/time/rate bucket per key
// (a take that would wait takes nothing and says how long), pauses by
// key, and switches to fail or to hang until the caller's context ends.
type fakeQuotas struct {
	mu     sync.Mutex
	lims   map[string]*rate.Limiter
	paused map[string]time.Time
	fail   error
	hang   bool
	takes  []string // every key asked for
	rates  []float64
}

func (f *fakeQuotas) Take(ctx context.Context, key string, r float64, burst, n int) (middleware.QuotaDecision, error) {
	f.mu.Lock()
	if f.hang {
		f.mu.Unlock()
		<-ctx.Done()
		return middleware.QuotaDecision{}, ctx.Err()
	}
	defer f.mu.Unlock()
	f.takes = append(f.takes, key)
	f.rates = append(f.rates, r)
	if f.fail != nil {
		return middleware.QuotaDecision{}, f.fail
	}
	now := time.Now()
	if until, ok := f.paused[key]; ok && now.Before(until) {
		return middleware.QuotaDecision{Paused: true, RetryAfter: until.Sub(now)}, nil
	}
	if f.lims == nil {
		f.lims = map[string]*rate.Limiter{}
	}
	lim := f.lims[key]
	if lim == nil {
		lim = rate.NewLimiter(rate.Limit(r), burst)
		f.lims[key] = lim
	}
	lim.SetLimitAt(now, rate.Limit(r))
	lim.SetBurstAt(now, burst)
	res := lim.ReserveN(now, n)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return middleware.QuotaDecision{RetryAfter: d}, nil
	}
	return middleware.QuotaDecision{Allowed: true, Remaining: int(lim.TokensAt(now))}, nil
}

func (f *fakeQuotas) Pause(_ context.Context, key string, until time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	if f.paused == nil {
		f.paused = map[string]time.Time{}
	}
	if until.After(f.paused[key]) {
		f.paused[key] = until
	}
	return nil
}

func (f *fakeQuotas) set(fail error, hang bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail, f.hang = fail, hang
}

func (f *fakeQuotas) keys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.takes)
}

// sendLog is a backend that records when each request came and answers
// with status (200 when 0) and header.
type sendLog struct {
	mu     sync.Mutex
	times  []time.Time
	status int
	header http.Header
}

func (s *sendLog) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.times = append(s.times, time.Now())
	st, h := s.status, s.header.Clone()
	if st == 0 {
		st = 200
	}
	if h == nil {
		h = http.Header{}
	}
	return &http.Response{StatusCode: st, Header: h, Body: http.NoBody, Request: req}, nil
}

func (s *sendLog) answer(status int, header http.Header) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.header = status, header
}

func (s *sendLog) sent() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.times)
}

// fleetSettings is a fleet quota of rps, burst 1.
func fleetSettings(rps float64) middleware.RateLimitSettings {
	s := middleware.DefaultRateLimitSettings()
	s.RequestsPerSecond, s.Burst, s.Scope = rps, 1, middleware.QuotaFleet
	return s
}

// call sends one GET through rt under ctx and returns its error.
func call(t *testing.T, ctx context.Context, rt http.RoundTripper, header ...string) error {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/v1/items?token=s3cr3t", nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := rt.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
	}
	return err
}

// TestFleetQuotaIsSharedAcrossLimiters: two limiters (two processes) on
// one store at 10/s, burst 1, 10 waiting callers each: the backend sees
// the n-th request no sooner than (n-1)·100ms, whichever process sent it.
func TestFleetQuotaIsSharedAcrossLimiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, backend := &fakeQuotas{}, &sendLog{}
		var rts []http.RoundTripper
		for range 2 {
			l := middleware.NewRateLimit(fleetSettings(10), middleware.RateLimitOptions{Name: "stripe", Quotas: store})
			rts = append(rts, l.Middleware()(backend))
		}
		start := time.Now()
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				if err := call(t, t.Context(), rts[i%2]); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		sent := backend.sent()
		slices.SortFunc(sent, func(a, b time.Time) int { return a.Compare(b) })
		if len(sent) != 20 {
			t.Fatalf("sent %d, want 20", len(sent))
		}
		for i, at := range sent {
			if min := time.Duration(i) * 100 * time.Millisecond; at.Sub(start) < min {
				t.Errorf("request %d sent at %v, before %v: the shared quota let it through early", i, at.Sub(start), min)
			}
		}
		if got := slices.Compact(store.keys()); len(got) != 1 || got[0] != "stripe" {
			t.Errorf("store keys %v, want only stripe (the Name when key is empty)", got)
		}
	})
}

// TestFleetQuotaRefusesAtOnceWhatTheDeadlineCannotWaitFor: the store says
// the next token is 100ms away, the call has 50ms: refused at once, a
// local rejection, with a ratelimit.refused event carrying scope fleet.
func TestFleetQuotaRefusesAtOnceWhatTheDeadlineCannotWaitFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, backend, log := &fakeQuotas{}, &sendLog{}, &limEventLog{}
		l := middleware.NewRateLimit(fleetSettings(10), middleware.RateLimitOptions{Quotas: store, Events: log.ev()})
		rt := l.Middleware()(backend)
		if err := call(t, t.Context(), rt); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/", nil)
		resp, err := rt.RoundTrip(req)
		if !errors.Is(err, middleware.ErrRateLimited) || time.Since(start) != 0 {
			t.Fatalf("got %v after %v, want ErrRateLimited at once", err, time.Since(start))
		}
		if o := middleware.Classify(req, resp, err); o != middleware.OutcomeRejected {
			t.Errorf("Classify: %v, want rejected (never retried, no breaker failure)", o)
		}
		evs := log.Named(middleware.EventRateLimitRefused)
		if len(evs) != 1 || evs[0].Scope != "fleet" {
			t.Errorf("refused events %+v, want one with scope fleet", evs)
		}
		// Within the deadline, it waits: a 200ms deadline waits the 100ms.
		time.Sleep(0)
		ctx2, cancel2 := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel2()
		if err := call(t, ctx2, rt); err != nil {
			t.Fatal(err)
		}
		if evs := log.Named(middleware.EventRateLimitWaited); len(evs) != 1 || evs[0].Scope != "fleet" || evs[0].Delay != 100*time.Millisecond {
			t.Errorf("waited events %+v, want one of 100ms with scope fleet", evs)
		}
	})
}

// TestFleetStoreErrorModes: a failing store applies on_store_error, with
// one WARN when it starts failing and one INFO when it answers again, and
// QuotaMode says fallback meanwhile.
func TestFleetStoreErrorModes(t *testing.T) {
	for _, mode := range []middleware.QuotaFallback{middleware.QuotaLocal, middleware.QuotaAllow, middleware.QuotaDeny} {
		t.Run(string(mode), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store, backend := &fakeQuotas{}, &sendLog{}
				logger, logs := logcapture.New()
				s := fleetSettings(100)
				s.OnStoreError, s.FallbackPerSecond = mode, 2
				l := middleware.NewRateLimit(s, middleware.RateLimitOptions{Quotas: store, Events: &middleware.Events{Client: "svc", Logger: logger}})
				rt := l.Middleware()(backend)
				if err := call(t, t.Context(), rt); err != nil || l.QuotaMode() != "store" {
					t.Fatalf("healthy: %v, mode %q", err, l.QuotaMode())
				}
				store.set(errors.New("connection refused"), false)
				start := time.Now()
				var errs []error
				for range 5 {
					errs = append(errs, call(t, t.Context(), rt))
				}
				took := time.Since(start)
				if l.QuotaMode() != "fallback" {
					t.Errorf("QuotaMode %q while failing, want fallback", l.QuotaMode())
				}
				switch mode {
				case middleware.QuotaLocal:
					// The fallback bucket (2/s, burst 1) was kept warm by the
					// healthy call: 5 calls take 2.5s.
					if took != 2500*time.Millisecond || slices.ContainsFunc(errs, func(e error) bool { return e != nil }) {
						t.Errorf("local: 5 calls took %v with %v, want 2.5s and no error", took, errs)
					}
				case middleware.QuotaAllow:
					if took != 0 || len(backend.sent()) != 6 {
						t.Errorf("allow: took %v, sent %d, want 0 and 6", took, len(backend.sent()))
					}
				case middleware.QuotaDeny:
					for _, err := range errs {
						if !errors.Is(err, middleware.ErrRateLimited) {
							t.Errorf("deny: got %v, want ErrRateLimited", err)
						}
					}
					if took != 0 || len(backend.sent()) != 1 {
						t.Errorf("deny: took %v, sent %d, want 0 and 1", took, len(backend.sent()))
					}
				}
				warns := slices.DeleteFunc(logs.Records(t, middleware.EventRateLimitStoreError), func(r map[string]any) bool { return r["level"] != "WARN" })
				if n := len(warns); n != 1 {
					t.Errorf("%d store_error WARN records, want one for the spell:\n%s", n, logs)
				}
				store.set(nil, false)
				time.Sleep(time.Second)
				if err := call(t, t.Context(), rt); err != nil || l.QuotaMode() != "store" {
					t.Errorf("recovered: %v, mode %q", err, l.QuotaMode())
				}
				if err := call(t, t.Context(), rt); err != nil {
					t.Error(err)
				}
				if n := len(logs.Records(t, middleware.EventRateLimitStoreRecovered)); n != 1 {
					t.Errorf("%d store_recovered INFO records, want one:\n%s", n, logs)
				}
				if strings.Contains(logs.String(), "s3cr3t") {
					t.Errorf("a secret reached the log:\n%s", logs)
				}
			})
		})
	}
}

// TestFleetStoreTimeoutBoundsEveryDecision: a store that hangs costs each
// attempt exactly store_timeout before on_store_error applies.
func TestFleetStoreTimeoutBoundsEveryDecision(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, backend := &fakeQuotas{}, &sendLog{}
		s := fleetSettings(100)
		s.StoreTimeout, s.OnStoreError = 30*time.Millisecond, middleware.QuotaAllow
		l := middleware.NewRateLimit(s, middleware.RateLimitOptions{Quotas: store})
		rt := l.Middleware()(backend)
		store.set(nil, true)
		for range 3 {
			start := time.Now()
			if err := call(t, t.Context(), rt); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took != 30*time.Millisecond {
				t.Errorf("decision took %v, want store_timeout 30ms", took)
			}
		}
		if l.QuotaMode() != "fallback" {
			t.Errorf("QuotaMode %q, want fallback", l.QuotaMode())
		}
	})
}

// TestRespectServerPausesTheFleet: a 429 with Retry-After 2 seen through
// one limiter pauses the other's attempts for 2s; a call that cannot wait
// that long is refused at once.
func TestRespectServerPausesTheFleet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, b1, b2, log := &fakeQuotas{}, &sendLog{}, &sendLog{}, &limEventLog{}
		s := fleetSettings(100)
		s.Burst, s.RespectServer = 10, true
		rt1 := middleware.NewRateLimit(s, middleware.RateLimitOptions{Quotas: store, Events: log.ev()}).Layer(log.ev(), time.Minute)(b1)
		rt2 := middleware.NewRateLimit(s, middleware.RateLimitOptions{Quotas: store}).Layer(nil, time.Minute)(b2)
		b1.answer(429, http.Header{"Retry-After": {"2"}})
		start := time.Now()
		if err := call(t, t.Context(), rt1); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if err := call(t, ctx, rt2); !errors.Is(err, middleware.ErrRateLimited) || time.Since(start) != 0 {
			t.Errorf("during the pause with 1s left: %v after %v, want ErrRateLimited at once", err, time.Since(start))
		}
		if err := call(t, t.Context(), rt2); err != nil {
			t.Fatal(err)
		}
		if got := b2.sent(); len(got) != 1 || got[0].Sub(start) != 2*time.Second {
			t.Errorf("the other process sent at %v, want one at 2s", got)
		}
		evs := log.Named(middleware.EventRateLimitPaused)
		if len(evs) != 1 || evs[0].Delay != 2*time.Second || evs[0].Status != 429 || evs[0].Scope != "fleet" {
			t.Errorf("paused events %+v, want one of 2s for the 429", evs)
		}
	})
}

// TestRespectServerTakesTheLongestAndCaps: RateLimit-Reset beyond
// Retry-After wins; max pause (retry.max_backoff) caps it; a 200 or a 500
// pauses nothing; respect_server false ignores the headers.
func TestRespectServerTakesTheLongestAndCaps(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		h       http.Header
		respect bool
		max     time.Duration
		want    time.Duration
	}{
		{"reset beyond retry-after", 503, http.Header{"Retry-After": {"1"}, "Ratelimit-Reset": {"3"}}, true, time.Minute, 3 * time.Second},
		{"capped", 429, http.Header{"Retry-After": {"100"}}, true, 5 * time.Second, 5 * time.Second},
		{"a 500 pauses nothing", 500, http.Header{"Retry-After": {"3"}}, true, time.Minute, 0},
		{"respect_server false", 429, http.Header{"Retry-After": {"3"}}, false, time.Minute, 0},
	}
	for _, scope := range []middleware.QuotaScope{middleware.QuotaProcess, middleware.QuotaFleet} {
		for _, tt := range tests {
			t.Run(string(scope)+"/"+tt.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					backend := &sendLog{}
					s := fleetSettings(100)
					s.Scope, s.Burst, s.RespectServer = scope, 10, tt.respect
					rt := middleware.NewRateLimit(s, middleware.RateLimitOptions{Quotas: &fakeQuotas{}}).Layer(nil, tt.max)(backend)
					backend.answer(tt.status, tt.h)
					start := time.Now()
					if err := call(t, t.Context(), rt); err != nil {
						t.Fatal(err)
					}
					backend.answer(200, nil)
					if err := call(t, t.Context(), rt); err != nil {
						t.Fatal(err)
					}
					if got := backend.sent(); got[1].Sub(start) != tt.want {
						t.Errorf("second attempt sent after %v, want %v", got[1].Sub(start), tt.want)
					}
				})
			})
		}
	}
}

// TestPerHeaderQuotas: one tenant's burst does not take the other's
// tokens, in either scope; a request without the header shares the main
// quota; the header's value never reaches the store in clear.
func TestPerHeaderQuotas(t *testing.T) {
	for _, scope := range []middleware.QuotaScope{middleware.QuotaProcess, middleware.QuotaFleet} {
		t.Run(string(scope), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store, backend := &fakeQuotas{}, &sendLog{}
				s := fleetSettings(1)
				s.Scope, s.PerHeader = scope, "X-Tenant-ID"
				rt := middleware.NewRateLimit(s, middleware.RateLimitOptions{Name: "maps", Quotas: store}).Middleware()(backend)
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
				defer cancel()
				if err := call(t, ctx, rt, "X-Tenant-ID", "acme"); err != nil {
					t.Fatal(err)
				}
				if err := call(t, ctx, rt, "X-Tenant-ID", "acme"); !errors.Is(err, middleware.ErrRateLimited) {
					t.Errorf("acme's second: %v, want ErrRateLimited", err)
				}
				if err := call(t, ctx, rt, "X-Tenant-ID", "globex"); err != nil {
					t.Errorf("globex after acme's burst: %v, want admitted", err)
				}
				if err := call(t, ctx, rt); err != nil {
					t.Errorf("no header: %v, want the main quota's token", err)
				}
				if err := call(t, ctx, rt); !errors.Is(err, middleware.ErrRateLimited) {
					t.Errorf("no header again: %v, want ErrRateLimited", err)
				}
				for _, k := range store.keys() {
					if strings.Contains(k, "acme") || strings.Contains(k, "globex") {
						t.Errorf("store key %q holds a header value in clear", k)
					}
				}
			})
		})
	}
}

// TestPerHeaderProcessQuotasAreBounded: at most MaxPerHeaderQuotas are
// kept; the least recently used goes first.
func TestPerHeaderProcessQuotasAreBounded(t *testing.T) {
	s := middleware.RateLimitSettings{RequestsPerSecond: 0.001, Burst: 1, PerHeader: "X-Tenant-ID"}
	l := middleware.NewRateLimit(s, middleware.RateLimitOptions{})
	rt := l.Middleware()(&sendLog{})
	ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond*10)
	defer cancel()
	if err := call(t, ctx, rt, "X-Tenant-ID", "first"); err != nil {
		t.Fatal(err)
	}
	for i := range middleware.MaxPerHeaderQuotas {
		if err := call(t, ctx, rt, "X-Tenant-ID", fmt.Sprint("t", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := middleware.PerHeaderQuotas(l); n != middleware.MaxPerHeaderQuotas {
		t.Errorf("%d per-header buckets, want %d", n, middleware.MaxPerHeaderQuotas)
	}
	// "first" was evicted: it comes back with a full bucket.
	if err := call(t, ctx, rt, "X-Tenant-ID", "first"); err != nil {
		t.Errorf("evicted tenant: %v, want a fresh bucket", err)
	}
}

// TestFleetRetuneKeepsTheStoreState: Update changes the rate and key the
// store is asked with, without a new limiter.
func TestFleetRetuneKeepsTheStoreState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeQuotas{}
		l := middleware.NewRateLimit(fleetSettings(10), middleware.RateLimitOptions{Name: "a", Quotas: store})
		rt := l.Middleware()(&sendLog{})
		if err := call(t, t.Context(), rt); err != nil {
			t.Fatal(err)
		}
		s := fleetSettings(20)
		s.Key = "shared"
		l.Update(s)
		if err := call(t, t.Context(), rt); err != nil {
			t.Fatal(err)
		}
		store.mu.Lock()
		defer store.mu.Unlock()
		if !slices.Equal(store.takes, []string{"a", "shared"}) || !slices.Equal(store.rates, []float64{10, 20}) {
			t.Errorf("store asked %v at %v, want a at 10 then shared at 20", store.takes, store.rates)
		}
	})
}

// TestRespectServerHoldsInThisProcessWhenTheStoreMissesThePause: the
// store fails to take a pause; this process still waits it out, though
// the store would admit.
func TestRespectServerHoldsInThisProcessWhenTheStoreMissesThePause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, backend := &pauseless{}, &sendLog{}
		s := fleetSettings(100)
		s.Burst, s.RespectServer = 10, true
		rt := middleware.NewRateLimit(s, middleware.RateLimitOptions{Quotas: store}).Layer(nil, time.Minute)(backend)
		backend.answer(503, http.Header{"Retry-After": {"3"}})
		start := time.Now()
		if err := call(t, t.Context(), rt); err != nil {
			t.Fatal(err)
		}
		backend.answer(200, nil)
		if err := call(t, t.Context(), rt); err != nil {
			t.Fatal(err)
		}
		if got := backend.sent(); got[1].Sub(start) != 3*time.Second {
			t.Errorf("second attempt after %v, want 3s", got[1].Sub(start))
		}
	})
}

// pauseless is a fakeQuotas whose Pause always fails.
type pauseless struct{ fakeQuotas }

func (*pauseless) Pause(context.Context, string, time.Time) error {
	return errors.New("read-only replica")
}

// TestFleetStoreErrorEventIsRedacted: a store error naming the request URL
// and the store's own URL reaches the rate_limit events with the secrets of
// both redacted, as every other layer's event errors are.
func TestFleetStoreErrorEventIsRedacted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, backend := &fakeQuotas{}, &sendLog{}
		logger, logs := logcapture.New()
		s := fleetSettings(100)
		s.OnStoreError = middleware.QuotaDeny
		l := middleware.NewRateLimit(s, middleware.RateLimitOptions{Quotas: store, Events: &middleware.Events{Client: "svc", Logger: logger}})
		rt := l.Middleware()(backend)
		store.set(errors.New("dial redis://:hunter2@cache:6379 for http://api.test/v1/items?token=s3cr3t: connection refused"), false)
		if err := call(t, t.Context(), rt); !errors.Is(err, middleware.ErrRateLimited) {
			t.Fatalf("got %v, want ErrRateLimited", err)
		}
		if n := len(logs.Records(t, middleware.EventRateLimitStoreError)); n != 1 {
			t.Fatalf("%d store_error records, want 1:\n%s", n, logs)
		}
		if strings.Contains(logs.String(), "hunter2") || strings.Contains(logs.String(), "s3cr3t") {
			t.Errorf("a secret reached the log:\n%s", logs)
		}
	})
}

// deadlineStore fails every Take the way go-redis does when the
// connection's deadline is the context's: at that deadline, with an i/o
// timeout, whether or not the context's timer has fired yet.
type deadlineStore struct{ fakeQuotas }

func (d *deadlineStore) Take(ctx context.Context, key string, r float64, burst, n int) (middleware.QuotaDecision, error) {
	if dl, ok := ctx.Deadline(); ok {
		time.Sleep(time.Until(dl))
	}
	return middleware.QuotaDecision{}, errors.New("read tcp 127.0.0.1:1->127.0.0.1:2: i/o timeout")
}

// timerNotFired is a context whose deadline has passed but whose timer
// has not marked it done yet: the instant between the two.
type timerNotFired struct {
	context.Context
	dl time.Time
}

func (c timerNotFired) Deadline() (time.Time, bool) { return c.dl, true }

// TestFleetStoreFailingAtTheRequestDeadlineIsTheDeadlines: a decision
// that fails because the request's deadline passed (before the context
// says so) is the deadline's cut, a local rejection: the store is not
// marked failing, no store_error WARN is logged, and on_store_error local
// does not admit the attempt from the fallback bucket.
func TestFleetStoreFailingAtTheRequestDeadlineIsTheDeadlines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, backend := &deadlineStore{}, &sendLog{}
		logger, logs := logcapture.New()
		s := fleetSettings(100)
		s.StoreTimeout, s.OnStoreError = time.Second, middleware.QuotaLocal
		l := middleware.NewRateLimit(s, middleware.RateLimitOptions{Quotas: store, Events: &middleware.Events{Client: "svc", Logger: logger}})
		rt := l.Middleware()(backend)
		ctx := timerNotFired{t.Context(), time.Now().Add(50 * time.Millisecond)}
		err := call(t, ctx, rt)
		if !errors.Is(err, middleware.ErrRateLimited) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v, want ErrRateLimited and DeadlineExceeded", err)
		}
		if o := middleware.Classify(nil, nil, err); o != middleware.OutcomeRejected {
			t.Errorf("classified %v, want rejected", o)
		}
		if n := len(backend.sent()); n != 0 {
			t.Errorf("the backend got %d requests, want none", n)
		}
		if l.QuotaMode() != "store" {
			t.Errorf("QuotaMode %q, want store: the store did not fail", l.QuotaMode())
		}
		if n := len(logs.Records(t, middleware.EventRateLimitStoreError)); n != 0 {
			t.Errorf("%d store_error records, want none:\n%s", n, logs)
		}
	})
}
