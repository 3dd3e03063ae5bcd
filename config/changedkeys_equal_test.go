package config_test

import (
	"math"
	"testing"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/middleware"
)

// TestChangedKeysAgreesWithEqual: ChangedKeys is empty exactly when Equal
// reports true, for every pair: a nil retry list means the default list
// (so nil → [] is a change and nil → the default list is none), in a
// route too, a nil and an empty headers map are alike, and floats compare
// as numbers.
func TestChangedKeysAgreesWithEqual(t *testing.T) {
	with := func(f func(*config.ClientConfig)) config.ClientConfig {
		c := config.Default()
		f(&c)
		return c
	}
	route := func(f func(*config.RouteConfig)) func(*config.ClientConfig) {
		return func(c *config.ClientConfig) {
			r := config.RouteConfig{Timeout: c.Timeout, Retry: c.Retry, Hedge: c.Hedge}
			f(&r)
			c.Routes = map[string]config.RouteConfig{"GET /v1/": r}
		}
	}
	nilStatus := func(c *config.ClientConfig) { c.Retry.RetryableStatus = nil }
	noStatus := func(c *config.ClientConfig) { c.Retry.RetryableStatus = []int{} }
	nilMethods := func(c *config.ClientConfig) { c.Retry.RetryableMethods = nil }
	noMethods := func(c *config.ClientConfig) { c.Retry.RetryableMethods = []string{} }
	defStatus := func(c *config.ClientConfig) { c.Retry.RetryableStatus = middleware.DefaultRetryableStatus() }
	pairs := []struct {
		name string
		a, b config.ClientConfig
	}{
		{"same", config.Default(), config.Default()},
		{"status nil vs empty", with(nilStatus), with(noStatus)},
		{"status nil vs default", with(nilStatus), with(defStatus)},
		{"status empty vs default", with(noStatus), with(defStatus)},
		{"methods nil vs empty", with(nilMethods), with(noMethods)},
		{"methods nil vs default", with(nilMethods), config.Default()},
		{"route status nil vs empty",
			with(route(func(r *config.RouteConfig) { r.Retry.RetryableStatus = nil })),
			with(route(func(r *config.RouteConfig) { r.Retry.RetryableStatus = []int{} }))},
		{"route status nil vs default",
			with(route(func(r *config.RouteConfig) { r.Retry.RetryableStatus = nil })),
			with(route(func(r *config.RouteConfig) {}))},
		{"headers nil vs empty", with(func(c *config.ClientConfig) { c.Headers = nil }), config.Default()},
		{"header empty vs absent", with(func(c *config.ClientConfig) { c.Headers = map[string]string{"X-A": ""} }), config.Default()},
		{"multiplier -0 vs 0",
			with(func(c *config.ClientConfig) { c.Retry.Multiplier = math.Copysign(0, -1) }),
			with(func(c *config.ClientConfig) { c.Retry.Multiplier = 0 })},
		{"multiplier NaN vs NaN",
			with(func(c *config.ClientConfig) { c.Retry.Multiplier = math.NaN() }),
			with(func(c *config.ClientConfig) { c.Retry.Multiplier = math.NaN() })},
		{"timeout", config.Default(), with(func(c *config.ClientConfig) { c.Timeout++ })},
	}
	for _, p := range pairs {
		for _, pair := range [][2]config.ClientConfig{{p.a, p.b}, {p.b, p.a}} {
			equal := pair[0].Equal(pair[1])
			changed := config.ChangedKeys(pair[0], pair[1])
			if equal != (len(changed) == 0) {
				t.Errorf("%s: Equal = %v but ChangedKeys = %+v", p.name, equal, changed)
			}
		}
	}
}
