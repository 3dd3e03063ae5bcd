// Package factory builds named, resilient *http.Clients from a
// config.Config and keeps them current as the configuration changes.
//
//	clients, err := factory.Open(ctx, factory.Options{File: "clients.yaml", EnvPrefix: "SWITCHBOARD_"})
//	if err != nil {
//		log.Fatal(err) // a bad config at start-up: nothing runs
//	}
//	defer clients.Close()
//	billing := clients.Get("billing") // keep it for the life of the process
//
// A Registry hands out one *http.Client per name, forever the same pointer.
// Its Transport reads the client's current pipeline through an atomic
// pointer, so a reload swaps every client to the new generation at once
// while each request in flight finishes on the pipeline it started on.
//
// Each client's pipeline, outermost first (see package middleware):
//
//	Hooks.Outer → timeout → retry (+budget) → attempt timeout → Hooks.Attempt
//	  → headers → base *http.Transport
//
// A reload rebuilds only what changed: a client whose effective config is
// the same keeps its pipeline; a changed one keeps its base transport (and
// its warm connections) unless the transport or tls block changed, and
// keeps its retry budget, retuned in place. A replaced transport closes its
// idle connections now and the rest as their last requests end.
package factory
