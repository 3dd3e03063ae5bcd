package factory

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"sync"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/middleware"
)

// pipeline is one generation of one client: its effective config and the
// RoundTripper built from it. A pipeline is immutable once published; a
// request that loaded it runs to its end on it.
type pipeline struct {
	name    string
	cfg     config.ClientConfig
	built   bool // false for the errTransport of a client that failed to build
	defined bool // the config has a section for this client
	// material is the digest of the resolved secret and TLS files (see
	// material): with cfg, the pipeline's identity. tlsDigest is the part
	// of it that the base transport depends on.
	material  [sha256.Size]byte
	tlsDigest [sha256.Size]byte
	gen       uint64
	rt        http.RoundTripper
	base      *base // nil when Options.Base is used

	// The stateful components, nil when switched off. A reload hands them
	// on to the next pipeline of the client, retuned in place.
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

// configHash returns cfg.Hash(), computed once; "" for a pipeline that
// failed to build, which runs no config.
func (p *pipeline) configHash() string {
	if !p.built {
		return ""
	}
	p.hashOnce.Do(func() { p.hash = p.cfg.Hash() })
	return p.hash
}

// build makes the pipeline of client name from c and
// its resolved material m, reusing from old (the pipeline it replaces, or
// nil) whatever did not change: the base transport and its warm
// connections when the transport and tls blocks and the TLS files' contents
// are equal, and the stateful components, retuned in place.
func (r *Registry) build(name string, c config.ClientConfig, m material, defined bool, gen uint64, old *pipeline) (p *pipeline, err error) {
	defer func() {
		if v := recover(); v != nil {
			p, err = nil, fmt.Errorf("client %q: building pipeline panicked: %v", name, v)
		}
	}()
	p = &pipeline{name: name, cfg: c, built: true, defined: defined, gen: gen, material: m.digest, tlsDigest: m.tlsDigest}

	var bottom http.RoundTripper
	if r.opts.Base != nil {
		bottom = r.opts.Base
	} else {
		if old != nil && old.base != nil && old.cfg.Transport == c.Transport && old.cfg.TLS == c.TLS && old.tlsDigest == m.tlsDigest {
			p.base = old.base
		} else {
			build, err := newTransport(sectionOf(name, defined), c.Transport, m.tls)
			if err != nil {
				return nil, err
			}
			p.base = newBase(build)
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
	r.carry(p, old, ev, h)

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
	)
	p.rt = middleware.Chain(layers...)(bottom)
	return p, nil
}

// carry gives p its stateful components: old's when old had them, retuned
// in place when their settings changed, so a reload loses no state (an open
// breaker stays open, budget and limiter tokens and bulkhead slots are
// kept); new ones otherwise. A component switched off is dropped, so one
// switched off and on again starts fresh.
func (r *Registry) carry(p, old *pipeline, ev *middleware.Events, h Hooks) {
	c := p.cfg
	if old == nil {
		old = &pipeline{}
	}

	p.budget = old.budget
	if p.budget == nil {
		p.budget = middleware.NewBudget(c.Retry.Budget, middleware.BudgetOptions{})
	} else if old.cfg.Retry.Budget != c.Retry.Budget {
		p.budget.Update(c.Retry.Budget)
	}

	if c.CircuitBreaker.Enabled {
		p.breaker = old.breaker
		if p.breaker == nil {
			o := middleware.BreakerOptions{IsFailure: h.IsFailure, Events: ev}
			if f := h.OnStateChange; f != nil {
				name := p.name
				o.OnStateChange = func(host string, from, to middleware.BreakerState) { f(name, host, from, to) }
			}
			p.breaker = middleware.NewBreaker(c.CircuitBreaker, o)
		} else if old.cfg.CircuitBreaker != c.CircuitBreaker {
			p.breaker.Update(c.CircuitBreaker)
		}
	}

	if c.Bulkhead.MaxConcurrent > 0 {
		p.bulkhead = old.bulkhead
		if p.bulkhead == nil {
			p.bulkhead = middleware.NewBulkhead(c.Bulkhead, middleware.BulkheadOptions{Events: ev})
		} else if old.cfg.Bulkhead != c.Bulkhead {
			p.bulkhead.Update(c.Bulkhead)
		}
	}

	if c.RateLimit.RequestsPerSecond > 0 {
		p.limiter = old.limiter
		if p.limiter == nil {
			p.limiter = middleware.NewRateLimit(c.RateLimit, middleware.RateLimitOptions{Events: ev})
		} else if old.cfg.RateLimit != c.RateLimit {
			p.limiter.Update(c.RateLimit)
		}
	}
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
