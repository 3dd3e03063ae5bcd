package factory_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/middleware"
)

// grouped returns a client with no retries whose breaker (threshold 2),
// bulkhead (1 slot) and limiter (1/s, burst 1) are shared through groups
// named g ("" = own), each switched on by the flags.
func grouped(g string, breaker, bulkhead, limiter bool) config.ClientConfig {
	c := config.Default()
	c.Retry.MaxRetries = 0
	if breaker {
		c.CircuitBreaker.Enabled, c.CircuitBreaker.FailureThreshold, c.CircuitBreaker.Cooldown = true, 2, time.Hour
		c.CircuitBreaker.Group = g
	}
	if bulkhead {
		c.Bulkhead.MaxConcurrent, c.Bulkhead.Group = 1, g
	}
	if limiter {
		c.RateLimit.RequestsPerSecond, c.RateLimit.Burst, c.RateLimit.Group = 1, 1, g
	}
	return c
}

func groupConfig(clients map[string]config.ClientConfig) config.Config {
	return config.Config{Defaults: config.Default(), Clients: clients}
}

// Two clients of one backend trip together: failures through either count
// on the one breaker of their group, which then rejects both.
func TestGroupBreakerOpensForEveryMember(t *testing.T) {
	srv := newServer(t, status(500))
	r, err := factory.New(groupConfig(map[string]config.ClientConfig{
		"billing-read": grouped("billing", true, false, false), "billing-write": grouped("billing", true, false, false),
	}), factory.Options{Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	getErr(r.Get("billing-read"), srv.URL)
	getErr(r.Get("billing-write"), srv.URL)
	for _, name := range []string{"billing-read", "billing-write"} {
		if err := getErr(r.Get(name), srv.URL); !errors.Is(err, middleware.ErrCircuitOpen) {
			t.Fatalf("%s after one failure each: got %v, want ErrCircuitOpen (one shared breaker, threshold 2)", name, err)
		}
		if st := clientStatus(t, r, name); st.Groups["circuit_breaker"] != "billing" || st.Breaker[""] != "open" {
			t.Fatalf("%s status: groups %v, breaker %v; want group billing, open", name, st.Groups, st.Breaker)
		}
	}
	if n := srv.hits.Load(); n != 2 {
		t.Fatalf("server hits: got %d, want 2", n)
	}
}

// A shared bulkhead of 1 admits one call across both clients.
func TestGroupBulkheadAdmitsOneCallAcrossMembers(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
	})
	r, err := factory.New(groupConfig(map[string]config.ClientConfig{
		"a": grouped("pool", false, true, false), "b": grouped("pool", false, true, false),
	}), factory.Options{Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	first := make(chan error, 1)
	go func() { first <- getErr(r.Get("a"), srv.URL) }()
	<-entered
	if err := getErr(r.Get("b"), srv.URL); !errors.Is(err, middleware.ErrBulkheadFull) {
		t.Fatalf("b while a holds the shared slot: got %v, want ErrBulkheadFull", err)
	}
	if st := clientStatus(t, r, "b"); st.BulkheadInUse != 1 || st.Groups["bulkhead"] != "pool" {
		t.Fatalf("b's status: in use %d, groups %v; want 1 (a's call) and group pool", st.BulkheadInUse, st.Groups)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}

// A shared limiter paces both clients together: at 1/s with a burst of 1,
// two calls through a and one through b go out at 0 s, 1 s and 2 s.
func TestGroupLimiterPacesMembersTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var at []time.Duration
		start := time.Now()
		base := middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			mu.Lock()
			at = append(at, time.Since(start))
			mu.Unlock()
			return fakert.Status(200).RoundTrip(req)
		})
		r, err := factory.New(groupConfig(map[string]config.ClientConfig{
			"a": grouped("vendor", false, false, true), "b": grouped("vendor", false, false, true),
		}), factory.Options{Logger: discard(), Base: base})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for _, name := range []string{"a", "b", "a"} {
			if err := getErr(r.Get(name), "http://vendor.test/"); err != nil {
				t.Fatal(err)
			}
		}
		want := []time.Duration{0, time.Second, 2 * time.Second}
		for i := range want {
			if at[i] != want[i] {
				t.Fatalf("attempts at %v, want %v (one limiter for both)", at, want)
			}
		}
	})
}

// Members of a group must agree on the group's settings: the error names
// both clients and the first key that differs.
func TestGroupWithUnequalSettingsIsRejected(t *testing.T) {
	b := grouped("billing", true, false, false)
	b.CircuitBreaker.FailureThreshold = 7
	_, err := factory.New(groupConfig(map[string]config.ClientConfig{
		"billing-read": grouped("billing", true, false, false), "billing-write": b,
	}), factory.Options{Logger: discard()})
	want := `clients.billing-write.circuit_breaker.group: group "billing" needs the same circuit_breaker settings in every client: failure_threshold is 7 here and 2 in clients.billing-read`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want an error containing %q", err, want)
	}
}

