package factory

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/middleware"
)

// pipeline is one generation of one client: what it was built from and
// the RoundTripper built from it. A pipeline is immutable once published; a
// request that loaded it runs to its end on it.
type pipeline struct {
	name  string
	in    clientInput // its effective config, section and file digests
	built bool        // false for the errTransport of a client that failed to build
	gen   uint64
	rt    http.RoundTripper
	base  *base // nil when Options.Base is used

	// The stateful components, nil when switched off. A reload hands them
	// on to the next pipeline of the client, retuned in place after the
	// commit.
	budget   *middleware.Budget
	breaker  *middleware.Breaker
	bulkhead *middleware.Bulkhead
	limiter  *middleware.RateLimit
	// groups names the group whose component the pipeline uses, for the
	// breaker, the bulkhead and the limiter in that order; "" for its own.
	groups [3]string
	// latencies are the client's recent answered-attempt latencies, read
	// by hedge.delay_percentile. Always on and always kept: they hold no
	// settings, so no plan decides about them.
	latencies *middleware.Latencies

	// hash is cfg.Hash(), made when Status first asks: a reload compares
	// configs with ClientConfig.Equal, and hashing every new client was a
	// third of loading a config.
	hashOnce sync.Once
	hash     string
}

// serving returns what a plan needs of p.
func (p *pipeline) serving() *serving { return &serving{in: p.in, built: p.built} }

// configHash returns cfg.Hash(), computed once; "" for a pipeline that
// failed to build, which runs no config.
func (p *pipeline) configHash() string {
	if !p.built {
		return ""
	}
	p.hashOnce.Do(func() { p.hash = p.in.cfg.Hash() })
	return p.hash
}

// build makes the pipeline of client name that cp plans, from in and its
// resolved material m, touching nothing that serves: what cp keeps
// (unchanged or retuned) it takes from old, the pipeline it replaces; what
// cp starts or replaces it creates. It returns the retunes to run once the
// new generation serves, each applying in's settings to a kept stateful
// component. A panic (in code's hooks, say) is an error, and nothing built
// is live: the caller discards it.
func (r *Registry) build(name string, in clientInput, m material, cp ClientPlan, old *pipeline, gen uint64, gt *groupTable) (p *pipeline, retunes []func(), err error) {
	defer func() {
		if v := recover(); v != nil {
			p, retunes, err = nil, nil, fmt.Errorf("client %q: building pipeline panicked: %v", name, v)
		}
	}()
	c := in.cfg
	p = &pipeline{name: name, in: in, built: true, gen: gen}
	if old == nil {
		old = &pipeline{}
	}

	var bottom http.RoundTripper = r.opts.Base
	if r.opts.Base == nil {
		var buildErr error
		var retune func()
		p.base, retune = take(cp.Component(ComponentTransport), old.base,
			func() *base {
				build, err := newTransport(sectionOf(name, in.defined), c.Transport, m.tls)
				if err != nil {
					buildErr = err
					return nil
				}
				return newBase(build, c.Transport.MaxConnAge)
			},
			func(b *base) { b.maxAge.Store(int64(c.Transport.MaxConnAge)) })
		if buildErr != nil {
			return nil, nil, buildErr
		}
		if retune != nil {
			retunes = append(retunes, retune)
		}
		bottom = p.base
	}

	ev := &middleware.Events{Client: name, Logger: r.log, Observer: r.opts.Observer}
	h := r.hooks(name)
	retunes = append(retunes, r.components(p, old, cp, ev, h, gt)...)

	// The layers, outermost first, as the README's pipeline draws them.
	// Auth, logging and fault injection are the client's, below every
	// route; each route runs its own stateless layers (timeout, retry or
	// hedge, attempt timeout, headers) around the client's components.
	lower := middleware.Chain(
		middleware.Auth(c.Auth, middleware.AuthOptions{Credential: m.cred, Events: ev}),
		middleware.Logging(c.Logging, middleware.LoggingOptions{Events: ev}),
		middleware.Fault(c.Fault, middleware.FaultOptions{Events: ev, Seed: h.FaultSeed}),
	)(bottom)
	top := r.chain(p, config.RouteConfig{Timeout: c.Timeout, Headers: c.Headers, Retry: c.Retry, Hedge: c.Hedge}, ev, h, lower)
	if len(c.Routes) > 0 {
		patterns := slices.Sorted(maps.Keys(c.Routes))
		routes, err := middleware.NewRoutes(patterns...)
		if err != nil {
			return nil, nil, fmt.Errorf("client %q: %w", name, err) // Validate rejects these first
		}
		rts := make(map[string]http.RoundTripper, len(patterns))
		for _, pat := range patterns {
			rts[pat] = r.chain(p, c.Routes[pat], ev, h, lower)
		}
		top = middleware.Router(routes, rts, top)
	}
	// Every error that leaves the pipeline, code's own layers' included,
	// is redacted first.
	layers := make([]middleware.Middleware, 0, 1+len(h.Outer))
	layers = append(layers, middleware.RedactErrors())
	layers = append(layers, h.Outer...)
	p.rt = middleware.Chain(layers...)(top)
	return p, retunes, nil
}

