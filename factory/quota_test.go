package factory_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/middleware"
)

// keyStore is a QuotaStore that admits everything and records the keys
// and rates it is asked for, failing while fail is set.
type keyStore struct {
	mu    sync.Mutex
	asked []string
	fail  bool
}

func (s *keyStore) Take(_ context.Context, key string, rate float64, burst, _ int) (middleware.QuotaDecision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, key+"@"+strconv.FormatFloat(rate, 'g', -1, 64))
	if s.fail {
		return middleware.QuotaDecision{}, errors.New("store down")
	}
	return middleware.QuotaDecision{Allowed: true, Remaining: burst - 1}, nil
}

func (s *keyStore) Pause(context.Context, string, time.Time) error { return nil }

func (s *keyStore) keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.asked...)
}

// TestFleetScopeNeedsQuotas: scope fleet without Options.Quotas fails
// Open with an error on the key path; with them it opens.
func TestFleetScopeNeedsQuotas(t *testing.T) {
	file := filepath.Join(t.TempDir(), "clients.yaml")
	yaml := "clients:\n  stripe:\n    rate_limit: {requests_per_second: 100, burst: 20, scope: fleet}\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := factory.Open(t.Context(), factory.Options{File: file, NoWatch: true, Logger: discard()})
	var fe *config.FieldError
	if !errors.As(err, &fe) || fe.Path != "clients.stripe.rate_limit.scope" || !strings.Contains(err.Error(), "Options.Quotas") {
		t.Fatalf("Open: %v, want a FieldError on clients.stripe.rate_limit.scope naming Options.Quotas", err)
	}
	reg, err := factory.Open(t.Context(), factory.Options{File: file, NoWatch: true, Logger: discard(), Quotas: &keyStore{}})
	if err != nil {
		t.Fatal(err)
	}
	reg.Close()
}

// TestFleetQuotaThroughTheRegistry: the quota's key is the client's name,
// or the group's, or rate_limit.key; Status shows quota_mode store, then
// fallback while the store fails; a reload retunes rate and key in place;
// a reload to fleet without a store is rejected.
func TestFleetQuotaThroughTheRegistry(t *testing.T) {
	fleet := func(rps float64, group, key string) config.ClientConfig {
		c := config.Default()
		c.Retry.MaxRetries = 0
		c.RateLimit.RequestsPerSecond, c.RateLimit.Burst, c.RateLimit.Scope = rps, 5, middleware.QuotaFleet
		c.RateLimit.Group, c.RateLimit.Key = group, key
		return c
	}
	cfg := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{
		"alone": fleet(10, "", ""), "a": fleet(20, "vendor", ""), "b": fleet(20, "vendor", ""), "named": fleet(30, "", "maps")}}
	store := &keyStore{}
	reg, err := factory.New(cfg, factory.Options{Quotas: store, Base: fakert.Status(200, 200, 200, 200, 200, 200, 200, 200), Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	get := func(name string) {
		t.Helper()
		resp, err := reg.Get(name).Get("http://api.test/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	for _, n := range []string{"alone", "a", "b", "named"} {
		get(n)
	}
	if got, want := strings.Join(store.keys(), " "), "alone@10 vendor@20 vendor@20 maps@30"; got != want {
		t.Errorf("store asked %q, want %q", got, want)
	}
	mode := func(name string) string {
		for _, c := range reg.Status().Clients {
			if c.Name == name {
				return c.QuotaMode
			}
		}
		return ""
	}
	if m := mode("alone"); m != "store" {
		t.Errorf("quota_mode %q, want store", m)
	}
	store.mu.Lock()
	store.fail = true
	store.mu.Unlock()
	get("alone")
	if m := mode("alone"); m != "fallback" {
		t.Errorf("quota_mode %q while the store fails, want fallback", m)
	}
	store.mu.Lock()
	store.fail, store.asked = false, nil
	store.mu.Unlock()

	cfg.Clients["alone"] = fleet(40, "", "other")
	if err := reg.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	get("alone")
	if got := strings.Join(store.keys(), " "); got != "other@40" {
		t.Errorf("after the reload the store was asked %q, want other@40", got)
	}
	if m := mode("alone"); m != "store" {
		t.Errorf("quota_mode %q after the reload, want store", m)
	}

	noStore, err := factory.New(config.Config{Defaults: config.Default()}, factory.Options{Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer noStore.Close()
	err = noStore.Apply(config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"x": fleet(1, "", "")}})
	if err == nil || !strings.Contains(err.Error(), "clients.x.rate_limit.scope") {
		t.Errorf("reload to fleet without a store: %v, want an error on clients.x.rate_limit.scope", err)
	}
}
