package factory_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/eventrec"
	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/middleware"
)

// coalescing returns a client config with coalescing on, no retries
// unless set, and a bulkhead of one slot without a queue: a second call
// in flight of its own would be rejected.
func coalescing() config.ClientConfig {
	c := config.Default()
	c.Coalesce.Enabled = true
	c.Bulkhead = middleware.BulkheadSettings{MaxConcurrent: 1}
	c.Retry.InitialBackoff, c.Retry.MaxBackoff, c.Retry.Jitter = time.Second, time.Second, middleware.JitterNone
	return c
}

// getBody sends a GET through c and returns its body, or the error.
func getBody(c *http.Client, url string) (string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestCoalescedCallsShareOneTripThroughThePipeline: concurrent identical
// calls go through the retries, the bulkhead and the breaker once, and
// each caller counts as a call of its own in Status.
func TestCoalescedCallsShareOneTripThroughThePipeline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		backend := fakert.New(fakert.Step{Status: 503, Delay: time.Second}, fakert.Step{Body: "ok", Delay: time.Second})
		rec := &eventrec.Recorder{}
		r, err := factory.New(groupConfig(map[string]config.ClientConfig{"svc": coalescing()}),
			factory.Options{Base: backend, Logger: discard(), Observer: rec})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		c := r.Get("svc")
		var wg sync.WaitGroup
		for i := range 5 {
			wg.Go(func() {
				if got, err := getBody(c, "http://svc.test/items"); err != nil || got != "ok" {
					t.Errorf("caller %d: %q, %v; want ok", i, got, err)
				}
			})
			if i == 0 {
				synctest.Wait() // the first caller leads the trip
			}
		}
		wg.Wait()
		if got := backend.Calls(); got != 2 {
			t.Errorf("backend requests = %d, want 2 (one trip: its attempt and one retry)", got)
		}
		st := clientStatus(t, r, "svc")
		if st.Calls != 5 || st.Rejections != 0 || st.CoalesceJoined != 4 {
			t.Errorf("calls %d, rejections %d, coalesce_joined %d; want 5, 0, 4", st.Calls, st.Rejections, st.CoalesceJoined)
		}
		joined := rec.Named(middleware.EventCoalesceJoined)
		if len(joined) != 4 || joined[0].Client != "svc" {
			t.Errorf("%s events: %+v, want 4 of client svc", middleware.EventCoalesceJoined, joined)
		}
	})
}

// TestCoalesceOffIsNoLayer: with coalescing off (the default), the same
// calls each go their own way (the bulkhead of one rejects the others).
func TestCoalesceOffIsNoLayer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		backend := fakert.New(fakert.Step{Body: "ok", Delay: time.Second})
		cc := coalescing()
		cc.Coalesce.Enabled = false
		r, err := factory.New(groupConfig(map[string]config.ClientConfig{"svc": cc}), factory.Options{Base: backend, Logger: discard()})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		c := r.Get("svc")
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() { getBody(c, "http://svc.test/items") })
		}
		wg.Wait()
		if st := clientStatus(t, r, "svc"); st.Rejections != 2 || st.CoalesceJoined != 0 {
			t.Errorf("rejections %d, coalesce_joined %d; want 2, 0", st.Rejections, st.CoalesceJoined)
		}
	})
}

