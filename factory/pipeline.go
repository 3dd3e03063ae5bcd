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
func (r *Registry) build(name string, in clientInput, m material, cp ClientPlan, old *pipeline, gen uint64) (p *pipeline, retunes []func(), err error) {
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
	all, own := r.opts.Hooks, r.opts.ClientHooks[name]
	h := all
	if own.ShouldRetry != nil {
		h.ShouldRetry = own.ShouldRetry
	}
	if own.Backoff != nil {
		h.Backoff = own.Backoff
	}
	if own.IsFailure != nil {
		h.IsFailure = own.IsFailure
	}
	if own.OnStateChange != nil {
		h.OnStateChange = own.OnStateChange
	}
	if own.FaultSeed != 0 {
		h.FaultSeed = own.FaultSeed
	}
	retunes = append(retunes, r.components(p, old, cp, ev, h)...)

	// The layers, outermost first, as DESIGN.md's pipeline draws them.
	// Auth, logging and fault injection are the client's, below every
	// route; each route runs its own stateless layers (timeout, retry or
	// hedge, attempt timeout, headers) around the client's components.
	lower := middleware.Chain(
		middleware.Auth(c.Auth.Host, m.cred, ev),
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
	layers := make([]middleware.Middleware, 0, 2+len(all.Outer)+len(own.Outer))
	layers = append(layers, middleware.RedactErrors())
	layers = append(layers, all.Outer...)
	layers = append(layers, own.Outer...)
	p.rt = middleware.Chain(layers...)(top)
	return p, retunes, nil
}

// chain builds the layers of one route (or of the client, for calls that
// match no route) from the total timeout down to lower: the stateless
// layers from s, around p's stateful components, which every route of the
// client shares.
func (r *Registry) chain(p *pipeline, s config.RouteConfig, ev *middleware.Events, h Hooks, lower http.RoundTripper) http.RoundTripper {
	all, own := r.opts.Hooks, r.opts.ClientHooks[p.name]
	tmo := middleware.TimeoutOptions{Events: ev}
	layers := make([]middleware.Middleware, 0, 12)
	layers = append(layers, middleware.Timeout(s.Timeout, tmo))
	if p.breaker != nil {
		layers = append(layers, p.breaker.Middleware())
	}
	if p.bulkhead != nil {
		layers = append(layers, p.bulkhead.Middleware())
	}
	if s.Hedge.Enabled {
		layers = append(layers, middleware.Hedge(s.Hedge, s.Retry, middleware.HedgeOptions{
			ShouldRetry: h.ShouldRetry, Budget: p.budget, Events: ev, Latencies: p.latencies,
		}))
	} else {
		layers = append(layers, middleware.Retry(s.Retry, middleware.RetryOptions{
			ShouldRetry: h.ShouldRetry, Budget: p.budget, Events: ev, Backoff: h.Backoff,
		}))
	}
	layers = append(layers, middleware.AttemptTimeout(s.Retry.AttemptTimeout, tmo))
	layers = append(layers, all.Attempt...)
	layers = append(layers, own.Attempt...)
	if p.limiter != nil {
		layers = append(layers, p.limiter.Middleware())
	}
	layers = append(layers, middleware.Headers(s.Headers, middleware.HeadersOptions{}))
	return middleware.Chain(layers...)(lower)
}

// components gives p its stateful components as cp plans them, and the
// plan alone: old's when kept (unchanged or retuned), new ones when started
// or replaced, none when stopped or off. It changes nothing of old's: a
// retuned component's new settings are in the returned funcs, which the
// caller runs after the commit, so a reload that fails later leaves every
// serving component as it was.
func (r *Registry) components(p, old *pipeline, cp ClientPlan, ev *middleware.Events, h Hooks) (retunes []func()) {
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
	p.breaker, f = take(cp.Component(ComponentBreaker), old.breaker,
		func() *middleware.Breaker {
			o := middleware.BreakerOptions{IsFailure: h.IsFailure, Events: ev}
			if on := h.OnStateChange; on != nil {
				name := p.name
				o.OnStateChange = func(host string, from, to middleware.BreakerState) { on(name, host, from, to) }
			}
			return middleware.NewBreaker(c.CircuitBreaker, o)
		},
		func(b *middleware.Breaker) { b.Update(c.CircuitBreaker) })
	add(f)
	p.bulkhead, f = take(cp.Component(ComponentBulkhead), old.bulkhead,
		func() *middleware.Bulkhead {
			return middleware.NewBulkhead(c.Bulkhead, middleware.BulkheadOptions{Events: ev})
		},
		func(b *middleware.Bulkhead) { b.Update(c.Bulkhead) })
	add(f)
	p.limiter, f = take(cp.Component(ComponentRateLimit), old.limiter,
		func() *middleware.RateLimit {
			return middleware.NewRateLimit(c.RateLimit, middleware.RateLimitOptions{Events: ev})
		},
		func(l *middleware.RateLimit) { l.Update(c.RateLimit) })
	add(f)
	return retunes
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
