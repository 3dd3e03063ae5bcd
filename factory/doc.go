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
//	call counts → base_url → error redaction → Hooks.Outer → timeout → breaker
//	  → bulkhead → retry (+budget) → attempt timeout → Hooks.Attempt → rate limit
//	  → headers → host-pinned auth → per-attempt logging → base *http.Transport
//
// Secret and TLS files named by the config (auth.bearer_token_file,
// auth.basic.password_file, tls.ca_file, tls.cert_file, tls.key_file) are
// read on every load and reload; a client whose files' contents changed is
// rebuilt like one whose config changed, and a changed CA bundle or key
// pair gets a new base transport (new connections use it, requests in
// flight finish on the old one). An unreadable or invalid file rejects the
// reload, naming the key, and the last good material keeps serving.
// Unless NoWatch, a registry made by Open watches these files like the
// config file, whichever layer names them (the file, a Source, env, flags)
// and for a config applied with Apply too, each from before the read that
// uses it (so a change made during a reload or Open
// triggers another one), and a file that a rejected config names but that
// does not exist yet is watched too: its creation triggers the reload that
// then succeeds.
// Registry.Handler serves Status and each client's effective config, with
// secrets redacted, as JSON for tools and as a live status page for
// browsers. The call counts of Status are the pipeline's outermost layer:
// one atomic add per logical call, by middleware.Classify's outcome.
//
// A reload is one transaction in three phases (plan.go, build.go and
// apply.go, which reads in its order): load every layer → validate → Plan
// (for each client and component: keep, retune, replace, start, stop, as
// the component table of components.go says) → build aside only what the
// plan creates → commit
// with one atomic swap → retune the kept stateful components → retire the
// replaced transports. Any error before the commit discards what was built
// and leaves every serving component exactly as it was. A client whose
// effective config is the same keeps its pipeline; a changed one keeps its
// base transport (and its warm connections) unless the transport or tls
// block changed, and keeps its budget, breaker, bulkhead and limiter,
// retuned in place with their state. A replaced transport closes its idle
// connections now and the rest as their last requests end, or at the
// latest after Options.DrainGrace (DefaultDrainGrace, 30s). Reloads run one
// at a time and the latest inputs win.
//
// Open watches the file (and every config.Watchable in Options.Sources):
// a change is debounced (at most Options.MaxDebounce under continuous
// writes), re-read with every layer, validated and applied as one new
// generation; anything wrong before the commit, a panic included, is
// rejected, logged at ERROR, reported to OnReload and kept in
// Status().LastError, while the last good generation keeps serving and
// watching goes on. A Source that
// cannot be read keeps its last good snapshot, shown stale in
// Status().Sources; one that answers with a document that does not parse
// (config.ErrSourceContent) is rejected like a bad value. After Close every client fails with ErrClosed.
package factory
