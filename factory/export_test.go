package factory

import "net/http"

// UseTransport makes t the base transport of client name, as if the
// client had built it: for tests that need the path without Options.Base
// (whose attempts get a clone each) but no network.
func UseTransport(r *Registry, name string, t *http.Transport) {
	for i, n := range r.names {
		if n == name {
			r.gen.Load().pipes[i].base.t.Store(t)
		}
	}
}
