package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-http/switchboard/internal/eventrec"
	"github.com/switchboard-http/switchboard/middleware"
)

// bkObserver is an Observer that keeps every event (internal/eventrec).
type bkObserver struct{ eventrec.Recorder }

func (o *bkObserver) named(name string) []middleware.Event { return o.Named(name) }
func (o *bkObserver) names() []string                      { return o.Names() }

// bkLog is a slog.Handler that keeps every record's message and level.
type bkLog struct {
	mu   sync.Mutex
	recs []string // "LEVEL message"
}

func (l *bkLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *bkLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *bkLog) WithGroup(string) slog.Handler            { return l }
func (l *bkLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Level.String()+" "+r.Message)
	return nil
}

func (h *bk) callHost(t *testing.T, host string, status int) error {
	t.Helper()
	h.f.set(status)
	return h.do(t, context.Background(), "http://"+host+"/")
}

func hostScope(s *middleware.BreakerSettings) { s.Scope = middleware.ScopeHost }

func TestBreakerScopeHost(t *testing.T) {
	t.Run("isolates hosts", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newBk(bkSettings(hostScope), middleware.BreakerOptions{})
			for range 3 {
				h.callHost(t, "a.test", 500)
				h.callHost(t, "b.test", 200)
			}
			err := h.callHost(t, "a.test", 200)
			var ce *middleware.CircuitOpenError
			if !errors.As(err, &ce) || ce.Host != "a.test" || !strings.Contains(err.Error(), "for host a.test") {
				t.Fatalf("call to a.test: %v, want rejected naming a.test", err)
			}
			if err := h.callHost(t, "b.test", 200); err != nil {
				t.Fatalf("call to b.test: %v, want admitted", err)
			}
			want := map[string]middleware.BreakerState{"a.test": middleware.BreakerOpen, "b.test": middleware.BreakerClosed}
			if got := h.b.States(); !maps.Equal(got, want) {
				t.Errorf("States() = %v, want %v", got, want)
			}
			h.wantState(t, middleware.BreakerOpen) // the worst
		})
	})
	t.Run("stays bounded", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			const maxHosts = 8
			h := newBk(bkSettings(hostScope), middleware.BreakerOptions{MaxHosts: maxHosts})
			for i := range maxHosts * 3 {
				h.callHost(t, fmt.Sprintf("h%d.test", i), 500)
				if n := len(h.b.States()); n > maxHosts {
					t.Fatalf("after %d hosts, %d tracked, want <= %d", i+1, n, maxHosts)
				}
			}
		})
	})
	t.Run("evicts closed hosts before open ones", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newBk(bkSettings(hostScope), middleware.BreakerOptions{MaxHosts: 4})
			for range 3 {
				h.callHost(t, "down.test", 500)
			}
			for i := range 12 {
				h.callHost(t, fmt.Sprintf("h%d.test", i), 200)
			}
			if got := h.b.States()["down.test"]; got != middleware.BreakerOpen {
				t.Fatalf("down.test = %v, want still open", got)
			}
			if err := h.callHost(t, "down.test", 200); !errors.Is(err, middleware.ErrCircuitOpen) {
				t.Fatalf("call to down.test: %v, want rejected", err)
			}
		})
	})
	t.Run("when all are open the least recently used goes", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newBk(bkSettings(hostScope), middleware.BreakerOptions{MaxHosts: 2})
			for _, host := range []string{"a.test", "b.test"} {
				for range 3 {
					h.callHost(t, host, 500)
				}
			}
			if err := h.callHost(t, "c.test", 200); err != nil {
				t.Fatal(err)
			}
			want := map[string]middleware.BreakerState{"b.test": middleware.BreakerOpen, "c.test": middleware.BreakerClosed}
			if got := h.b.States(); !maps.Equal(got, want) {
				t.Fatalf("States() = %v, want %v", got, want)
			}
			if err := h.callHost(t, "a.test", 200); err != nil {
				t.Fatalf("a.test after eviction: %v, want admitted afresh", err)
			}
		})
	})
}

