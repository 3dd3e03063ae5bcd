package factory_test

import (
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/atomicfile"
	"github.com/switchboard-http/switchboard/internal/fakert"
)

// headerLog is a handler that records one request header per request.
type headerLog struct {
	name string
	mu   sync.Mutex
	got  [][]string
}

func (h *headerLog) handler(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	h.mu.Lock()
	h.got = append(h.got, r.Header.Values(h.name))
	h.mu.Unlock()
}

func (h *headerLog) last(t *testing.T) []string {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.got) == 0 {
		t.Fatal("the server saw no request")
	}
	return h.got[len(h.got)-1]
}

// TestDeadlineHeaderLoopback: over a real socket, a client opened from a
// file with deadline.header sends the time left of its 2s timeout in ms
// (at most 2000, more than 0); a reload to format grpc sends it in
// grpc-timeout syntax; a client without a timeout sends none.
func TestDeadlineHeaderLoopback(t *testing.T) {
	h := &headerLog{name: "X-Request-Timeout-Ms"}
	srv := newServer(t, h.handler)
	yaml := func(format string) string {
		return `
defaults:
  deadline: {header: X-Request-Timeout-Ms, format: ` + format + `}
clients:
  billing: {timeout: 2s}
  open: {timeout: 0s}
`
	}
	var reloaded = make(chan factory.ReloadEvent, 4)
	r, path := openFile(t, yaml("ms"), factory.Options{NoWatch: true, Logger: discard(), OnReload: func(e factory.ReloadEvent) { reloaded <- e }})

	get(t, r.Get("billing"), srv.URL)
	v := h.last(t)
	if len(v) != 1 {
		t.Fatalf("X-Request-Timeout-Ms: got %q, want one value", v)
	}
	if ms, err := strconv.Atoi(v[0]); err != nil || ms <= 0 || ms > 2000 {
		t.Errorf("X-Request-Timeout-Ms: got %q, want whole ms in (0, 2000]", v[0])
	}

	get(t, r.Get("open"), srv.URL)
	if v := h.last(t); len(v) != 0 {
		t.Errorf("client without a timeout: X-Request-Timeout-Ms = %q, want none", v)
	}

	atomicfile.Write(t, path, yaml("grpc"))
	if err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	get(t, r.Get("billing"), srv.URL)
	v = h.last(t)
	if len(v) != 1 || !regexp.MustCompile(`^[0-9]{1,8}u$`).MatchString(v[0]) {
		t.Fatalf("after reload to grpc: got %q, want microseconds in grpc-timeout syntax (2s is 2,000,000u at most)", v)
	}
	if us, _ := strconv.Atoi(v[0][:len(v[0])-1]); us <= 0 || us > 2_000_000 {
		t.Errorf("after reload to grpc: got %q, want (0, 2000000]u", v[0])
	}
	var changed []string
	for len(reloaded) > 0 {
		changed = append(changed, (<-reloaded).Changed...)
	}
	if !slices.Contains(changed, "billing") {
		t.Errorf("reload: changed clients %q, want billing among them", changed)
	}
}

// TestDeadlinePlannedAsItsOwnComponent: a change of deadline.* alone
// rebuilds the stateless deadline layer and keeps every stateful
// component (the component table's row).
func TestDeadlinePlannedAsItsOwnComponent(t *testing.T) {
	c := config.Default()
	c.CircuitBreaker.Enabled = true
	d := c
	d.Deadline.Header = "X-Request-Timeout-Ms"
	old := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": c}}
	next := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": d}}
	plans := factory.Plan(old, next)
	if len(plans) != 1 || plans[0].Action != factory.ActionChanged {
		t.Fatalf("Plan: got %+v, want billing changed", plans)
	}
	p := plans[0]
	if got := p.Component(factory.ComponentDeadline); got != factory.Retuned {
		t.Errorf("deadline: got %s, want retuned", got)
	}
	for _, name := range []string{factory.ComponentBreaker, factory.ComponentBudget, factory.ComponentTransport, factory.ComponentHeaders, factory.ComponentRetry} {
		if got := p.Component(name); got != factory.Unchanged {
			t.Errorf("%s: got %s, want unchanged", name, got)
		}
	}
	if !slices.ContainsFunc(p.Keys, func(k config.KeyChange) bool { return strings.HasSuffix(k.Key, "deadline.header") }) {
		t.Errorf("Keys: got %+v, want deadline.header", p.Keys)
	}
}

