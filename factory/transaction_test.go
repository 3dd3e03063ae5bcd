package factory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/atomicfile"
	"github.com/switchboard-http/switchboard/internal/logcapture"
	"github.com/switchboard-http/switchboard/middleware"
)

// statefulClient is a client with every stateful component on: a breaker
// of the given threshold, a bulkhead of 4, a limiter of 100/s with a burst
// of 10, a retry budget, and no retries.
func statefulClient(threshold int) config.ClientConfig {
	c := config.Default()
	c.Retry.MaxRetries = 0
	c.CircuitBreaker.Enabled = true
	c.CircuitBreaker.FailureThreshold = threshold
	c.CircuitBreaker.Cooldown = time.Hour
	c.Bulkhead.MaxConcurrent = 4
	c.RateLimit.RequestsPerSecond = 100
	c.RateLimit.Burst = 10
	c.Retry.Budget.MinPerSecond = 10
	return c
}

// tightened is the edit a rejected reload must not leak: every threshold,
// limit, rate and budget changed.
func tightened() config.ClientConfig {
	c := statefulClient(1)
	c.Bulkhead.MaxConcurrent = 1
	c.RateLimit.RequestsPerSecond = 1
	c.RateLimit.Burst = 1
	c.Retry.Budget.MinPerSecond = 1
	c.Retry.Budget.Ratio = 0.01
	return c
}

// A rejected Apply must leave every serving component exactly as it was:
// before, the clients built ahead of the one whose hook panicked already
// ran the rejected settings (a breaker of threshold 1 opened on one 500).
func TestRejectedApplyChangesNoServingComponent(t *testing.T) {
	for panicking := range 3 {
		names := []string{"a", "b", "c"}
		t.Run("panic building "+names[panicking], func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/fail" {
					w.WriteHeader(http.StatusInternalServerError)
				}
			})
			var armed atomic.Bool
			boom := func(next http.RoundTripper) http.RoundTripper {
				if armed.Load() {
					panic("hook constructor exploded")
				}
				return next
			}
			start := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{
				"a": statefulClient(5), "b": statefulClient(2), "c": statefulClient(5),
			}}
			r, err := factory.New(start, factory.Options{Logger: discard(), ClientHooks: map[string]factory.Hooks{
				names[panicking]: {Outer: []middleware.Middleware{boom}},
			}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })

			// Warm a connection per client, and open b's breaker (threshold 2).
			for _, n := range names {
				get(t, r.Get(n), srv.URL)
			}
			getErr(r.Get("b"), srv.URL+"/fail")
			getErr(r.Get("b"), srv.URL+"/fail")
			before := r.Status()
			if st := statusOf(before, "b").Breaker[""]; st != "open" {
				t.Fatalf("b's breaker before the reload: got %q, want open", st)
			}

			armed.Store(true)
			rejected := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{
				"a": tightened(), "b": tightened(), "c": tightened(),
			}}
			if err := r.Apply(rejected); err == nil || !strings.Contains(err.Error(), "hook constructor exploded") {
				t.Fatalf("Apply: got %v, want the hook's panic", err)
			}
			armed.Store(false)

			after := r.Status()
			if after.LastError == nil {
				t.Fatal("Status().LastError is nil after a rejected Apply")
			}
			after.LastError = nil
			// The rejection is recorded, and nothing else is.
			if len(after.Reloads) != len(before.Reloads)+1 || after.Reloads[0].Err == nil {
				t.Fatalf("Status().Reloads after a rejected Apply: got %+v, want one more, rejected", after.Reloads)
			}
			after.Reloads = before.Reloads
			// Limiter tokens refill with time; what must hold is that no
			// bucket shrank to the rejected burst of 1. An open breaker's
			// time to its probe shrinks with time too: it must stay open.
			for i := range after.Clients {
				if len(after.Clients[i].BreakerProbeIn) != len(before.Clients[i].BreakerProbeIn) {
					t.Fatalf("%s's open breakers after a rejected Apply: got %v, want %v", after.Clients[i].Name, after.Clients[i].BreakerProbeIn, before.Clients[i].BreakerProbeIn)
				}
				after.Clients[i].BreakerProbeIn, before.Clients[i].BreakerProbeIn = nil, nil
				if tk := after.Clients[i].LimiterTokens; tk == nil || *tk <= 1 {
					t.Fatalf("%s's limiter tokens after a rejected Apply: got %v, want > 1 (burst 10 kept)", after.Clients[i].Name, tk)
				}
				after.Clients[i].LimiterTokens, before.Clients[i].LimiterTokens = nil, nil
			}
			if !reflect.DeepEqual(after, before) {
				for i := range after.Clients {
					if !reflect.DeepEqual(after.Clients[i], before.Clients[i]) {
						t.Errorf("client %s changed by a rejected Apply:\nbefore %+v\nafter  %+v", after.Clients[i].Name, before.Clients[i], after.Clients[i])
					}
				}
				t.Fatalf("Status changed by a rejected Apply")
			}
			if n := srv.closed.Load(); n != 0 {
				t.Fatalf("a rejected Apply closed %d connections, want 0", n)
			}
			// The behaviour is the old one too: a's breaker still needs five
			// failures (the rejected threshold was 1), b's stays open, and
			// a's warm connection serves.
			getErr(r.Get("a"), srv.URL+"/fail")
			if st := statusOf(r.Status(), "a").Breaker[""]; st != "closed" {
				t.Fatalf("a's breaker after one failure: got %q, want closed (threshold 5 kept)", st)
			}
			if _, err := r.Get("b").Get(srv.URL); !errors.Is(err, middleware.ErrCircuitOpen) {
				t.Fatalf("b after the rejected Apply: got %v, want ErrCircuitOpen (still open)", err)
			}
			if n := srv.newConns.Load(); n != 3 {
				t.Fatalf("connections: got %d, want 3 (the warm ones reused)", n)
			}
		})
	}
}

