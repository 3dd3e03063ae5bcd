package middleware_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/middleware"
)

func TestOverridesFromEmpty(t *testing.T) {
	if o, ok := middleware.OverridesFrom(context.Background()); ok || o != (middleware.Overrides{}) {
		t.Fatalf("got %+v, %v; want zero, false", o, ok)
	}
}

func TestWithOverridesRoundTrip(t *testing.T) {
	n, d := 2, time.Second
	ctx := middleware.WithOverrides(context.Background(), middleware.Overrides{MaxRetries: &n, Timeout: &d})
	o, ok := middleware.OverridesFrom(ctx)
	if !ok || o.MaxRetries != &n || o.Timeout != &d || o.AttemptTimeout != nil {
		t.Fatalf("got %+v, %v", o, ok)
	}
}

func TestWithOverridesMergesOverOuter(t *testing.T) {
	n, m := 2, 5
	d, a := time.Second, 3*time.Second
	ctx := middleware.WithOverrides(context.Background(), middleware.Overrides{MaxRetries: &n, Timeout: &d})
	ctx = middleware.WithOverrides(ctx, middleware.Overrides{MaxRetries: &m, AttemptTimeout: &a})
	o, _ := middleware.OverridesFrom(ctx)
	if o.MaxRetries != &m || o.Timeout != &d || o.AttemptTimeout != &a {
		t.Fatalf("got %+v; want MaxRetries from the inner call, Timeout kept from the outer", o)
	}
}

func TestOverridesFromDoesNotAllocate(t *testing.T) {
	n := 1
	ctx := middleware.WithOverrides(context.Background(), middleware.Overrides{MaxRetries: &n})
	if allocs := testing.AllocsPerRun(100, func() { _, _ = middleware.OverridesFrom(ctx) }); allocs != 0 {
		t.Fatalf("got %v allocations, want 0", allocs)
	}
}
