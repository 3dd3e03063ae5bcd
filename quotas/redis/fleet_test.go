package redisquota_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/middleware"
	redisquota "github.com/switchboard-http/switchboard/quotas/redis"
)

// arrival is one request the backend saw.
type arrival struct {
	at           time.Time
	proc, tenant string
}

// backend is an HTTP server that records every request; answer, when
// set, writes the response of a request instead of a 200.
type backend struct {
	*httptest.Server
	mu     sync.Mutex
	seen   []arrival
	answer func(a arrival, w http.ResponseWriter) bool
}

func newBackend(t *testing.T) *backend {
	b := &backend{}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := arrival{time.Now(), r.Header.Get("X-Proc"), r.Header.Get("X-Tenant-ID")}
		b.mu.Lock()
		b.seen = append(b.seen, a)
		answer := b.answer
		b.mu.Unlock()
		if answer == nil || !answer(a, w) {
			w.WriteHeader(http.StatusOK)
		}
	}))
	t.Cleanup(b.Close)
	return b
}

// count returns how many requests of proc arrived in [from, to).
func (b *backend) count(proc string, from, to time.Time) int {
	n := 0
	for _, a := range b.arrivals() {
		if a.proc == proc && !a.at.Before(from) && a.at.Before(to) {
			n++
		}
	}
	return n
}

func (b *backend) arrivals() []arrival {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.seen)
}

// children runs n copies of this test binary as the processes of a fleet
// on config (YAML), each driving client "vendor" at rate per second from
// start for dur, and returns their tallies.
func children(t *testing.T, n int, cfg, redisAddr, url string, rate float64, start time.Time, dur time.Duration) []tally {
	t.Helper()
	file := filepath.Join(t.TempDir(), "clients.yaml")
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	out := make([]tally, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), dur+30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"="+strconv.Itoa(i+1), configEnv+"="+file, redisEnv+"="+redisAddr,
				urlEnv+"="+url, startEnv+"="+strconv.FormatInt(start.UnixNano(), 10), forEnv+"="+dur.String(),
				rateEnv+"="+strconv.FormatFloat(rate, 'f', -1, 64))
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Errorf("process %d: %v\n%s", i+1, err, stderr.String())
				return
			}
			if err := json.Unmarshal(stdout.Bytes(), &out[i]); err != nil {
				t.Errorf("process %d: %v: %q", i+1, err, stdout.String())
			}
		})
	}
	wg.Wait()
	return out
}

// TestRespectServerAcrossProcesses: three processes at 50/s each on a
// generous fleet quota; a 429 with Retry-After: 2 that process 1 gets
// stops processes 2 and 3 from sending for 2s (± 100ms).
func TestRespectServerAcrossProcesses(t *testing.T) {
	srv := startRedis(t)
	b := newBackend(t)
	var once sync.Once
	var paused time.Time
	start := time.Now().Add(2 * time.Second) // the children's start-up
	b.answer = func(a arrival, w http.ResponseWriter) bool {
		hit := false
		if a.proc == "1" && a.at.After(start.Add(time.Second)) {
			once.Do(func() { paused, hit = a.at, true })
		}
		if hit {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
		}
		return hit
	}
	cfg := `
clients:
  vendor:
    retry: {max_retries: 0}
    rate_limit: {requests_per_second: 1000, burst: 50, scope: fleet, respect_server: true}
`
	children(t, 3, cfg, srv.Addr, b.URL, 50, start, 4*time.Second)
	if paused.IsZero() {
		t.Fatal("no request of process 1 got the 429")
	}
	var before, after time.Time // the last of 2 and 3 near the 429, their first after it
	for _, a := range b.arrivals() {
		if a.proc == "1" || a.at.Before(paused) {
			continue
		}
		if a.at.Sub(paused) < time.Second {
			before = a.at
		} else if after.IsZero() || a.at.Before(after) {
			after = a.at
		}
	}
	if !before.IsZero() && before.Sub(paused) > 100*time.Millisecond {
		t.Errorf("process 2 or 3 sent %v after the 429, want nothing after 100ms", before.Sub(paused))
	}
	if gap := after.Sub(paused); gap < 1900*time.Millisecond || gap > 2100*time.Millisecond {
		t.Errorf("processes 2 and 3 resumed %v after the 429, want 2s ± 100ms", gap)
	}
	t.Logf("processes 2 and 3 resumed %v after process 1's 429 (Retry-After: 2)", after.Sub(paused))
}