// chain builds the layers of one route (or of the client, for calls that
// match no route) from the total timeout down to lower: the stateless
// layers from s, around p's stateful components, which every route of the
// client shares.
func (r *Registry) chain(p *pipeline, s config.RouteConfig, ev *middleware.Events, h Hooks, lower http.RoundTripper) http.RoundTripper {
	name := p.name
	tmo := middleware.TimeoutOptions{Events: ev}
	layers := make([]middleware.Middleware, 0, 12)
	layers = append(layers, middleware.Timeout(s.Timeout, tmo))
	if p.breaker != nil {
		layers = append(layers, p.breaker.MiddlewareFor(r.events(name, p.groups[0])))
	}
	if p.bulkhead != nil {
		layers = append(layers, p.bulkhead.MiddlewareFor(r.events(name, p.groups[1])))
	}
	// Every layer below retry copies a request before it writes to it, but
	// code's attempt middleware may change theirs in place (Hooks.Attempt
	// promises each attempt its own clone).
	readOnly := len(h.Attempt) == 0
	if s.Hedge.Enabled {
		layers = append(layers, middleware.Hedge(s.Hedge, s.Retry, middleware.HedgeOptions{
			ShouldRetry: h.ShouldRetry, Budget: p.budget, Events: ev, Latencies: p.latencies, ReadOnlyBelow: readOnly,
		}))
	} else {
		layers = append(layers, middleware.Retry(s.Retry, middleware.RetryOptions{
			ShouldRetry: h.ShouldRetry, Budget: p.budget, Events: ev, Backoff: h.Backoff, ReadOnlyBelow: readOnly,
		}))
	}
	layers = append(layers, middleware.AttemptTimeout(s.Retry.AttemptTimeout, tmo))
	layers = append(layers, h.Attempt...)
	if p.limiter != nil {
		layers = append(layers, p.limiter.MiddlewareFor(r.events(name, p.groups[2])))
	}
	layers = append(layers, middleware.Headers(s.Headers, middleware.HeadersOptions{Events: ev}))
	return middleware.Chain(layers...)(lower)
}

// hooks returns the hooks of client name: Options.Hooks, then
// Options.HooksFor(name), then Options.ClientHooks[name]. Middleware add
// up in that order, outermost first; a later func or seed replaces an
// earlier one.
func (r *Registry) hooks(name string) Hooks {
	h := Hooks{}
	layers := []Hooks{r.opts.Hooks}
	if r.opts.HooksFor != nil {
		layers = append(layers, r.opts.HooksFor(name))
	}
	layers = append(layers, r.opts.ClientHooks[name])
	for _, l := range layers {
		h.Outer = append(h.Outer, l.Outer...)
		h.Attempt = append(h.Attempt, l.Attempt...)
		if l.ShouldRetry != nil {
			h.ShouldRetry = l.ShouldRetry
		}
		if l.Backoff != nil {
			h.Backoff = l.Backoff
		}
		if l.IsFailure != nil {
			h.IsFailure = l.IsFailure
		}
		if l.OnStateChange != nil {
			h.OnStateChange = l.OnStateChange
		}
		if l.FaultSeed != 0 {
			h.FaultSeed = l.FaultSeed
		}
	}
	return h
}

