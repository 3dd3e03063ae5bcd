package factory

import (
	"crypto/sha256"
	"fmt"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/middleware"
)

// The components of a pipeline, described once: the table below says, for
// each, which keys it covers and, for a stateful one, when it is on,
// whether a group can share it, and how a reload builds, retunes or
// replaces it. The plan (plan.go) and the build (build.go) of a reload,
// the groups' shared components, Close and Status read it. Adding a
// stateful component is one row here, its field in pipeline and its layer
// in chain; docs/architecture.md has the checklist.

// The components of a pipeline, in pipeline order (but base_url, coalesce
// and deadline, added later and listed last, in the order they were added:
// base_url runs first, coalesce just inside code's Outer middleware and
// deadline just above headers), as ComponentPlan names them. Each covers
// the keys under the key path of the same name, except
// "retry" (retry.* but not retry.budget.*), "budget" (retry.budget.*) and
// "transport" (transport.* and tls.*) and "routes" (every key of every
// route, routes."<pattern>".*: a route's layers are stateless and rebuilt,
// its stateful components are the client's).
const (
	ComponentTimeout   = "timeout"
	ComponentBreaker   = "circuit_breaker"
	ComponentBulkhead  = "bulkhead"
	ComponentRetry     = "retry"
	ComponentHedge     = "hedge"
	ComponentBudget    = "budget"
	ComponentRateLimit = "rate_limit"
	ComponentHeaders   = "headers"
	ComponentAuth      = "auth"
	ComponentLogging   = "logging"
	ComponentFault     = "fault"
	ComponentTransport = "transport"
	ComponentRoutes    = "routes"
	ComponentBaseURL   = "base_url" // outermost, but listed last (see components)
	ComponentCoalesce  = "coalesce" // below code's Outer middleware, listed after base_url (see components)
	ComponentDeadline  = "deadline" // between rate_limit and headers, listed after coalesce (see components)
)

// components lists every component in pipeline order. A row without
// state is a stateless layer, rebuilt from the new settings whenever a key
// it covers changes.
var components = []component{
	{name: ComponentTimeout, keys: []string{"timeout"}},
	{name: ComponentBreaker, keys: []string{"circuit_breaker"}, state: &stateful{
		group:   groupBlock("circuit_breaker"),
		replace: func(o, n clientInput, _ []string) string { return breakerReplaced(o.cfg, n.cfg) },
		part: part[*middleware.Breaker]{
			field: func(p *pipeline) **middleware.Breaker { return &p.breaker },
			build: func(b buildCtx) (*middleware.Breaker, error) {
				o := middleware.BreakerOptions{IsFailure: b.hooks.IsFailure, Events: b.ev}
				if on, owner := b.hooks.OnStateChange, b.owner; on != nil {
					o.OnStateChange = func(host string, from, to middleware.BreakerState) { on(owner, host, from, to) }
				}
				return middleware.NewBreaker(b.in.cfg.CircuitBreaker, o), nil
			},
			retune: func(x *middleware.Breaker, in clientInput) { x.Update(in.cfg.CircuitBreaker) },
		},
	}},
	// The adaptive bulkhead (bulkhead.mode adaptive) is a mode of this
	// row, as scope fleet is of the rate limit's: same keys, group, place
	// and retune (Bulkhead.Update keeps the learned limit); a switch of
	// mode replaces it, since a static pool's slots and a learned limit
	// say nothing about each other.
	{name: ComponentBulkhead, keys: []string{"bulkhead"}, state: &stateful{
		group: groupBlock("bulkhead"),
		replace: func(o, n clientInput, _ []string) string {
			if o.cfg.Bulkhead.Mode.Adaptive() != n.cfg.Bulkhead.Mode.Adaptive() {
				return "bulkhead.mode changed"
			}
			return ""
		},
		part: part[*middleware.Bulkhead]{
			field: func(p *pipeline) **middleware.Bulkhead { return &p.bulkhead },
			build: func(b buildCtx) (*middleware.Bulkhead, error) {
				return middleware.NewBulkhead(b.in.cfg.Bulkhead, middleware.BulkheadOptions{Events: b.ev}), nil
			},
			retune: func(x *middleware.Bulkhead, in clientInput) { x.Update(in.cfg.Bulkhead) },
		},
	}},
	{name: ComponentRetry, keys: []string{"retry"}, except: []string{"retry.budget"}},
	{name: ComponentHedge, keys: []string{"hedge"}},
	// The retry budget is always on (ttl 0 allows every retry) and always
	// kept, retuned in place.
	{name: ComponentBudget, keys: []string{"retry.budget"}, state: &stateful{
		part: part[*middleware.Budget]{
			field: func(p *pipeline) **middleware.Budget { return &p.budget },
			build: func(b buildCtx) (*middleware.Budget, error) {
				return middleware.NewBudget(b.in.cfg.Retry.Budget, middleware.BudgetOptions{}), nil
			},
			retune: func(x *middleware.Budget, in clientInput) { x.Update(in.cfg.Retry.Budget) },
		},
	}},
	{name: ComponentRateLimit, keys: []string{"rate_limit"}, state: &stateful{
		group: groupBlock("rate_limit"),
		part: part[*middleware.RateLimit]{
			field: func(p *pipeline) **middleware.RateLimit { return &p.limiter },
			build: func(b buildCtx) (*middleware.RateLimit, error) {
				// Its quota's default key is the owner: the group's name, else
				// the client's. Scope fleet is a mode of this component, not a
				// row of its own: same keys, group, place and retune; the
				// fleet's state lives in Options.Quotas, so a reload between
				// scopes keeps both this process's buckets and the store's.
				return middleware.NewRateLimit(b.in.cfg.RateLimit, middleware.RateLimitOptions{
					Events: b.ev, Name: b.owner, Quotas: b.quotas}), nil
			},
			retune: func(x *middleware.RateLimit, in clientInput) { x.Update(in.cfg.RateLimit) },
		},
	}},
	{name: ComponentHeaders, keys: []string{"headers"}},
	// Auth is stateless, but reads the credential files: a change of their
	// content rebuilds it like a change of its keys.
	{name: ComponentAuth, keys: []string{"auth"},
		files: func(in clientInput) [sha256.Size]byte { return in.credDigest }, filesWhy: "a credential file's content changed"},
	{name: ComponentLogging, keys: []string{"logging"}},
	{name: ComponentFault, keys: []string{"fault"}},
	// The base transport keeps its warm connections across reloads unless
	// its *http.Transport must change: max_redirects (read per redirect)
	// and max_conn_age (per request) retune in place; any other key of
	// transport or tls, or the TLS files' contents, replace it, and the
	// replaced one drains. Options.Base, when set, serves instead.
	{name: ComponentTransport, keys: []string{"transport", "tls"},
		files: func(in clientInput) [sha256.Size]byte { return in.tlsDigest }, filesWhy: "a TLS file's content changed",
		state: &stateful{
			base: true,
			replace: func(o, n clientInput, keys []string) string {
				if o.tlsDigest != n.tlsDigest {
					return "a TLS file's content changed"
				}
				for _, k := range keys {
					if k != "transport.max_redirects" && k != "transport.max_conn_age" {
						return k + " changed"
					}
				}
				return ""
			},
			part: part[*base]{
				field: func(p *pipeline) **base { return &p.base },
				build: func(b buildCtx) (*base, error) {
					build, err := newTransport(b.section, b.in.cfg.Transport, b.m.tls)
					if err != nil {
						return nil, err
					}
					return newBase(build, b.in.cfg.Transport.MaxConnAge), nil
				},
				retune: func(x *base, in clientInput) { x.maxAge.Store(int64(in.cfg.Transport.MaxConnAge)) },
			},
		}},
	{name: ComponentRoutes, keys: []string{"routes"}},
	// base_url resolves a host-less URL before every layer, code's too:
	// it runs first, but is listed last, so that the components added
	// before it keep their places in ClientPlan.Components for code that
	// indexes them.
	{name: ComponentBaseURL, keys: []string{"base_url"}},
	// coalesce runs just inside code's Outer middleware, above the routes,
	// listed last for the same reason as base_url. Stateless for a reload:
	// its trips in flight are no settings; each finishes in the layer it
	// started in (and its callers on their pipeline), while calls after
	// the swap start trips in the new layer, so for a moment an old trip
	// and a new one of the same identity may both be under way.
	{name: ComponentCoalesce, keys: []string{"coalesce"}},
	// deadline (PropagateDeadline) runs between the rate limit and
	// headers, after any wait for a token, and is listed last for the same
	// reason. It is the client's: a route runs the client's deadline layer
	// (routes cannot set deadline.*).
	{name: ComponentDeadline, keys: []string{"deadline"}},
}

