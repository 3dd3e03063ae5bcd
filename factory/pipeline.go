package factory

import (
	"net/http"
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

	// The stateful components (see components), nil when switched off. A
	// reload hands them on to the next pipeline of the client, retuned in
	// place after the commit.
	budget   *middleware.Budget
	breaker  *middleware.Breaker
	bulkhead *middleware.Bulkhead
	limiter  *middleware.RateLimit
	// groups maps each component the pipeline shares through a group to
	// the group; nil when it shares none.
	groups map[string]string
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

// closed returns the pipeline of p's client after Close: every request
// fails with ErrClosed, and its stateful components stay for Status, but
// for the base transport, which Close retires.
func (p *pipeline) closed() *pipeline {
	q := &pipeline{name: p.name, in: p.in, built: p.built, gen: p.gen, rt: errTransport{ErrClosed}}
	for _, comp := range components {
		if comp.state != nil && !comp.state.base {
			comp.state.part.carry(q, p)
		}
	}
	return q
}

// configHash returns cfg.Hash(), computed once; "" for a pipeline that
// failed to build, which runs no config.
func (p *pipeline) configHash() string {
	if !p.built {
		return ""
	}
	p.hashOnce.Do(func() { p.hash = p.in.cfg.Hash() })
	return p.hash
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
		layers = append(layers, p.breaker.MiddlewareFor(r.events(name, p.groups[ComponentBreaker])))
	}
	if p.bulkhead != nil {
		layers = append(layers, p.bulkhead.MiddlewareFor(r.events(name, p.groups[ComponentBulkhead])))
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
	layers = append(layers, h.Attempt...)
	if p.limiter != nil {
		layers = append(layers, p.limiter.MiddlewareFor(r.events(name, p.groups[ComponentRateLimit])))
	}
	layers = append(layers, middleware.Headers(s.Headers, middleware.HeadersOptions{}))
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
