package factory

import (
	"fmt"
	"net/http"
	"sync"

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

	var bottom http.RoundTripper
	if r.opts.Base != nil {
		bottom = r.opts.Base
	} else {
		if cp.Component(ComponentTransport) == Unchanged || cp.Component(ComponentTransport) == Retuned {
			p.base = old.base
		}
		if p.base == nil {
			build, err := newTransport(sectionOf(name, in.defined), c.Transport, m.tls)
			if err != nil {
				return nil, nil, err
			}
			p.base = newBase(build, c.Transport.MaxConnAge)
		}
		bottom = p.base
	}

	ev := &middleware.Events{Client: name, Logger: r.log, Observer: r.opts.Observer}
	all, own := r.opts.Hooks, r.opts.ClientHooks[name]
	h := all
	if own.ShouldRetry != nil {
		h.ShouldRetry = own.ShouldRetry
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
	retunes = r.components(p, old, cp, ev, h)

	// The layers, outermost first, as DESIGN.md's pipeline draws them. Every
	// error that leaves the pipeline, code's own layers' included, is
	// redacted first.
	tmo := middleware.TimeoutOptions{Events: ev}
	layers := make([]middleware.Middleware, 0, 16)
	layers = append(layers, middleware.RedactErrors())
	layers = append(layers, all.Outer...)
	layers = append(layers, own.Outer...)
	layers = append(layers, middleware.Timeout(c.Timeout, tmo))
	if p.breaker != nil {
		layers = append(layers, p.breaker.Middleware())
	}
	if p.bulkhead != nil {
		layers = append(layers, p.bulkhead.Middleware())
	}
	layers = append(layers,
		middleware.Retry(c.Retry, middleware.RetryOptions{
			ShouldRetry: h.ShouldRetry, Budget: p.budget, Events: ev,
		}),
		middleware.AttemptTimeout(c.Retry.AttemptTimeout, tmo),
	)
	layers = append(layers, all.Attempt...)
	layers = append(layers, own.Attempt...)
	if p.limiter != nil {
		layers = append(layers, p.limiter.Middleware())
	}
	layers = append(layers,
		middleware.Headers(c.Headers, middleware.HeadersOptions{}),
		middleware.Auth(c.Auth.Host, m.cred, ev),
		middleware.Logging(c.Logging, middleware.LoggingOptions{Events: ev}),
		middleware.Fault(c.Fault, middleware.FaultOptions{Events: ev, Seed: h.FaultSeed}),
	)
	p.rt = middleware.Chain(layers...)(bottom)
	return p, retunes, nil
}

// components gives p its stateful components as cp plans them: old's when
// kept, new ones when started or replaced, none when stopped or off. It
// changes nothing of old's: a retuned component's new settings are in the
// returned funcs, which the caller runs after the commit, so a reload that
// fails later leaves every serving component as it was.
func (r *Registry) components(p, old *pipeline, cp ClientPlan, ev *middleware.Events, h Hooks) (retunes []func()) {
	c := p.in.cfg
	keep := func(component string) bool {
		ch := cp.Component(component)
		return ch == Unchanged || ch == Retuned
	}
	retuned := func(component string) bool { return cp.Component(component) == Retuned }

	if p.budget = old.budget; p.budget == nil || !keep(ComponentBudget) {
		p.budget = middleware.NewBudget(c.Retry.Budget, middleware.BudgetOptions{})
	} else if retuned(ComponentBudget) {
		b, s := p.budget, c.Retry.Budget
		retunes = append(retunes, func() { b.Update(s) })
	}

	if c.CircuitBreaker.Enabled {
		if p.breaker = old.breaker; p.breaker == nil || !keep(ComponentBreaker) {
			o := middleware.BreakerOptions{IsFailure: h.IsFailure, Events: ev}
			if f := h.OnStateChange; f != nil {
				name := p.name
				o.OnStateChange = func(host string, from, to middleware.BreakerState) { f(name, host, from, to) }
			}
			p.breaker = middleware.NewBreaker(c.CircuitBreaker, o)
		} else if retuned(ComponentBreaker) {
			b, s := p.breaker, c.CircuitBreaker
			retunes = append(retunes, func() { b.Update(s) })
		}
	}

	if c.Bulkhead.MaxConcurrent > 0 {
		if p.bulkhead = old.bulkhead; p.bulkhead == nil || !keep(ComponentBulkhead) {
			p.bulkhead = middleware.NewBulkhead(c.Bulkhead, middleware.BulkheadOptions{Events: ev})
		} else if retuned(ComponentBulkhead) {
			b, s := p.bulkhead, c.Bulkhead
			retunes = append(retunes, func() { b.Update(s) })
		}
	}

	if p.base != nil && retuned(ComponentTransport) {
		b, age := p.base, c.Transport.MaxConnAge
		retunes = append(retunes, func() { b.maxAge.Store(int64(age)) })
	}

	if c.RateLimit.RequestsPerSecond > 0 {
		if p.limiter = old.limiter; p.limiter == nil || !keep(ComponentRateLimit) {
			p.limiter = middleware.NewRateLimit(c.RateLimit, middleware.RateLimitOptions{Events: ev})
		} else if retuned(ComponentRateLimit) {
			l, s := p.limiter, c.RateLimit
			retunes = append(retunes, func() { l.Update(s) })
		}
	}
	return retunes
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