// components gives p its stateful components as cp plans them, and the
// plan alone: old's when kept (unchanged or retuned), new ones when started
// or replaced, none when stopped or off; a group member's from gt, which
// builds each group's once. It changes nothing of old's: a retuned
// component's new settings are in the returned funcs, which the caller
// runs after the commit, so a reload that fails later leaves every serving
// component as it was.
func (r *Registry) components(p, old *pipeline, cp ClientPlan, ev *middleware.Events, h Hooks, gt *groupTable) (retunes []func()) {
	c := p.in.cfg
	add := func(f func()) {
		if f != nil {
			retunes = append(retunes, f)
		}
	}
	if p.latencies = old.latencies; p.latencies == nil {
		p.latencies = middleware.NewLatencies()
	}
	var f func()
	p.budget, f = take(cp.Component(ComponentBudget), old.budget,
		func() *middleware.Budget { return middleware.NewBudget(c.Retry.Budget, middleware.BudgetOptions{}) },
		func(b *middleware.Budget) { b.Update(c.Retry.Budget) })
	add(f)

	// A group's component reports to the group, and takes the hooks every
	// client has (Options.Hooks): it serves several clients at once.
	newBreaker := func(client string, h Hooks, ev *middleware.Events) func() *middleware.Breaker {
		return func() *middleware.Breaker {
			o := middleware.BreakerOptions{IsFailure: h.IsFailure, Events: ev}
			if on := h.OnStateChange; on != nil {
				o.OnStateChange = func(host string, from, to middleware.BreakerState) { on(client, host, from, to) }
			}
			return middleware.NewBreaker(c.CircuitBreaker, o)
		}
	}
	retuneBreaker := func(b *middleware.Breaker) { b.Update(c.CircuitBreaker) }
	if plan := cp.plan(ComponentBreaker); plan.Group != "" && has(plan.Change) {
		p.groups[0] = plan.Group
		p.breaker, f = groupComponent(gt, groupKey{ComponentBreaker, plan.Group},
			func(s *shared) *middleware.Breaker { return s.breaker }, func(s *shared, b *middleware.Breaker) { s.breaker = b },
			newBreaker(plan.Group, r.opts.Hooks, r.events("", plan.Group)), retuneBreaker)
	} else {
		p.breaker, f = take(plan.Change, old.breaker, newBreaker(p.name, h, ev), retuneBreaker)
	}
	add(f)

	newBulkhead := func(ev *middleware.Events) func() *middleware.Bulkhead {
		return func() *middleware.Bulkhead {
			return middleware.NewBulkhead(c.Bulkhead, middleware.BulkheadOptions{Events: ev})
		}
	}
	retuneBulkhead := func(b *middleware.Bulkhead) { b.Update(c.Bulkhead) }
	if plan := cp.plan(ComponentBulkhead); plan.Group != "" && has(plan.Change) {
		p.groups[1] = plan.Group
		p.bulkhead, f = groupComponent(gt, groupKey{ComponentBulkhead, plan.Group},
			func(s *shared) *middleware.Bulkhead { return s.bulkhead }, func(s *shared, b *middleware.Bulkhead) { s.bulkhead = b },
			newBulkhead(r.events("", plan.Group)), retuneBulkhead)
	} else {
		p.bulkhead, f = take(plan.Change, old.bulkhead, newBulkhead(ev), retuneBulkhead)
	}
	add(f)

	newLimiter := func(ev *middleware.Events) func() *middleware.RateLimit {
		return func() *middleware.RateLimit {
			return middleware.NewRateLimit(c.RateLimit, middleware.RateLimitOptions{Events: ev})
		}
	}
	retuneLimiter := func(l *middleware.RateLimit) { l.Update(c.RateLimit) }
	if plan := cp.plan(ComponentRateLimit); plan.Group != "" && has(plan.Change) {
		p.groups[2] = plan.Group
		p.limiter, f = groupComponent(gt, groupKey{ComponentRateLimit, plan.Group},
			func(s *shared) *middleware.RateLimit { return s.limiter }, func(s *shared, l *middleware.RateLimit) { s.limiter = l },
			newLimiter(r.events("", plan.Group)), retuneLimiter)
	} else {
		p.limiter, f = take(plan.Change, old.limiter, newLimiter(ev), retuneLimiter)
	}
	add(f)
	return retunes
}

// has reports whether a component with this change exists after it.
func has(ch Change) bool { return ch != Stopped && ch != Off }

// events returns the Events of client's layers of a group's component, or
// of the group's own component when client is "".
func (r *Registry) events(client, group string) *middleware.Events {
	return &middleware.Events{Client: client, Group: group, Logger: r.log, Observer: r.opts.Observer}
}

// take carries out one component's change: for unchanged, old; for
// retuned, old and the func that applies the new settings to it; for
// stopped and off, none; for started and replaced, a new one from start.
// A kept component old lacks (its pipeline failed to build, which the plan
// answers with started anyway) is started too.
func take[T comparable](ch Change, old T, start func() T, retune func(T)) (T, func()) {
	var none T
	switch {
	case ch == Stopped || ch == Off:
		return none, nil
	case ch == Unchanged && old != none:
		return old, nil
	case ch == Retuned && old != none:
		return old, func() { retune(old) }
	}
	return start(), nil
}

// errTransport is the pipeline of a client whose build failed outside a
// reload (a name first seen by Get whose defaults can no longer be built):
// every request fails with the build error.
type errTransport struct{ err error }

func (e errTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	return nil, e.err
}
