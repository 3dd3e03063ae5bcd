package factory

import (
	"maps"
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
	// calls counts the client's logical calls by outcome for Status (see
	// countCalls); handed on like latencies, so the counts are cumulative.
	// Nil for a pipeline that was never built.
	calls *callCounts

	// hash is cfg.Hash(), made when Status first asks: a reload compares
	// configs with ClientConfig.Equal, and hashing every new client was a
	// third of loading a config.
	hashOnce sync.Once
	hash     string
	// changed is config.ChangedKeys(config.Default(), cfg), made when
	// Status first asks (see nonDefault).
	changedOnce sync.Once
	changed     []config.KeyChange
}

// closed returns the pipeline of p's client after Close: every request
// fails with ErrClosed, and its stateful components stay for Status, but
// for the base transport, which Close retires.
func (p *pipeline) closed() *pipeline {
	q := &pipeline{name: p.name, in: p.in, built: p.built, gen: p.gen, rt: errTransport{ErrClosed}, calls: p.calls, latencies: p.latencies}
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

// groupNames returns the group of each component p shares, by component
// name; nil when it shares none. The map is the caller's.
func (p *pipeline) groupNames() map[string]string { return maps.Clone(p.groups) }