// TestDeadlineHeaderAfterRateLimitWait: the time left is measured after
// the wait for a rate-limit token, below attempt_timeout: a second call
// that waits 1s for its token sends 1s less than the first; with an
// attempt_timeout tighter than the call's timeout, that one rules.
func TestDeadlineHeaderAfterRateLimitWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := config.Default()
		c.Timeout = 10 * time.Second
		c.RateLimit.RequestsPerSecond, c.RateLimit.Burst = 1, 1
		c.Deadline.Header = "X-Request-Timeout-Ms"
		tight := c
		tight.Retry.AttemptTimeout = 3 * time.Second
		backend := fakert.New()
		r, err := factory.New(config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": c, "tight": tight}},
			factory.Options{Logger: discard(), Base: backend})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for range 2 {
			get(t, r.Get("billing"), "http://billing.test/v1/x")
		}
		get(t, r.Get("tight"), "http://billing.test/v1/x")
		var got []string
		for _, s := range backend.Requests() {
			got = append(got, s.Header.Get("X-Request-Timeout-Ms"))
		}
		want := []string{"10000", "9000", "3000"}
		if len(got) != len(want) {
			t.Fatalf("requests: got %d, want %d", len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("request %d: X-Request-Timeout-Ms = %q, want %q", i+1, got[i], want[i])
			}
		}
	})
}

// TestDeadlineHeaderOnRoutes: deadline is the client's (a route cannot
// set it; config's tests check the error), and its header goes out on the
// client's routes too, with the time left of the route's own timeout.
func TestDeadlineHeaderOnRoutes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := config.Default()
		c.Timeout = 5 * time.Second
		c.Deadline.Header = "X-Deadline"
		route := config.RouteConfig{Timeout: 2 * time.Second, Headers: c.Headers, Retry: c.Retry, Hedge: c.Hedge}
		c.Routes = map[string]config.RouteConfig{"GET /v1/reports/{id}": route}
		backend := fakert.New()
		r, err := factory.New(config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": c}},
			factory.Options{Logger: discard(), Base: backend})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		get(t, r.Get("billing"), "http://billing.test/v1/reports/7")
		get(t, r.Get("billing"), "http://billing.test/v1/other")
		seen := backend.Requests()
		if got := []string{seen[0].Header.Get("X-Deadline"), seen[1].Header.Get("X-Deadline")}; got[0] != "2000" || got[1] != "5000" {
			t.Errorf("X-Deadline on the route and off it: got %q, want [2000 5000] (the route's timeout, the client's header)", got)
		}
	})
}

// TestDeadlineHeaderBeatsAHeadersEntry: the deadline header is set before
// the Headers layer, so a `headers:` entry of the same name is not sent
// when the request has a deadline (the time left is, once); without a
// deadline no time left is sent and the entry's value goes out as any
// `headers:` entry does.
func TestDeadlineHeaderBeatsAHeadersEntry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := config.Default()
		c.Deadline.Header = "X-Deadline"
		c.Headers = map[string]string{"x-deadline": "999999"}
		withTimeout, without := c, c
		withTimeout.Timeout, without.Timeout = 2*time.Second, 0
		backend := fakert.New()
		r, err := factory.New(config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"timed": withTimeout, "untimed": without}},
			factory.Options{Logger: discard(), Base: backend})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		get(t, r.Get("timed"), "http://billing.test/v1/charges")
		get(t, r.Get("untimed"), "http://billing.test/v1/charges")
		seen := backend.Requests()
		if got := seen[0].Header.Values("X-Deadline"); !slices.Equal(got, []string{"2000"}) {
			t.Errorf("with a deadline: X-Deadline %q, want only the time left [2000]", got)
		}
		if got := seen[1].Header.Values("X-Deadline"); !slices.Equal(got, []string{"999999"}) {
			t.Errorf("without a deadline: X-Deadline %q, want the headers: entry [999999]", got)
		}
	})
}