// Stateful reports whether the named component (one of the Component…
// names) holds state that a reload keeps while the plan says Unchanged or
// Retuned: the circuit breaker, the bulkhead, the retry budget, the rate
// limit and the base transport (its warm connections). It is false for
// the stateless layers and for a name that is no component. It reads the
// component table and is safe for concurrent use.
func Stateful(component string) bool {
	for _, c := range components {
		if c.name == component {
			return c.state != nil
		}
	}
	return false
}

// component is one row of the table.
type component struct {
	name string
	// keys are the key paths it covers: a key is covered when it is one of
	// them or under one, and not one of except or under it.
	keys, except []string
	// files, when set, digests the files the component reads (see
	// clientInput); a change of their content changes the component as a
	// change of a key does, filesWhy saying so.
	files    func(clientInput) [sha256.Size]byte
	filesWhy string
	// state is nil for a stateless layer.
	state *stateful
}

// stateful is how a reload treats a component that holds state: kept
// (retuned in place after the commit, keeping its state) while its
// settings allow, replaced by a fresh one when replace says so, started
// when switched on, dropped when switched off.
type stateful struct {
	// group describes, for a component clients may share, its on-switch
	// and the group that shares it; nil for one each client has.
	group *config.GroupBlock
	// on reports whether a config switches on a component no group shares,
	// switchKey being the key that does; nil: always on (but for base).
	on        func(config.ClientConfig) bool
	switchKey string
	// base marks the base transport: off when Options.Base serves, and
	// drained when replaced or at Close.
	base bool
	// replace says why a change from o to n cannot keep the component's
	// state, or ""; keys are the changed keys it covers. nil: a change is
	// always a retune.
	replace func(o, n clientInput, keys []string) string
	// part builds, retunes and holds it.
	part anyPart
}

// groupBlock returns config's description of the shareable block key.
func groupBlock(key string) *config.GroupBlock {
	b, ok := config.GroupBlockOf(key)
	if !ok {
		panic(fmt.Sprintf("factory: config has no group block %q", key))
	}
	return &b
}

// breakerReplaced says why a breaker whose settings change from o to n
// cannot keep its state, or "": a change of scope (one circuit per client
// and one per host share nothing) or into or out of adaptive mode (which
// never opens, so an open circuit cannot be carried into it).
func breakerReplaced(o, n config.ClientConfig) string {
	switch ob, nb := o.CircuitBreaker, n.CircuitBreaker; {
	case ob.Scope != nb.Scope:
		return "circuit_breaker.scope changed"
	case (ob.Mode == middleware.BreakerAdaptive) != (nb.Mode == middleware.BreakerAdaptive):
		return "circuit_breaker.mode changed into or out of adaptive"
	}
	return ""
}