// getErr sends a GET and closes what comes back, whatever it is.
func getErr(c *http.Client, url string) error {
	resp, err := c.Get(url)
	if err == nil {
		resp.Body.Close()
	}
	return err
}

// statusOf returns the named client of s.
func statusOf(s factory.Status, name string) factory.ClientStatus {
	for _, c := range s.Clients {
		if c.Name == name {
			return c
		}
	}
	return factory.ClientStatus{}
}

// gatedSource is a Source whose Read can be held: while gate is set, a
// Read takes the tree it would return, reports that it entered, and waits
// for the gate to open before returning it.
type gatedSource struct {
	mu      sync.Mutex
	tree    map[string]any
	gate    chan struct{} // nil: Reads return at once
	entered chan struct{}
}

func (s *gatedSource) Name() string { return "gated" }

func (s *gatedSource) Read() (map[string]any, error) {
	s.mu.Lock()
	tree, gate, entered := s.tree, s.gate, s.entered
	s.gate = nil // only one Read is held
	s.mu.Unlock()
	if gate != nil {
		close(entered)
		<-gate
	}
	return tree, nil
}

func (s *gatedSource) set(tree map[string]any) {
	s.mu.Lock()
	s.tree = tree
	s.mu.Unlock()
}

// Two Reloads overlap, the first held inside a Source's Read with older
// content: the newer content must end up serving. Before, both loaded at
// once and applied in the order they finished, so the older could land
// last and stay (its input hash then was "current").
func TestOverlappingReloadsEndWithTheNewerContent(t *testing.T) {
	src := &gatedSource{tree: sourceEdit("s1")}
	srv := editServer(t)
	r, err := factory.Open(context.Background(), factory.Options{Sources: []config.Source{src}, NoWatch: true, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	gate, entered := make(chan struct{}), make(chan struct{})
	src.mu.Lock()
	src.tree, src.gate, src.entered = sourceEdit("s2"), gate, entered
	src.mu.Unlock()
	first := make(chan error, 1)
	go func() { first <- r.Reload() }()
	<-entered // the first Reload holds s2 and waits

	src.set(sourceEdit("s3"))
	second := make(chan error, 1)
	go func() { second <- r.Reload() }()
	// Give the second Reload time to finish if it could run beside the
	// first (it must not); either way the outcome below must hold.
	select {
	case err := <-second:
		second <- err
	case <-time.After(200 * time.Millisecond):
	}
	close(gate)
	for _, c := range []chan error{first, second} {
		if err := <-c; err != nil {
			t.Fatalf("Reload: %v", err)
		}
	}
	if got := editOf(t, r.Get("billing"), srv.URL); got != "s3" {
		t.Fatalf("X-Edit after both reloads: got %q, want %q (the newer content)", got, "s3")
	}
	if g := r.Status().Generation; g != 3 {
		t.Fatalf("generation: got %d, want 3 (s2, then s3)", g)
	}
}

// A file rewritten every 50 ms never pauses for the 100 ms debounce; the
// max wait (1 s) must still reload it while the writes go on. Before, the
// purely trailing debounce postponed the reload until the writes stopped.
func TestFileRewrittenEvery50msReloadsDuringTheWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clients.yaml")
	atomicfile.Write(t, path, editYAML("w0"))
	events := newReloads()
	// A debounce of 300 ms: however late a loaded machine runs the 50 ms
	// ticks, the writes never pause that long, so only the max wait (1 s)
	// can reload during them.
	r, err := factory.Open(context.Background(), factory.Options{File: path, Debounce: 300 * time.Millisecond, Logger: discard(), OnReload: events.on})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	end := time.Now().Add(3 * time.Second)
	applied := 0
	for i := 1; time.Now().Before(end); i++ {
		<-tick.C
		atomicfile.Write(t, path, editYAML(fmt.Sprintf("w%d", i)))
		for len(events) > 0 {
			if e := <-events; e.Err == nil {
				applied++
			}
		}
	}
	if applied < 2 {
		t.Fatalf("reloads applied during 3 s of writes every 50 ms: got %d, want at least 2", applied)
	}
}

// After Close, a client kept from before and one Get returns after must
// fail with ErrClosed, hold no connection and leave no goroutine.
func TestClientsAfterCloseFailWithErrClosedAndHoldNothing(t *testing.T) {
	release := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
		}
	})
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	r, err := factory.New(config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{
		"billing": config.Default(),
	}}, factory.Options{Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	kept := r.Get("billing")
	get(t, kept, srv.URL) // a warm, idle connection

	// A request in flight at Close finishes; its connection closes after.
	slow := make(chan error, 1)
	go func() { slow <- getErr(kept, srv.URL+"/slow") }()
	waitUntil(t, "the slow request reaches the server", func() bool { return srv.hits.Load() == 2 })

	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := getErr(kept, srv.URL); !errors.Is(err, factory.ErrClosed) {
		t.Fatalf("client from before Close: got %v, want ErrClosed", err)
	}
	if err := getErr(r.Get("later"), srv.URL); !errors.Is(err, factory.ErrClosed) {
		t.Fatalf("client from Get after Close: got %v, want ErrClosed", err)
	}
	if err := getErr(r.Get("billing"), srv.URL); !errors.Is(err, factory.ErrClosed) {
		t.Fatalf("Get(billing) after Close: got %v, want ErrClosed", err)
	}
	close(release)
	if err := <-slow; err != nil {
		t.Fatalf("request in flight at Close: %v, want it to finish", err)
	}
	waitUntil(t, "every connection closed", func() bool { return srv.closed.Load() == srv.newConns.Load() })
	if n := srv.hits.Load(); n != 2 {
		t.Fatalf("server hits: got %d, want 2 (nothing sent after Close)", n)
	}
	if err := r.Reload(); !errors.Is(err, factory.ErrClosed) {
		t.Fatalf("Reload after Close: got %v, want ErrClosed", err)
	}
}