func TestBreakerUpdate(t *testing.T) {
	t.Run("keeps an open breaker open with its remaining cooldown", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newBk(bkSettings(nil), middleware.BreakerOptions{})
			h.calls(t, 3, 500)
			time.Sleep(4 * time.Second)
			h.b.Update(bkSettings(func(s *middleware.BreakerSettings) {
				s.Cooldown = time.Minute
				s.FailureThreshold = 1
			}))
			h.wantState(t, middleware.BreakerOpen)
			h.wantRejected(t, 6*time.Second)
			time.Sleep(6 * time.Second)
			h.wantAdmitted(t)
			h.wantState(t, middleware.BreakerClosed)
			h.calls(t, 1, 500) // the new threshold and cooldown apply now
			h.wantRejected(t, time.Minute)
		})
	})
	t.Run("a new threshold applies to the existing count", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newBk(bkSettings(func(s *middleware.BreakerSettings) { s.FailureThreshold = 5 }), middleware.BreakerOptions{})
			h.calls(t, 1, 500)
			h.b.Update(bkSettings(func(s *middleware.BreakerSettings) { s.FailureThreshold = 2 }))
			h.wantState(t, middleware.BreakerClosed)
			h.calls(t, 1, 500)
			h.wantState(t, middleware.BreakerOpen)
		})
	})
	t.Run("a mode change clears the counts", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newBk(bkSettings(nil), middleware.BreakerOptions{})
			h.calls(t, 2, 500)
			h.b.Update(bkSettings(func(s *middleware.BreakerSettings) {
				s.Mode = middleware.BreakerRate
				s.MinimumCalls = 2
				s.FailureRateThreshold = 1
			}))
			h.calls(t, 1, 500)
			h.wantState(t, middleware.BreakerClosed)
			h.calls(t, 1, 500)
			h.wantState(t, middleware.BreakerOpen)
		})
	})
	t.Run("disabling drops the state and passes calls through", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var changes []string
			h := newBk(bkSettings(nil), middleware.BreakerOptions{OnStateChange: func(host string, from, to middleware.BreakerState) {
				changes = append(changes, from.String()+">"+to.String())
			}})
			h.calls(t, 3, 500)
			off := bkSettings(nil)
			off.Enabled = false
			h.b.Update(off)
			h.wantState(t, middleware.BreakerClosed)
			h.calls(t, 10, 500)
			h.b.Update(bkSettings(nil))
			h.calls(t, 2, 500)
			h.wantState(t, middleware.BreakerClosed)
			if want := []string{"closed>open", "open>closed"}; !slicesEqual(changes, want) {
				t.Errorf("changes = %v, want %v", changes, want)
			}
		})
	})
	t.Run("a scope change starts afresh", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newBk(bkSettings(nil), middleware.BreakerOptions{})
			h.calls(t, 3, 500)
			h.b.Update(bkSettings(hostScope))
			if got := h.b.States(); len(got) != 0 {
				t.Fatalf("States() = %v, want none", got)
			}
			h.wantAdmitted(t)
			if got := h.b.States(); !maps.Equal(got, map[string]middleware.BreakerState{"svc.test": middleware.BreakerClosed}) {
				t.Fatalf("States() = %v", got)
			}
		})
	})
}

func slicesEqual(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }

func TestBreakerOnStateChangeOutsideTheLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			b   *middleware.Breaker
			got []string
		)
		b = middleware.NewBreaker(bkSettings(nil), middleware.BreakerOptions{
			OnStateChange: func(host string, from, to middleware.BreakerState) {
				// Both would deadlock if the lock were held.
				now := b.State()
				_ = b.States()
				got = append(got, fmt.Sprintf("%q %v>%v (State %v)", host, from, to, now))
			},
		})
		f := newBkFake()
		h := &bk{b: b, f: f, rt: b.Middleware()(f)}
		h.calls(t, 3, 500)
		time.Sleep(10 * time.Second)
		h.wantAdmitted(t)
		want := []string{
			`"" closed>open (State open)`,
			`"" open>half_open (State half_open)`,
			`"" half_open>closed (State closed)`,
		}
		if !slicesEqual(got, want) {
			t.Fatalf("callbacks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}

// TestBreakerCallbackMayCallThroughTheBreaker guards against recursion and
// deadlock when a callback itself causes a state change.
func TestBreakerCallbackMayCallThroughTheBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h *bk
		var got []string
		s := bkSettings(func(s *middleware.BreakerSettings) { s.FailureThreshold = 1; s.Scope = middleware.ScopeHost })
		h = newBk(s, middleware.BreakerOptions{OnStateChange: func(host string, from, to middleware.BreakerState) {
			got = append(got, host+" "+to.String())
			if host == "a.test" {
				h.callHost(t, "b.test", 500) // opens b while a's change is reported
			}
		}})
		h.callHost(t, "a.test", 500)
		if want := []string{"a.test open", "b.test open"}; !slicesEqual(got, want) {
			t.Fatalf("changes = %v, want %v", got, want)
		}
	})
}

func TestBreakerEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := &bkObserver{}
		log := &bkLog{}
		ev := &middleware.Events{Client: "billing", Observer: obs, Logger: slog.New(log)}
		h := newBk(bkSettings(nil), middleware.BreakerOptions{Events: ev})
		h.calls(t, 3, 503)
		time.Sleep(3 * time.Second)
		h.wantRejected(t, 7*time.Second)
		time.Sleep(7 * time.Second)
		h.wantAdmitted(t)

		wantNames := []string{
			middleware.EventCircuitOpened, middleware.EventCircuitRejected,
			middleware.EventCircuitHalfOpen, middleware.EventCircuitClosed,
		}
		if got := obs.names(); !slicesEqual(got, wantNames) {
			t.Fatalf("events = %v, want %v", got, wantNames)
		}
		opened := obs.named(middleware.EventCircuitOpened)[0]
		if opened.Reason != "3 consecutive failures" || opened.Delay != 10*time.Second ||
			opened.Status != 503 || opened.Client != "billing" || opened.Method != http.MethodGet {
			t.Errorf("opened = %+v", opened)
		}
		if strings.Contains(opened.URL, "s3cr3t") || !strings.Contains(opened.URL, "token=REDACTED") {
			t.Errorf("opened URL = %q, want redacted", opened.URL)
		}
		if rej := obs.named(middleware.EventCircuitRejected)[0]; rej.Delay != 7*time.Second {
			t.Errorf("rejected Delay = %v, want 7s", rej.Delay)
		}
		wantLog := []string{
			"WARN circuit.opened", "DEBUG circuit.rejected",
			"INFO circuit.half_open", "INFO circuit.closed",
		}
		log.mu.Lock()
		defer log.mu.Unlock()
		if !slicesEqual(log.recs, wantLog) {
			t.Errorf("log = %v, want %v", log.recs, wantLog)
		}
	})
}

// TestBreakerConcurrentUse hammers every method at once; run with -race.
func TestBreakerConcurrentUse(t *testing.T) {
	for _, mode := range []middleware.BreakerMode{middleware.BreakerConsecutive, middleware.BreakerRate} {
		for _, scope := range []middleware.BreakerScope{middleware.ScopeClient, middleware.ScopeHost} {
			t.Run(string(mode)+"/"+string(scope), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					s := bkSettings(func(s *middleware.BreakerSettings) {
						s.Mode, s.Scope = mode, scope
						s.MinimumCalls = 5
						s.Window = time.Second
						s.Cooldown = 50 * time.Millisecond
						s.HalfOpenMaxRequests = 2
					})
					b := middleware.NewBreaker(s, middleware.BreakerOptions{
						MaxHosts:      3,
						OnStateChange: func(string, middleware.BreakerState, middleware.BreakerState) { time.Sleep(time.Millisecond) },
						Events:        &middleware.Events{Observer: &bkObserver{}},
					})
					rt := b.Middleware()(middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
						time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
						if rand.IntN(3) == 0 {
							return nil, errBkRefused
						}
						return &http.Response{StatusCode: 200 + 300*rand.IntN(2), Body: http.NoBody, Request: req}, nil
					}))
					var wg sync.WaitGroup
					for g := range 8 {
						wg.Go(func() {
							for i := range 100 {
								req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://h%d.test/", (g+i)%5), nil)
								if resp, err := rt.RoundTrip(req); err == nil {
									resp.Body.Close()
								}
								if n := len(b.States()); n > 3 {
									t.Errorf("%d hosts tracked, want <= 3", n)
								}
							}
						})
					}
					wg.Go(func() {
						for i := range 20 {
							s.FailureThreshold = 1 + i%4
							b.Update(s)
							_ = b.State()
							time.Sleep(10 * time.Millisecond)
						}
					})
					wg.Wait()
				})
			})
		}
	}
}