// registry opens one "process" in this test: a registry on its own Redis
// connection pool, sharing nothing with the others but Redis.
func registry(t *testing.T, addr string, cfg config.Config, o factory.Options) *factory.Registry {
	t.Helper()
	o.Quotas = redisquota.New(newClient(t, addr), redisquota.Options{})
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	reg, err := factory.New(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	return reg
}

// fleetClient is a client of a fleet quota at rps with burst.
func fleetClient(rps float64, burst int, mod func(*middleware.RateLimitSettings)) config.ClientConfig {
	c := config.Default()
	c.Retry.MaxRetries = 0
	c.RateLimit.RequestsPerSecond, c.RateLimit.Burst, c.RateLimit.Scope = rps, burst, middleware.QuotaFleet
	if mod != nil {
		mod(&c.RateLimit)
	}
	return c
}

// TestTenantsDoNotStarveEachOther: per_header X-Tenant-ID at 10/s each,
// two processes; tenant "noisy" tries 100/s (10× its quota) from both,
// tenant "calm" 10/s from one: calm gets all it asks, noisy its quota.
func TestTenantsDoNotStarveEachOther(t *testing.T) {
	srv := startRedis(t)
	b := newBackend(t)
	cfg := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{
		// store_timeout 1s: on a loaded machine a slow decision ends with
		// the call's deadline (a refusal), never in the local fallback,
		// which would add its own admits to the fleet's.
		"vendor": fleetClient(10, 2, func(s *middleware.RateLimitSettings) {
			s.PerHeader, s.StoreTimeout = "X-Tenant-ID", time.Second
		})}}
	r1, r2 := registry(t, srv.Addr, cfg, factory.Options{}), registry(t, srv.Addr, cfg, factory.Options{})
	start, dur := time.Now().Add(100*time.Millisecond), 3*time.Second
	var calm, noisy1, noisy2 tally
	var wg sync.WaitGroup
	wg.Go(func() { calm = drive(r1.Get("vendor"), b.URL, "1", "calm", 9, 2*time.Second, start, dur) })
	wg.Go(func() { noisy1 = drive(r1.Get("vendor"), b.URL, "1", "noisy", 100, 50*time.Millisecond, start, dur) })
	wg.Go(func() { noisy2 = drive(r2.Get("vendor"), b.URL, "2", "noisy", 100, 50*time.Millisecond, start, dur) })
	wg.Wait()
	// The limiter refused calm nothing (a call that failed otherwise
	// missed its deadline at the backend of a loaded machine).
	if calm.Refused != 0 || calm.Admitted == 0 {
		t.Errorf("calm tenant: %+v; want none refused (the noisy one must not starve it)", calm)
	}
	// What passed the limiter: answered, or late at the backend.
	if got, max := noisy1.Admitted+noisy1.Failed+noisy2.Admitted+noisy2.Failed, int64(2+10*3*1.1); got > max || got < 15 {
		t.Errorf("noisy tenant admitted %d across two processes, want its quota, 2 + 10/s × 3s (± 10%%)", got)
	}
	for _, a := range b.arrivals() {
		if a.tenant != "calm" && a.tenant != "noisy" {
			t.Errorf("unexpected arrival %+v", a)
		}
	}
	t.Logf("calm %+v; noisy %+v and %+v", calm, noisy1, noisy2)
}

