package config

import (
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-http/switchboard/middleware"
)

// RouteConfig is the effective configuration of one route of a client
// (`clients.<name>.routes."<pattern>"`): the client's timeout, headers,
// retry and hedge keys with the route's own merged over them key by key, as
// a client merges over `defaults`. The stateful components (breaker,
// bulkhead, rate limit, the retry budget, the transport) are the client's
// and shared by its routes, so a route cannot set them: Retry.Budget is
// always the client's. A plain value, safe for concurrent reads; its
// Headers map and lists are shared by copies.
type RouteConfig struct {
	// Timeout is the total deadline of a call on the route; zero = none.
	Timeout time.Duration `koanf:"timeout" json:"timeout"`
	// Headers are set on every request of the route that lacks them.
	// They print with sensitive values redacted (see Headers).
	Headers Headers `koanf:"headers" json:"headers" secret:"headers"`
	// Retry configures the route's retries (its budget is the client's).
	Retry middleware.RetrySettings `koanf:"retry" json:"retry"`
	// Hedge configures the route's hedging.
	Hedge middleware.HedgeSettings `koanf:"hedge" json:"hedge"`
}

// routeTopKeys are the keys of a client section a route may set.
var routeTopKeys = []string{"headers", "hedge", "retry", "timeout"}

// routeAllowed reports whether the key at rel (a path within a client
// section) may be set in a route.
func routeAllowed(rel string) bool {
	top, rest, _ := strings.Cut(rel, ".")
	if !slices.Contains(routeTopKeys, top) {
		return false
	}
	return !(top == "retry" && (rest == "budget" || strings.HasPrefix(rest, "budget.")))
}

// RouteKey returns the key path of key within route pattern of a client
// section, as Provenance, Settings and ChangedKeys spell it:
// RouteKey("POST /v1/charges", "timeout") is `routes."POST /v1/charges".timeout`.
func RouteKey(pattern, key string) string {
	return "routes." + strconv.Quote(pattern) + "." + key
}

// Client returns r as a ClientConfig over base: base with r's settings.
func (r RouteConfig) Client(base ClientConfig) ClientConfig {
	base.Timeout, base.Headers, base.Retry, base.Hedge = r.Timeout, r.Headers, r.Retry, r.Hedge
	base.Routes = nil
	return base
}

// routeOf returns the route part of c.
func routeOf(c ClientConfig) RouteConfig {
	return RouteConfig{Timeout: c.Timeout, Headers: c.Headers, Retry: c.Retry, Hedge: c.Hedge}
}

// routeEqual reports whether two routes hold the same settings, as
// ClientConfig.Equal judges them.
func routeEqual(a, b RouteConfig) bool {
	return a.Client(ClientConfig{}).Equal(b.Client(ClientConfig{}))
}

// routesEqual compares two route maps; nil and empty are alike.
func routesEqual(a, b map[string]RouteConfig) bool {
	return maps.EqualFunc(a, b, routeEqual)
}

// routeSettings returns the effective keys of every route of c, patterns
// sorted, each key spelled RouteKey(pattern, key).
func (c ClientConfig) routeSettings() []rawSetting {
	var out []rawSetting
	for _, p := range slices.Sorted(maps.Keys(c.Routes)) {
		for _, s := range c.Routes[p].Client(ClientConfig{}).leafSettings() {
			if routeAllowed(s.key) {
				s.key = RouteKey(p, s.key)
				out = append(out, s)
			}
		}
	}
	return out
}

// validateRoutes checks the routes of a client section at prefix: the
// patterns (as http.ServeMux reads them, conflicts included) and each
// route's values. clientErrs are the client's own errors: a route that
// inherits a bad value would repeat them, so those are left out.
func validateRoutes(v *validator, c ClientConfig, strict bool, clientErrs []*FieldError) {
	if len(c.Routes) == 0 {
		return
	}
	patterns := slices.Sorted(maps.Keys(c.Routes))
	if _, err := middleware.NewRoutes(patterns...); err != nil {
		for _, e := range unjoin(err) {
			var pe *middleware.RoutePatternError
			if errors.As(e, &pe) {
				v.errs = append(v.errs, &FieldError{Path: v.prefix + ".routes." + strconv.Quote(pe.Pattern),
					Msg: "invalid route pattern: " + pe.Reason})
			}
		}
	}
	seen := map[string]bool{}
	for _, fe := range clientErrs {
		seen[strings.TrimPrefix(fe.Path, v.prefix+".")+"\x00"+fe.Msg] = true
	}
	for _, p := range patterns {
		r := c.Routes[p]
		rp := v.prefix + ".routes." + strconv.Quote(p)
		rv := &validator{prefix: rp}
		rc := r.Client(ClientConfig{})
		validateLeaves(rv, rc, strict, routeAllowed)
		validateHeaders(rv, rc.Headers)
		validateRetry(rv, rc.Retry, rc.Timeout)
		validateHeaderNames(rv, rc.Retry, c.Deadline.Header, false)
		for _, fe := range rv.errs {
			if !seen[strings.TrimPrefix(fe.Path, rp+".")+"\x00"+fe.Msg] {
				v.errs = append(v.errs, fe)
			}
		}
	}
}

// unjoin returns the errors err joins, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
