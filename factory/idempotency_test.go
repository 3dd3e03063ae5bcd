package factory_test

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/google/uuid"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/internal/logcapture"
)

// keyLog is a backend that answers 503 to the first two requests of each
// idempotency key (and to every request without one), then 200, and
// records the key of every request, as a server that dedupes by key sees
// them.
type keyLog struct {
	mu   sync.Mutex
	keys []string // per request, in arrival order; "" for none
	seen map[string]int
}

func (k *keyLog) handler(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	key := r.Header.Get("Idempotency-Key")
	k.mu.Lock()
	k.keys = append(k.keys, key)
	if k.seen == nil {
		k.seen = map[string]int{}
	}
	k.seen[key]++
	n := k.seen[key]
	k.mu.Unlock()
	if key == "" || n <= 2 {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusCreated)
}

func (k *keyLog) all() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.keys...)
}

// TestIdempotencyKeyLoopback: over a real socket, a client opened from a
// file with retry.idempotency_key enabled sends a POST three times with one
// UUIDv4 key, and its next POST with a new one; a client without it sends
// its POST once, with no key.
func TestIdempotencyKeyLoopback(t *testing.T) {
	backend := &keyLog{}
	srv := newServer(t, backend.handler)
	r, _ := openFile(t, `
defaults:
  retry: {max_retries: 2, `+fastRetry+`}
clients:
  billing:
    retry:
      idempotency_key: {enabled: true}
  legacy: {}
`, factory.Options{NoWatch: true, Logger: discard()})

	billing := r.Get("billing")
	for call := 1; call <= 2; call++ {
		resp, err := billing.Post(srv.URL+"/v1/charges", "application/json", strings.NewReader(`{"amount":100}`))
		if err != nil {
			t.Fatalf("call %d: %v", call, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("call %d: status %d, want 201 on the third attempt", call, resp.StatusCode)
		}
	}
	keys := backend.all()
	if len(keys) != 6 {
		t.Fatalf("requests: got %d, want 6 (3 attempts per call)", len(keys))
	}
	for call := range 2 {
		k := keys[3*call]
		if id, err := uuid.Parse(k); err != nil || id.Version() != 4 {
			t.Fatalf("call %d key %q: want a UUIDv4 (%v)", call+1, k, err)
		}
		for i := 1; i < 3; i++ {
			if keys[3*call+i] != k {
				t.Errorf("call %d attempt %d: key %q, want %q (one key per logical call)", call+1, i+1, keys[3*call+i], k)
			}
		}
	}
	if keys[0] == keys[3] {
		t.Errorf("both calls sent key %q: want a new key per logical call", keys[0])
	}

	resp, err := r.Get("legacy").Post(srv.URL+"/v1/charges", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if keys := backend.all()[6:]; len(keys) != 1 || keys[0] != "" {
		t.Errorf("legacy client: requests with keys %q, want one request without a key (POST not retried)", keys)
	}
}

// TestIdempotencyKeyRouteEnables: a route may switch idempotency keys on
// for its calls alone: a POST on it is retried with one key; a POST on
// the client's other paths is sent once, without one.
func TestIdempotencyKeyRouteEnables(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := config.Default()
		c.Retry.MaxRetries = 2
		on := c
		on.Retry.IdempotencyKey.Enabled = true
		c.Routes = map[string]config.RouteConfig{"POST /v1/charges": {Timeout: on.Timeout, Headers: on.Headers, Retry: on.Retry, Hedge: on.Hedge}}
		backend := fakert.Status(503)
		r, err := factory.New(config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": c}},
			factory.Options{Logger: discard(), Base: backend})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		billing := r.Get("billing")
		for _, path := range []string{"/v1/charges", "/v1/refunds"} {
			resp, err := billing.Post("http://billing.test"+path, "application/json", strings.NewReader(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		seen := backend.Requests()
		if len(seen) != 4 {
			t.Fatalf("requests: got %d, want 4 (3 on the route, 1 elsewhere)", len(seen))
		}
		key := seen[0].Header.Get("Idempotency-Key")
		if key == "" {
			t.Fatal("route call: no Idempotency-Key")
		}
		for i, s := range seen[:3] {
			if !strings.HasSuffix(s.URL, "/v1/charges") || s.Header.Get("Idempotency-Key") != key {
				t.Errorf("request %d: %s with key %q, want /v1/charges with %q", i+1, s.URL, s.Header.Get("Idempotency-Key"), key)
			}
		}
		if s := seen[3]; !strings.HasSuffix(s.URL, "/v1/refunds") || len(s.Header.Values("Idempotency-Key")) != 0 {
			t.Errorf("request 4: %s with key %q, want /v1/refunds without one", s.URL, s.Header.Values("Idempotency-Key"))
		}
	})
}

// TestIdempotencyKeyKeptAcrossRedirect: a POST redirected with 307 (same
// method, same body) is one logical call: the hop carries the key its
// first request was sent with, not a new one.
func TestIdempotencyKeyKeptAcrossRedirect(t *testing.T) {
	var mu sync.Mutex
	var keys []string
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		keys = append(keys, r.URL.Path+" "+r.Header.Get("Idempotency-Key"))
		mu.Unlock()
		if r.URL.Path == "/v1/charges" {
			http.Redirect(w, r, "/v2/charges", http.StatusTemporaryRedirect)
			return
		}
		w.WriteHeader(http.StatusCreated)
	})
	r, _ := openFile(t, `
clients:
  billing:
    retry: {idempotency_key: {enabled: true}}
`, factory.Options{NoWatch: true, Logger: discard()})
	resp, err := r.Get("billing").Post(srv.URL+"/v1/charges", "application/json", strings.NewReader(`{"amount":100}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("status: got %d, want 201 after the redirect", resp.StatusCode)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 2 {
		t.Fatalf("requests: got %q, want 2", keys)
	}
	_, key, _ := strings.Cut(keys[0], " ")
	if _, hop, _ := strings.Cut(keys[1], " "); key == "" || hop != key {
		t.Errorf("requests %q: want the redirect hop to carry the first request's key", keys)
	}
}

// TestIdempotencyKeyRedirectLoopback: over real sockets, a POST redirected
// with 307 to another origin (another server) reaches it with a new key,
// never the first origin's; a POST answered 303 is followed by a GET
// (keyed too, here) with a new key, not the POST's.
func TestIdempotencyKeyRedirectLoopback(t *testing.T) {
	var mu sync.Mutex
	var keys []string
	record := func(r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		keys = append(keys, r.Method+" "+r.Header.Get("Idempotency-Key"))
		mu.Unlock()
	}
	other := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		record(r)
		w.WriteHeader(http.StatusCreated)
	})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		record(r)
		switch r.URL.Path {
		case "/elsewhere":
			http.Redirect(w, r, other.URL+"/v1/charges", http.StatusTemporaryRedirect)
		case "/see-other":
			http.Redirect(w, r, "/v1/charges/1", http.StatusSeeOther)
		default:
			w.WriteHeader(http.StatusOK)
		}
	})
	r, _ := openFile(t, `
clients:
  billing:
    retry: {idempotency_key: {enabled: true, methods: [POST, GET]}}
`, factory.Options{NoWatch: true, Logger: discard()})
	for _, path := range []string{"/elsewhere", "/see-other"} {
		mu.Lock()
		keys = nil
		mu.Unlock()
		resp, err := r.Get("billing").Post(srv.URL+path, "application/json", strings.NewReader(`{"amount":100}`))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		mu.Lock()
		got := append([]string(nil), keys...)
		mu.Unlock()
		if len(got) != 2 {
			t.Fatalf("%s: requests %q, want 2", path, got)
		}
		_, k1, _ := strings.Cut(got[0], " ")
		_, k2, _ := strings.Cut(got[1], " ")
		if k1 == "" || k2 == "" || k1 == k2 {
			t.Errorf("%s: requests %q, want the hop to carry a new key of its own", path, got)
		}
	}
}

// TestIdempotencyKeyWithNoMethodsIsLogged: retry.idempotency_key enabled
// with methods: [] is valid but keys nothing; a load logs a WARN naming the
// key, on the client or on the route that sets it (once, not per route,
// when the client's own setting is the no-op).
func TestIdempotencyKeyWithNoMethodsIsLogged(t *testing.T) {
	logger, logs := logcapture.New()
	openFile(t, `
clients:
  billing:
    retry: {idempotency_key: {enabled: true, methods: []}}
    routes:
      "POST /v1/": {timeout: 5s}
  orders:
    routes:
      "POST /v1/": {retry: {idempotency_key: {enabled: true, methods: []}}}
  search:
    retry: {idempotency_key: {enabled: true}}
`, factory.Options{NoWatch: true, Logger: logger})
	var got []string
	for _, rec := range logs.Records(t, "retry.idempotency_key is enabled with methods: []: no request gets a key") {
		if rec["level"] != "WARN" {
			t.Errorf("got %v, want a WARN", rec)
		}
		got = append(got, fmt.Sprint(rec["client"], " ", rec["key"]))
	}
	slices.Sort(got)
	want := []string{
		"billing clients.billing.retry.idempotency_key.methods",
		`orders clients.orders.routes."POST /v1/".retry.idempotency_key.methods`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("WARNs: got %q, want %q", got, want)
	}
}