// TestCoalesceReloadFinishesTripsInTheOldLayer: a reload during a trip
// leaves it to finish where it started, every caller who joined it gets
// its answer, the plan names the component, and the count goes on.
func TestCoalesceReloadFinishesTripsInTheOldLayer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		backend := fakert.New(fakert.Step{Body: "ok", Delay: time.Second})
		cfg := groupConfig(map[string]config.ClientConfig{"svc": coalescing()})
		r, err := factory.New(cfg, factory.Options{Base: backend, Logger: discard()})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		c := r.Get("svc")
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Go(func() {
				if got, err := getBody(c, "http://svc.test/items"); err != nil || got != "ok" {
					t.Errorf("caller %d: %q, %v; want ok", i, got, err)
				}
			})
		}
		synctest.Wait()

		next := coalescing()
		next.Coalesce.MaxBody = 10
		cfg2 := groupConfig(map[string]config.ClientConfig{"svc": next})
		plans, err := r.Plan(cfg2)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(plans[0].Components, func(p factory.ComponentPlan) bool {
			return p.Component == factory.ComponentCoalesce && p.Change == factory.Retuned
		}) {
			t.Errorf("plan %+v: want the coalesce component retuned", plans[0].Components)
		}
		if err := r.Apply(cfg2); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if got := backend.Calls(); got != 1 {
			t.Errorf("backend requests = %d, want 1 (the trip under way finished in the old layer)", got)
		}
		// The new layer coalesces with the new settings; the count goes on.
		for range 2 {
			wg.Go(func() { getBody(c, "http://svc.test/items") })
		}
		wg.Wait()
		if got := clientStatus(t, r, "svc").CoalesceJoined; got != 3 {
			t.Errorf("coalesce_joined after the reload = %d, want 3 (2 before, 1 after)", got)
		}
	})
}

// TestCoalesceCreatesOneGoroutinePerTripAndLeavesNone: a coalesced trip
// runs on a goroutine of its own, one per trip, gone once the call
// returns; a call coalescing does not take starts none.
func TestCoalesceCreatesOneGoroutinePerTripAndLeavesNone(t *testing.T) {
	if _, ok := goroutinesCreated(); !ok {
		t.Fatal("the runtime does not report goroutines created (Go 1.26+ needed)")
	}
	const trips = 200
	cc := config.Default()
	cc.Coalesce.Enabled = true
	r, err := factory.New(groupConfig(map[string]config.ClientConfig{"svc": cc}), factory.Options{Base: &valueBase{}, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c := r.Get("svc")
	if err := getOK(c); err != nil { // warm-up
		t.Fatal(err)
	}
	count := func(method string) uint64 {
		before, _ := goroutinesCreated()
		for range trips {
			req, _ := http.NewRequest(method, "http://svc.test/v1/items", nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		after, _ := goroutinesCreated()
		return after - before
	}
	baseline := runtime.NumGoroutine()
	const slack = 4
	if got := count(http.MethodGet); got < trips || got > trips+slack {
		t.Errorf("goroutines created by %d coalesced trips: %d, want %d to %d", trips, got, trips, trips+slack)
	}
	if got := count(http.MethodDelete); got > slack {
		t.Errorf("goroutines created by %d calls coalescing does not take: %d, want at most %d", trips, got, slack)
	}
	if got := runtime.NumGoroutine(); got > baseline+slack {
		t.Errorf("goroutines after the calls: %d, want at most %d", got, baseline+slack)
	}
}

// TestCoalesceLoopbackFromYAML: 200 concurrent identical GETs from a
// client configured in YAML reach a real server once.
func TestCoalesceLoopbackFromYAML(t *testing.T) {
	const callers = 200
	var hits atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
		fmt.Fprint(w, "report")
	}))
	defer srv.Close()
	r, err := factory.Open(context.Background(), factory.Options{NoWatch: true, Logger: discard(), File: writeTemp(t, `
clients:
  reports:
    base_url: `+srv.URL+`/
    coalesce: {enabled: true}
`)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c := r.Get("reports")

	var wg sync.WaitGroup
	bodies := make([]string, callers)
	for i := range callers {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, "/v1/report?day=1", nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Errorf("caller %d: %v", i, err)
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			bodies[i] = string(b)
		})
	}
	// Hold the one request until every other caller has joined it.
	deadline := time.Now().Add(30 * time.Second)
	for clientStatus(t, r, "reports").CoalesceJoined < callers-1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	close(release)
	wg.Wait()
	if got := hits.Load(); got != 1 {
		t.Errorf("server requests for %d concurrent identical GETs = %d, want 1", callers, got)
	}
	for i, b := range bodies {
		if b != "report" {
			t.Fatalf("caller %d: body %q, want report", i, b)
		}
	}
	if st := clientStatus(t, r, "reports"); st.Calls != callers || st.CoalesceJoined != callers-1 {
		t.Errorf("calls %d, coalesce_joined %d; want %d, %d", st.Calls, st.CoalesceJoined, callers, callers-1)
	}
}
