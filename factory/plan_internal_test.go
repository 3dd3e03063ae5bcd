package factory

import (
	"io"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/middleware"
)

// TestPlanMatchesApply checks Plan against what Registry.Apply really does,
// component by component, by comparing the pipelines before and after: a
// component Plan says is kept (unchanged or retuned) is the same object, one
// it says is started is a new one, one it says is stopped or off is absent,
// and the base transport is the same object exactly when Plan keeps it.
func TestPlanMatchesApply(t *testing.T) {
	base := func() config.ClientConfig { return config.Default() }
	with := func(edit func(c *config.ClientConfig)) config.ClientConfig {
		c := base()
		edit(&c)
		return c
	}
	breakerOn := with(func(c *config.ClientConfig) { c.CircuitBreaker.Enabled = true })
	everything := with(func(c *config.ClientConfig) {
		c.CircuitBreaker.Enabled = true
		c.Bulkhead.MaxConcurrent = 4
		c.RateLimit.RequestsPerSecond = 50
	})
	tests := []struct {
		name     string
		old, new map[string]config.ClientConfig
	}{
		{"nothing changes", map[string]config.ClientConfig{"a": base()}, map[string]config.ClientConfig{"a": base()}},
		// Equal reads -0 as 0, where Hash tells them apart: Plan follows Apply.
		{"minus zero is zero", map[string]config.ClientConfig{"a": base()},
			map[string]config.ClientConfig{"a": with(func(c *config.ClientConfig) { c.RateLimit.RequestsPerSecond = math.Copysign(0, -1) })}},
		{"retry only", map[string]config.ClientConfig{"a": everything},
			map[string]config.ClientConfig{"a": with(func(c *config.ClientConfig) {
				*c = everything
				c.Retry.MaxRetries = 7
				c.Retry.RetryableStatus = []int{503}
			})}},
		{"timeout and headers", map[string]config.ClientConfig{"a": base()},
			map[string]config.ClientConfig{"a": with(func(c *config.ClientConfig) {
				c.Timeout = 2 * time.Second
				c.Headers = map[string]string{"X-Team": "billing"}
			})}},
		{"budget retuned", map[string]config.ClientConfig{"a": base()},
			map[string]config.ClientConfig{"a": with(func(c *config.ClientConfig) { c.Retry.Budget.Ratio = 0.5 })}},
		{"transport changed", map[string]config.ClientConfig{"a": everything},
			map[string]config.ClientConfig{"a": with(func(c *config.ClientConfig) {
				*c = everything
				c.Transport.MaxConnsPerHost = 8
			})}},
		{"tls changed", map[string]config.ClientConfig{"a": base()},
			map[string]config.ClientConfig{"a": with(func(c *config.ClientConfig) { c.TLS.MinVersion = "1.3" })}},
		{"breaker switched on", map[string]config.ClientConfig{"a": base()}, map[string]config.ClientConfig{"a": breakerOn}},
		{"breaker switched off", map[string]config.ClientConfig{"a": breakerOn}, map[string]config.ClientConfig{"a": base()}},
		{"breaker retuned", map[string]config.ClientConfig{"a": breakerOn},
			map[string]config.ClientConfig{"a": with(func(c *config.ClientConfig) {
				*c = breakerOn
				c.CircuitBreaker.FailureThreshold = 9
			})}},
		{"breaker scope changed", map[string]config.ClientConfig{"a": breakerOn},
			map[string]config.ClientConfig{"a": with(func(c *config.ClientConfig) {
				*c = breakerOn
				c.CircuitBreaker.Scope = middleware.ScopeHost
			})}},
		{"only max_conn_age", map[string]config.ClientConfig{"a": base()},
			map[string]config.ClientConfig{"a": with(func(c *config.ClientConfig) { c.Transport.MaxConnAge = time.Minute })}},
		{"only max_redirects", map[string]config.ClientConfig{"a": base()},
			map[string]config.ClientConfig{"a": with(func(c *config.ClientConfig) { c.Transport.MaxRedirects = 2 })}},
		{"all stateful retuned", map[string]config.ClientConfig{"a": everything},
			map[string]config.ClientConfig{"a": with(func(c *config.ClientConfig) {
				*c = everything
				c.CircuitBreaker.Cooldown = time.Second
				c.Bulkhead.MaxConcurrent = 8
				c.RateLimit.Burst = 5
			})}},
		{"all stateful switched off", map[string]config.ClientConfig{"a": everything}, map[string]config.ClientConfig{"a": base()}},
		{"all stateful switched on", map[string]config.ClientConfig{"a": base()}, map[string]config.ClientConfig{"a": everything}},
		{"added and removed", map[string]config.ClientConfig{"a": everything, "b": base()},
			map[string]config.ClientConfig{"b": base(), "c": breakerOn}},
		{"removed client follows defaults", map[string]config.ClientConfig{"a": with(func(c *config.ClientConfig) { c.Transport.MaxIdleConns = 3 })},
			map[string]config.ClientConfig{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oldCfg := config.Config{Defaults: base(), Clients: tt.old}
			newCfg := config.Config{Defaults: base(), Clients: tt.new}
			r, err := New(oldCfg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			t.Cleanup(func() { r.Close() })
			before := pipesByName(r)
			if err := r.Apply(newCfg); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			after := pipesByName(r)

			for _, p := range Plan(oldCfg, newCfg) {
				prev, now := before[p.Name], after[p.Name]
				if now == nil {
					t.Fatalf("%s: no pipeline after Apply", p.Name)
				}
				if got, want := now == prev, p.Action == ActionUnchanged; got != want {
					t.Errorf("%s: pipeline kept %v, want %v (plan: %s)", p.Name, got, want, p.Action)
				}
				if p.Action == ActionUnchanged {
					continue
				}
				if prev == nil {
					prev = &pipeline{}
				}
				checkKept(t, p, ComponentTransport, prev.base != nil && prev.base == now.base, now.base != nil)
				checkKept(t, p, ComponentBudget, prev.budget != nil && prev.budget == now.budget, now.budget != nil)
				checkKept(t, p, ComponentBreaker, prev.breaker != nil && prev.breaker == now.breaker, now.breaker != nil)
				checkKept(t, p, ComponentBulkhead, prev.bulkhead != nil && prev.bulkhead == now.bulkhead, now.bulkhead != nil)
				checkKept(t, p, ComponentRateLimit, prev.limiter != nil && prev.limiter == now.limiter, now.limiter != nil)
			}
		})
	}
}

// checkKept compares what Plan says of one component with what Apply did:
// kept is true when the pipeline after Apply holds the very same object as
// before, present when it holds one at all.
func checkKept(t *testing.T, p ClientPlan, component string, kept, present bool) {
	t.Helper()
	ch := p.Component(component)
	var wantKept, wantPresent bool
	switch ch {
	case Unchanged, Retuned:
		wantKept, wantPresent = true, true
	case Started, Replaced:
		wantKept, wantPresent = false, true
	case Stopped, Off:
		wantKept, wantPresent = false, false
	default:
		t.Fatalf("%s %s: unknown change %q", p.Name, component, ch)
	}
	if kept != wantKept || present != wantPresent {
		t.Errorf("%s %s: Apply kept=%v present=%v, want kept=%v present=%v (plan: %s)",
			p.Name, component, kept, present, wantKept, wantPresent, ch)
	}
}

// pipesByName returns the serving pipeline of every client by name.
func pipesByName(r *Registry) map[string]*pipeline {
	r.mu.Lock()
	names := r.names
	r.mu.Unlock()
	g := r.gen.Load()
	out := make(map[string]*pipeline, len(names))
	for i, name := range names {
		out[name] = g.pipes[i]
	}
	return out
}
