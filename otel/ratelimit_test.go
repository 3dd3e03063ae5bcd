package otelswitchboard_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/middleware"
	otelswitchboard "github.com/switchboard-http/switchboard/otel"
)

// TestRateLimitEventsCarryTheScope: ratelimit.refused of a process quota
// and the fleet events (as the layer emits them) are counted with their
// quota scope.
func TestRateLimitEventsCarryTheScope(t *testing.T) {
	h := newHarness(t, baseConfig(map[string]func(*config.ClientConfig){"vendor": func(c *config.ClientConfig) {
		c.Retry.MaxRetries = 0
		c.RateLimit.RequestsPerSecond, c.RateLimit.Burst = 0.001, 1
	}}), fakert.Status(200, 200))
	c := h.reg.Get("vendor")
	for i := range 2 {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/", nil)
		resp, err := c.Do(req)
		cancel()
		if i == 0 && err == nil {
			resp.Body.Close()
		}
		if i == 1 && !errors.Is(err, middleware.ErrRateLimited) {
			t.Fatalf("second call: %v, want ErrRateLimited", err)
		}
	}
	h.tel.OnEvent(t.Context(), middleware.Event{Name: middleware.EventRateLimitStoreError, Client: "vendor", Scope: "fleet"})
	h.tel.OnEvent(t.Context(), middleware.Event{Name: middleware.EventRateLimitPaused, Client: "vendor", Scope: "fleet"})
	wantPoints(t, h.collect(t), otelswitchboard.MetricEvents, map[string]float64{
		"event.name=ratelimit.refused,switchboard.client=vendor,switchboard.ratelimit.scope=process":   1,
		"event.name=ratelimit.store_error,switchboard.client=vendor,switchboard.ratelimit.scope=fleet": 1,
		"event.name=ratelimit.paused,switchboard.client=vendor,switchboard.ratelimit.scope=fleet":      1,
	})
}