// blockingSource is a Source whose Read blocks until release is closed;
// with ctxAware, it is a config.ContextSource that also returns when its
// context ends.
type blockingSource struct {
	release chan struct{}
	ended   chan struct{} // closed when a Read returns
}

func (s *blockingSource) Name() string { return "blocking" }

func (s *blockingSource) Read() (map[string]any, error) {
	defer close(s.ended)
	<-s.release
	return sourceEdit("late"), nil
}

type ctxBlockingSource struct{ blockingSource }

func (s *ctxBlockingSource) ReadContext(ctx context.Context) (map[string]any, error) {
	defer close(s.ended)
	select {
	case <-s.release:
		return sourceEdit("late"), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Open's context bounds the initial load: a Source that does not answer
// makes Open fail with the context's error when it ends. Before, Open
// checked ctx once and then waited for the Source forever.
func TestOpenFailsWhenItsContextEndsDuringASlowSource(t *testing.T) {
	for _, ctxAware := range []bool{false, true} {
		t.Run(fmt.Sprintf("ContextSource=%v", ctxAware), func(t *testing.T) {
			b := blockingSource{release: make(chan struct{}), ended: make(chan struct{})}
			var src config.Source = &b
			if ctxAware {
				src = &ctxBlockingSource{b}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			start := time.Now()
			r, err := factory.Open(ctx, factory.Options{Sources: []config.Source{src}, Logger: discard()})
			took := time.Since(start)
			if err == nil {
				r.Close()
				t.Fatal("Open succeeded with a Source that never answered")
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Open: got %v, want context.DeadlineExceeded", err)
			}
			if took > time.Second {
				t.Fatalf("Open took %v, want under 1s", took)
			}
			if ctxAware {
				<-b.ended // the Source saw the context end by itself
			} else {
				close(b.release)
				<-b.ended
			}
			// Nothing of Open outlives the Source's Read (TestMain's goleak
			// checks the load goroutine too).
		})
	}
}

// The plan a reload reports (ReloadEvent.Plan), the one Registry.Plan
// returns beforehand and the one Plan computes from the two configs are
// the same value: one decision path.
func TestPlanIsWhatApplyReports(t *testing.T) {
	oldCfg := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{
		"a": statefulClient(5), "b": statefulClient(5), "c": config.Default(),
	}}
	scoped := statefulClient(5)
	scoped.CircuitBreaker.Scope = middleware.ScopeHost
	newCfg := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{
		"a": tightened(), "b": scoped, "d": config.Default(),
	}}
	events := newReloads()
	r, err := factory.New(oldCfg, factory.Options{Logger: discard(), OnReload: events.on})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	dry, err := r.Plan(newCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Apply(newCfg); err != nil {
		t.Fatal(err)
	}
	did := (<-events).Plan
	want := factory.Plan(oldCfg, newCfg)
	if !reflect.DeepEqual(dry, want) || !reflect.DeepEqual(did, want) {
		t.Fatalf("plans differ:\nPlan          %+v\nRegistry.Plan %+v\nApply did     %+v", want, dry, did)
	}
	if got := did[1].Component(factory.ComponentBreaker); got != factory.Replaced {
		t.Fatalf("b's breaker after a scope change: got %s, want replaced", got)
	}
	// What the plan calls retuned really took the new settings, in place.
	a := statusOf(r.Status(), "a")
	if a.BulkheadLimit != 1 {
		t.Errorf("a's bulkhead limit after the retune: got %d, want 1", a.BulkheadLimit)
	}
	if a.LimiterTokens == nil || *a.LimiterTokens > 1 {
		t.Errorf("a's limiter tokens after the retune to burst 1: got %v, want at most 1", a.LimiterTokens)
	}
	if a.BudgetBalance > 20 {
		t.Errorf("a's budget balance after the retune to min_per_second 1: got %v, want at most 20", a.BudgetBalance)
	}
	srv := newServer(t, status(500))
	getErr(r.Get("a"), srv.URL)
	if st := statusOf(r.Status(), "a").Breaker[""]; st != "open" {
		t.Errorf("a's breaker after one failure with the retuned threshold 1: got %q, want open", st)
	}
}

// Hooks for a client name the config does not define are most likely a
// typo: one WARN names it, as Get does for an unknown name, however many
// reloads follow.
func TestClientHooksForAnUnknownNameWarnOnce(t *testing.T) {
	log, logs := logcapture.New()
	cfg := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": config.Default()}}
	r, err := factory.New(cfg, factory.Options{Logger: log, ClientHooks: map[string]factory.Hooks{"biling": {}, "billing": {}}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	changed := cfg
	changed.Clients = map[string]config.ClientConfig{"billing": statefulClient(3)}
	if err := r.Apply(changed); err != nil {
		t.Fatal(err)
	}
	var warned []string
	for _, rec := range logs.Records(t, "") {
		if rec["level"] == "WARN" && strings.Contains(rec["msg"].(string), "ClientHooks") {
			warned = append(warned, rec["client"].(string))
		}
	}
	if !reflect.DeepEqual(warned, []string{"biling"}) {
		t.Fatalf("ClientHooks WARNs: got %v, want one for biling", warned)
	}
}

// The ops endpoint shows each Source and whether its last good snapshot
// serves in place of a Read that failed.
func TestHandlerShowsStaleSources(t *testing.T) {
	src := &memSource{name: "mem", tree: sourceEdit("s1")}
	r, err := factory.Open(context.Background(), factory.Options{Sources: []config.Source{src}, NoWatch: true, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	src.set(nil, errors.New("dial tcp 127.0.0.1:2379: connection refused"), "")
	if err := r.Reload(); err != nil {
		t.Fatalf("Reload with an unreadable Source: %v, want nil (its last good snapshot serves)", err)
	}
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	var doc struct {
		Sources []factory.SourceStatus `json:"sources"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Sources) != 1 || doc.Sources[0].Name != "mem" || !doc.Sources[0].Stale ||
		!strings.Contains(doc.Sources[0].LastError, "connection refused") {
		t.Fatalf("sources in the status JSON: got %+v, want mem stale with its error", doc.Sources)
	}
}

// A rejected reload changes nothing in Status but LastError, the Sources'
// state included: during an outage, a bad file edit leaves the Source shown
// as it was, and a Source that answers again while the file is still bad
// is not shown fresh (its snapshot still serves).
func TestRejectedReloadLeavesSourcesStatusAlone(t *testing.T) {
	src := &memSource{name: "mem", tree: sourceEdit("s1")}
	path := filepath.Join(t.TempDir(), "clients.yaml")
	atomicfile.Write(t, path, editYAML("f1"))
	r, err := factory.Open(context.Background(), factory.Options{File: path, Sources: []config.Source{src}, NoWatch: true, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	src.set(nil, errors.New("connection refused"), "")
	atomicfile.Write(t, path, "clients: {billing: {retry: {max_retries: -1}}}\n")
	if err := r.Reload(); err == nil {
		t.Fatal("Reload of a bad file: got nil, want an error")
	}
	if s := r.Status().Sources; len(s) != 1 || s[0].Stale {
		t.Fatalf("Sources after a rejected reload during an outage: got %+v, want unchanged (fresh)", s)
	}
	atomicfile.Write(t, path, editYAML("f2"))
	if err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	if s := r.Status().Sources; len(s) != 1 || !s[0].Stale {
		t.Fatalf("Sources after an applied reload during the outage: got %+v, want stale", s)
	}
	src.set(sourceEdit("s2"), nil, "")
	atomicfile.Write(t, path, "clients: {billing: {retry: {max_retries: -1}}}\n")
	if err := r.Reload(); err == nil {
		t.Fatal("Reload of a bad file: got nil, want an error")
	}
	if s := r.Status().Sources; len(s) != 1 || !s[0].Stale {
		t.Fatalf("Sources after a rejected reload once the source answered: got %+v, want still stale (its snapshot serves)", s)
	}
}

// Callbacks run with no lock of the registry held: an OnReload that asks
// for Status, Applies or Reloads again (a retry-on-rejection pattern) must
// not deadlock.
func TestOnReloadMayCallTheRegistry(t *testing.T) {
	src := &memSource{name: "mem", tree: sourceEdit("s1")}
	var r *factory.Registry
	calls := make(chan factory.ReloadEvent, 10)
	var once sync.Once
	onReload := func(e factory.ReloadEvent) {
		calls <- e
		_ = r.Status()
		once.Do(func() {
			if err := r.Reload(); err != nil {
				t.Errorf("Reload from OnReload: %v", err)
			}
		})
	}
	var err error
	r, err = factory.Open(context.Background(), factory.Options{Sources: []config.Source{src}, NoWatch: true, Logger: discard(), OnReload: onReload})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	src.set(sourceEdit("s2"), nil, "")
	done := make(chan error, 1)
	go func() { done <- r.Reload() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(reloadDeadline):
		t.Fatal("Reload with an OnReload that calls Reload: deadlocked")
	}
	if e := <-calls; e.Err != nil || e.Generation != 2 {
		t.Fatalf("OnReload: got %+v, want generation 2 applied", e)
	}
}

// Close during a reload blocked in a Source's read: the read ends (a
// ContextSource sees its context cancelled) or is waited for, the reload
// returns ErrClosed, and nothing is logged or reported as a rejection or
// an outage.
func TestCloseDuringAReloadIsQuiet(t *testing.T) {
	for _, ctxAware := range []bool{false, true} {
		t.Run(fmt.Sprintf("ContextSource=%v", ctxAware), func(t *testing.T) {
			gs := &gatedCtxSource{gatedSource: gatedSource{tree: sourceEdit("s1")}, ctxAware: ctxAware}
			log, logs := logcapture.New()
			events := newReloads()
			r, err := factory.Open(context.Background(), factory.Options{Sources: []config.Source{gs}, NoWatch: true, Logger: log, OnReload: events.on})
			if err != nil {
				t.Fatal(err)
			}
			gate, entered := make(chan struct{}), make(chan struct{})
			gs.mu.Lock()
			gs.tree, gs.gate, gs.entered = sourceEdit("s2"), gate, entered
			gs.mu.Unlock()
			reloaded := make(chan error, 1)
			go func() { reloaded <- r.Reload() }()
			<-entered
			closed := make(chan error, 1)
			go func() { closed <- r.Close() }()
			if !ctxAware {
				close(gate) // a plain Source is waited for
			}
			if err := <-closed; err != nil {
				t.Fatal(err)
			}
			// A context-aware read ends with Close: the reload is cut. A plain
			// one is waited for, and may finish its reload before Close
			// takes the registry (nil) or after (ErrClosed): both are right.
			err = <-reloaded
			if !errors.Is(err, factory.ErrClosed) && (ctxAware || err != nil) {
				t.Fatalf("Reload cut by Close: got %v, want ErrClosed", err)
			}
			if ctxAware {
				close(gate)
			}
			want := 0 // cut by Close: nothing to tell
			if err == nil {
				want = 1 // it finished first: its applied reload is told
			}
			if n := len(events); n != want {
				t.Fatalf("OnReload calls: got %d, want %d (Reload returned %v)", n, want, err)
			}
			for _, rec := range logs.Records(t, "") {
				if rec["level"] == "ERROR" || rec["level"] == "WARN" {
					t.Fatalf("logged at %v during Close: %v", rec["level"], rec["msg"])
				}
			}
			if s := r.Status().Sources; len(s) != 1 || s[0].Stale {
				t.Fatalf("Sources after Close: got %+v, want not stale", s)
			}
		})
	}
}

// gatedCtxSource is a gatedSource that, with ctxAware, is a
// config.ContextSource whose held read also ends with its context.
type gatedCtxSource struct {
	gatedSource
	ctxAware bool
}

func (s *gatedCtxSource) ReadContext(ctx context.Context) (map[string]any, error) {
	if !s.ctxAware {
		return s.Read()
	}
	s.mu.Lock()
	tree, gate, entered := s.tree, s.gate, s.entered
	s.gate = nil
	s.mu.Unlock()
	if gate != nil {
		close(entered)
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return tree, nil
}

// Source notifications that never pause for the debounce still reload at
// least once per Options.MaxDebounce.
func TestSourceNotificationsReloadWithinMaxDebounce(t *testing.T) {
	src := &memSource{name: "mem", tree: sourceEdit("n0")}
	events := newReloads()
	r, err := factory.Open(context.Background(), factory.Options{
		Sources: []config.Source{src}, Debounce: 300 * time.Millisecond, MaxDebounce: 500 * time.Millisecond,
		Logger: discard(), OnReload: events.on,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	end := time.Now().Add(2 * time.Second)
	applied := 0
	for i := 1; time.Now().Before(end); i++ {
		<-tick.C
		src.set(sourceEdit(fmt.Sprintf("n%d", i)), nil, "")
		for len(events) > 0 {
			if e := <-events; e.Err == nil {
				applied++
			}
		}
	}
	if applied < 2 {
		t.Fatalf("reloads applied during 2 s of notifications every 50 ms with MaxDebounce 500ms: got %d, want at least 2", applied)
	}
}

// An unreadable Source logs one WARN per outage, not one per reload.
func TestSourceOutageWarnsOnce(t *testing.T) {
	src := &memSource{name: "mem", tree: sourceEdit("s1")}
	log, logs := logcapture.New()
	r, err := factory.Open(context.Background(), factory.Options{Sources: []config.Source{src}, NoWatch: true, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	src.set(nil, errors.New("connection refused"), "")
	for range 5 {
		if err := r.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	const msg = "config source unreadable; its last good snapshot serves, the other layers' changes still apply"
	if n := len(logs.Records(t, msg)); n != 1 {
		t.Fatalf("WARNs over five reloads of one outage: got %d, want 1", n)
	}
	src.set(sourceEdit("s2"), nil, "")
	if err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	src.set(nil, errors.New("connection refused"), "")
	if err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	if n := len(logs.Records(t, msg)); n != 2 {
		t.Fatalf("WARNs after a second outage: got %d, want 2", n)
	}
}

// panickyHandler is a slog handler that panics on records whose message
// contains trigger, and drops the rest.
type panickyHandler struct{ trigger string }

func (h panickyHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h panickyHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.trigger) {
		panic("log handler exploded")
	}
	return nil
}
func (h panickyHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h panickyHandler) WithGroup(string) slog.Handler      { return h }

// Nothing after the commit can turn it into a rejection: a log handler
// that panics on the WARN an applied config logs leaves the reload
// applied, reported as applied, with LastError clear.
func TestPanicAfterTheCommitLeavesTheReloadApplied(t *testing.T) {
	events := newReloads()
	r, err := factory.New(config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"a": config.Default()}},
		factory.Options{Logger: slog.New(panickyHandler{trigger: "insecure_skip_verify"}), OnReload: events.on})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	insecure := config.Default()
	insecure.TLS.InsecureSkipVerify = true
	if err := r.Apply(config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"a": insecure}}); err != nil {
		t.Fatalf("Apply whose WARN panics in the log handler: got %v, want nil (the commit stands)", err)
	}
	if e := <-events; e.Err != nil || e.Generation != 2 {
		t.Fatalf("OnReload: got %+v, want generation 2 applied", e)
	}
	if st := r.Status(); st.Generation != 2 || st.LastError != nil || !clientStatus(t, r, "a").Config.TLS.InsecureSkipVerify {
		t.Fatalf("Status: generation %d, LastError %v; want 2, nil and the new config", st.Generation, st.LastError)
	}
}