// Removing one client from a group keeps the group's state for the other,
// and a reload that retunes the group keeps its state too.
func TestGroupStateOutlivesAMemberAndARetune(t *testing.T) {
	srv := newServer(t, status(500))
	events := newReloads()
	r, err := factory.New(groupConfig(map[string]config.ClientConfig{
		"a": grouped("g", true, false, false), "b": grouped("g", true, false, false),
	}), factory.Options{Logger: discard(), OnReload: events.on})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	getErr(r.Get("a"), srv.URL)
	getErr(r.Get("b"), srv.URL) // the group's breaker opens

	if err := r.Apply(groupConfig(map[string]config.ClientConfig{"b": grouped("g", true, false, false)})); err != nil {
		t.Fatal(err)
	}
	if err := getErr(r.Get("b"), srv.URL); !errors.Is(err, middleware.ErrCircuitOpen) {
		t.Fatalf("b after a left the group: got %v, want ErrCircuitOpen (the group's state kept)", err)
	}
	<-events

	retuned := grouped("g", true, false, false)
	retuned.CircuitBreaker.FailureThreshold = 9
	retuned.CircuitBreaker.Cooldown = time.Nanosecond // the next call probes, and its success closes
	if err := r.Apply(groupConfig(map[string]config.ClientConfig{"b": retuned, "c": retuned})); err != nil {
		t.Fatal(err)
	}
	plan := (<-events).Plan
	for _, p := range plan {
		if p.Name == "a" {
			continue
		}
		if cp := p.Components[1]; cp.Group != "g" {
			t.Fatalf("%s's breaker plan: got %+v, want group g", p.Name, cp)
		}
	}
	for _, name := range []string{"b", "c"} {
		if err := getErr(r.Get(name), srv.URL); !errors.Is(err, middleware.ErrCircuitOpen) {
			t.Fatalf("%s after the group's retune: got %v, want ErrCircuitOpen (retuned in place, still open for its old cooldown)", name, err)
		}
	}
	if n := srv.hits.Load(); n != 2 {
		t.Fatalf("server hits: got %d, want 2", n)
	}
}

// A retune of a group's breaker really applies, once, to the one shared
// breaker: after the threshold goes from 2 to 4, three failures across
// the members leave it closed and the fourth opens it.
func TestGroupRetuneApplies(t *testing.T) {
	srv := newServer(t, status(500))
	r, err := factory.New(groupConfig(map[string]config.ClientConfig{
		"a": grouped("g", true, false, false), "b": grouped("g", true, false, false),
	}), factory.Options{Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	four := grouped("g", true, false, false)
	four.CircuitBreaker.FailureThreshold = 4
	if err := r.Apply(groupConfig(map[string]config.ClientConfig{"a": four, "b": four})); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"a", "b", "a"} {
		getErr(r.Get(name), srv.URL)
		if st := clientStatus(t, r, "b").Breaker[""]; st != "closed" {
			t.Fatalf("after %d failures with threshold 4: breaker %s, want closed", i+1, st)
		}
	}
	getErr(r.Get("b"), srv.URL)
	if st := clientStatus(t, r, "a").Breaker[""]; st != "open" {
		t.Fatalf("after 4 failures: breaker %s, want open", st)
	}
}

// A shared component's events carry the client whose call it was and the
// group.
func TestGroupEventsCarryClientAndGroup(t *testing.T) {
	srv := newServer(t, status(500))
	var mu sync.Mutex
	var got []middleware.Event
	obs := middleware.ObserverFunc(func(_ context.Context, e middleware.Event) {
		if strings.HasPrefix(e.Name, "circuit.") {
			mu.Lock()
			got = append(got, e)
			mu.Unlock()
		}
	})
	r, err := factory.New(groupConfig(map[string]config.ClientConfig{
		"a": grouped("g", true, false, false), "b": grouped("g", true, false, false),
	}), factory.Options{Logger: discard(), Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	getErr(r.Get("a"), srv.URL)
	getErr(r.Get("b"), srv.URL) // opens: caused by b
	getErr(r.Get("a"), srv.URL) // rejected: a's call
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0].Name != middleware.EventCircuitOpened || got[0].Client != "b" || got[0].Group != "g" ||
		got[1].Name != middleware.EventCircuitRejected || got[1].Client != "a" || got[1].Group != "g" {
		t.Fatalf("events: got %+v, want circuit.opened by b and circuit.rejected for a, both in group g", got)
	}
}

// HooksFor gives each client hooks made for its name (an integration that
// labels by client), inside Hooks and outside ClientHooks.
func TestHooksForLabelsEachClient(t *testing.T) {
	var mu sync.Mutex
	var order []string
	mark := func(what string) middleware.Middleware {
		return func(next http.RoundTripper) http.RoundTripper {
			return middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
				mu.Lock()
				order = append(order, what)
				mu.Unlock()
				return next.RoundTrip(req)
			})
		}
	}
	r, err := factory.New(groupConfig(map[string]config.ClientConfig{"a": config.Default(), "b": config.Default()}), factory.Options{
		Logger: discard(),
		Base:   fakert.Status(200),
		Hooks:  factory.Hooks{Outer: []middleware.Middleware{mark("all")}},
		HooksFor: func(name string) factory.Hooks {
			return factory.Hooks{Outer: []middleware.Middleware{mark("for:" + name)}}
		},
		ClientHooks: map[string]factory.Hooks{"b": {Outer: []middleware.Middleware{mark("own:b")}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	getErr(r.Get("a"), "http://svc.test/")
	getErr(r.Get("b"), "http://svc.test/")
	want := []string{"all", "for:a", "all", "for:b", "own:b"}
	if strings.Join(order, ",") != strings.Join(want, ",") {
		t.Fatalf("hooks ran %v, want %v", order, want)
	}
}