// TestRedisKilledAndRestarted: three processes (registries) with three
// clients each, on_store_error local (fallback 20/s), deny and allow, on
// fleet quotas of 50/s burst 5. With Redis killed, a refusal never waits
// longer than store_timeout (plus scheduling), local holds each process
// to its fallback rate, deny refuses and allow admits every try; with
// Redis restarted, every process is back on the store within 1s and the
// fleet quota holds again.
func TestRedisKilledAndRestarted(t *testing.T) {
	srv := startRedis(t)
	b := newBackend(t)
	mode := func(m middleware.QuotaFallback) config.ClientConfig {
		return fleetClient(50, 5, func(s *middleware.RateLimitSettings) {
			// store_timeout 1s, the calls' deadline: on a loaded machine a
			// slow decision is a refusal, never a fallback admit.
			s.OnStoreError, s.FallbackPerSecond, s.StoreTimeout = m, 20, time.Second
		})
	}
	cfg := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{
		"local": mode(middleware.QuotaLocal), "deny": mode(middleware.QuotaDeny), "allow": mode(middleware.QuotaAllow)}}
	var regs []*factory.Registry
	var errsMu sync.Mutex
	storeErrs := map[string]int{}
	obs := middleware.ObserverFunc(func(_ context.Context, e middleware.Event) {
		if e.Name == middleware.EventRateLimitStoreError && e.Client == "local" {
			errsMu.Lock()
			storeErrs[e.Err.Error()]++
			errsMu.Unlock()
		}
	})
	for range 3 {
		regs = append(regs, registry(t, srv.Addr, cfg, factory.Options{Observer: obs}))
	}
	names := []string{"local", "deny", "allow"}
	phase := func(start time.Time, dur time.Duration) map[string][]tally {
		out := map[string][]tally{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i, r := range regs {
			for _, n := range names {
				wg.Go(func() {
					tl := drive(r.Get(n), b.URL, n+"-"+strconv.Itoa(i+1), "", 50, time.Second, start, dur)
					mu.Lock()
					out[n] = append(out[n], tl)
					mu.Unlock()
				})
			}
		}
		wg.Wait()
		return out
	}
	phase(time.Now(), 500*time.Millisecond) // warm: the store serves

	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	// One decision at a time, no deadline: with Redis killed each fails
	// at once (connection refused), well within store_timeout.
	var slowest time.Duration
	for range 20 {
		began := time.Now()
		req, _ := http.NewRequest(http.MethodGet, b.URL, nil)
		if _, err := regs[0].Get("deny").Do(req); !isRateLimited(err) {
			t.Fatalf("deny with Redis down: %v, want ErrRateLimited", err)
		}
		slowest = max(slowest, time.Since(began))
	}
	if slowest > time.Second {
		t.Errorf("the slowest of 20 decisions with Redis down took %v, want within store_timeout 1s", slowest)
	}
	downAt := time.Now()
	down := phase(downAt, 2*time.Second)
	// local: what reached the backend in the steady second and a half
	// of the outage, per process: 20/s, plus a burst of 5 at most.
	for i := range regs {
		n := b.count("local-"+strconv.Itoa(i+1), downAt.Add(500*time.Millisecond), downAt.Add(2*time.Second))
		// The bound is the point; the floor only shows it is not deny
		// (a loaded machine sends fewer tries than asked).
		if n < 8 || n > 5+30+2 {
			t.Errorf("local while Redis is down: process %d sent %d in 1.5s, want 30 (fallback_per_second 20, burst 5)", i+1, n)
		}
	}
	for _, tl := range down["deny"] {
		if tl.Admitted != 0 || tl.Failed != 0 || tl.Refused == 0 {
			t.Errorf("deny while Redis is down: %+v, want every try refused", tl)
		}
	}
	for _, tl := range down["allow"] {
		// Failed: the backend's answer missed the deadline on a loaded
		// machine, after the limiter had let the call through.
		if tl.Refused != 0 || tl.Admitted+tl.Failed == 0 {
			t.Errorf("allow while Redis is down: %+v, want every try admitted", tl)
		}
	}
	for _, r := range regs {
		if m := quotaMode(r, "local"); m != "fallback" {
			t.Errorf("quota mode while down %q, want fallback", m)
		}
	}

	errsMu.Lock()
	clear(storeErrs)
	errsMu.Unlock()
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	// Within 1s every process is back on the store.
	for i, r := range regs {
		for quotaMode(r, "local") != "store" || quotaMode(r, "deny") != "store" {
			if time.Since(restarted) > time.Second {
				t.Fatalf("process %d not back on the store 1s after the restart", i+1)
			}
			req, _ := http.NewRequest(http.MethodGet, b.URL, nil)
			for _, n := range []string{"local", "deny"} {
				if resp, err := r.Get(n).Do(req); err == nil {
					resp.Body.Close()
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	t.Logf("every process back on the store %v after the restart", time.Since(restarted))
	phase(time.Now(), restarted.Add(2500*time.Millisecond).Sub(time.Now()))
	// One fleet quota again, from 1s after the restart: 50/s across the
	// three processes (± 10%, plus the burst).
	var admitted int
	for _, n := range []string{"local", "deny"} {
		sent := 0
		for i := range regs {
			sent += b.count(n+"-"+strconv.Itoa(i+1), restarted.Add(time.Second), restarted.Add(2500*time.Millisecond))
		}
		if sent > 75*11/10+5 || sent < 20 {
			errsMu.Lock()
			t.Errorf("from 1s after the restart the three processes sent %d on %s in 1.5s, want the fleet's 75 (± 10%%); store errors since: %v", sent, n, storeErrs)
			errsMu.Unlock()
		}
		if n == "local" {
			admitted = sent
		}
	}
	for i, r := range regs {
		if m := quotaMode(r, "local"); m != "store" {
			t.Errorf("process %d: quota mode %q after the restart, want store", i+1, m)
		}
	}
	t.Logf("slowest decision down %v; down: local %+v, deny %+v, allow %+v; after the restart's first second: local sent %d in 1.5s",
		slowest, down["local"], down["deny"], down["allow"], admitted)
}

func quotaMode(r *factory.Registry, name string) string {
	for _, c := range r.Status().Clients {
		if c.Name == name {
			return c.QuotaMode
		}
	}
	return fmt.Sprintf("no client %s", name)
}

// TestStoreTimeoutBoundsAHungRedis: with redis-server frozen (SIGSTOP:
// connections hang rather than fail), every decision ends at
// store_timeout and on_store_error applies; thawed, the store serves.
func TestStoreTimeoutBoundsAHungRedis(t *testing.T) {
	srv := startRedis(t)
	b := newBackend(t)
	cfg := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{
		"vendor": fleetClient(1000, 10, func(s *middleware.RateLimitSettings) {
			s.StoreTimeout, s.OnStoreError = 100*time.Millisecond, middleware.QuotaAllow
		})}}
	r := registry(t, srv.Addr, cfg, factory.Options{})
	get := func() time.Duration {
		began := time.Now()
		req, _ := http.NewRequest(http.MethodGet, b.URL, nil)
		resp, err := r.Get("vendor").Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return time.Since(began)
	}
	get() // connected
	if err := srv.Freeze(); err != nil {
		t.Fatal(err)
	}
	var slowest time.Duration
	for range 5 {
		took := get()
		if took < 100*time.Millisecond {
			t.Errorf("a call took %v with Redis frozen, want store_timeout 100ms spent first", took)
		}
		slowest = max(slowest, took)
	}
	if slowest > 100*time.Millisecond+400*time.Millisecond {
		t.Errorf("the slowest call with Redis frozen took %v, want store_timeout 100ms (plus scheduling)", slowest)
	}
	if m := quotaMode(r, "vendor"); m != "fallback" {
		t.Errorf("quota mode %q, want fallback", m)
	}
	if err := srv.Thaw(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for quotaMode(r, "vendor") != "store" {
		if time.Now().After(deadline) {
			t.Fatal("not back on the store 5s after the thaw")
		}
		get()
	}
	t.Logf("slowest call with Redis frozen: %v (store_timeout 100ms)", slowest)
}
