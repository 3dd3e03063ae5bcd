package factory

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/spf13/pflag"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/middleware"
)

// Options configures a Registry. The zero value is valid: no file, no env
// layer, no flags, slog.Default() for logs, no hooks. Options are read once by
// Open or New; changing them afterwards has no effect.
type Options struct {
	// File is the YAML file, watched for changes unless NoWatch. Open needs
	// it; New ignores it.
	File string
	// NoWatch turns the file watcher off; Reload still re-reads every layer.
	NoWatch bool
	// EnvPrefix, such as "SWITCHBOARD_", turns on the env layer; "" = none.
	// Only the variables named <EnvPrefix>DEFAULTS__… and
	// <EnvPrefix>CLIENTS__… (any case) are switchboard's: the others under
	// the prefix, such as the service links Kubernetes sets for a Service
	// named like it (SVC_PORT, SVC_SERVICE_HOST), are ignored, and Open
	// lists their names in one DEBUG record. A variable naming a client no
	// layer defines fails Open (a typo is caught at start-up); at a reload
	// it is ignored, with one WARN per reload naming it, so that removing a
	// client from the file never needs a redeploy to clear the env. Flags
	// (--set clients.<name>.…) follow the same rule.
	EnvPrefix string
	// Section, when not "", is the key path ("." between levels) under
	// which File and every Source document keep the client config, beside
	// the application's own keys, which are ignored: "http_clients" reads
	// http_clients.defaults and http_clients.clients. Errors, provenance
	// and Status speak of full paths and of the lines of the application's
	// file. Env and flag names do not change. A File without the section
	// fails Open and rejects a reload; see config.Loader.Section. "" means
	// the whole file is the client config. Open reads it; New ignores it.
	Section string
	// Require lists the client names the code depends on: Open and New
	// fail, and a reload or Apply is rejected, when the config does not
	// define one of them (errors.Is(err, ErrRequiredClient)). Nil means
	// none; Get of an undefined name then follows defaults, as always.
	Require []string
	// Flags, when not nil, is the flag layer: `--set key=value` (see
	// config.RegisterFlags) and flags named like key paths. Parse it first.
	Flags *pflag.FlagSet
	// Logger receives every log record and event; nil means slog.Default().
	Logger *slog.Logger
	// OnReload is called after every reload attempt, applied or rejected,
	// in the order the attempts ran, with no lock of the registry held: it
	// may call Status, Apply and Reload (not Close, which waits for the
	// watcher goroutine that may be running it). It runs on the goroutine
	// of the Apply or Reload that made the attempt, or of a concurrent one
	// that was telling earlier outcomes. A panic in it is recovered and
	// logged. A reload whose inputs hash the same as the serving ones
	// changes nothing and is not reported here (the Observer gets
	// config.unchanged): it was no attempt to change anything.
	OnReload func(ReloadEvent)

	// Debounce is the watcher's quiet time before a reload; 0 means 100ms.
	// Notifications of Sources are debounced the same way.
	Debounce time.Duration
	// MaxDebounce is the longest a reload waits under continuous changes:
	// a file (or Source) changed again and again within each Debounce is
	// still reloaded at least once per MaxDebounce, with whatever it holds
	// then. Zero means 1s; it is never below Debounce.
	MaxDebounce time.Duration
	// Sources are layers between File and the env layer (see
	// config.Source), read by Open and by every reload. Unless NoWatch,
	// Open starts watching each one that implements config.Watchable: its
	// notifications trigger reloads like the file's changes, and Close
	// stops them. New ignores Sources.
	Sources []config.Source
	// DrainGrace bounds how long a transport replaced by a reload waits for
	// the requests still running on it: its idle connections close when
	// the last one ends, or when DrainGrace has passed (logged at WARN;
	// those requests still finish, and their connections close when they
	// become idle). Zero means DefaultDrainGrace (30s).
	DrainGrace time.Duration
	// Environ replaces os.Environ as the env layer's source; nil = os.Environ.
	Environ func() []string
	// Quotas is the store of every rate limit with scope fleet: one quota
	// per key shared by every process that uses the same store (the
	// module github.com/switchboard-http/switchboard/quotas/redis is one
	// on Redis). Nil means none: a client with rate_limit.scope fleet is
	// then an error at Open, and rejects a reload.
	Quotas middleware.QuotaStore
	// Observer receives every event of every client, for metrics; nil = none.
	Observer middleware.Observer
	// Base, when not nil, is the base RoundTripper of every client instead of
	// an *http.Transport built from the transport and tls blocks (which are
	// then ignored, except transport.max_redirects). Meant for tests and
	// in-memory transports. Each attempt it gets is a clone of its own.
	Base http.RoundTripper
	// Hooks are code-only settings applied to every client.
	Hooks Hooks
	// HooksFor, when not nil, returns code-only settings for the client
	// called name, applied inside Hooks and outside ClientHooks[name]: for
	// integrations that label what they see by client (tracing, metrics)
	// without a hook per name. It is called each time a pipeline of the
	// client is built (at load and at each reload that changes the client),
	// with the registry's lock held: it must not call the Registry.
	HooksFor func(name string) Hooks
	// ClientHooks are code-only settings of named clients, applied inside
	// the ones of Hooks.
	ClientHooks map[string]Hooks
}

// Hooks are the code-only parts of a client's pipeline: behaviour that YAML
// cannot express. The zero value adds nothing.
type Hooks struct {
	// Outer middleware wrap the whole pipeline and see each logical call once,
	// outside the total timeout. The first is the outermost. Middleware are
	// called to build a pipeline with the registry's lock held: a
	// constructor must not call the Registry (the RoundTripper it returns
	// may).
	Outer []middleware.Middleware
	// Attempt middleware see every attempt, just inside the attempt timeout.
	// Every attempt is a clone of the caller's request (Request.Clone),
	// which they may change: the caller's request is never changed.
	Attempt []middleware.Middleware
	// ShouldRetry replaces the method and outcome gates of the retry layer
	// (see middleware.RetryOptions).
	ShouldRetry func(req *http.Request, resp *http.Response, err error) bool
	// Backoff replaces the retry layer's backoff schedule (retry's
	// initial_backoff, max_backoff, multiplier, jitter and rate_limited):
	// it returns the wait after attempt number attempt (1-based) whose
	// outcome was resp or err. A valid Retry-After still rules over it;
	// see middleware.RetryOptions.Backoff.
	Backoff func(attempt int, resp *http.Response, err error) time.Duration
	// IsFailure replaces the circuit breaker's failure test (transport error
	// or status >= 500); see middleware.BreakerOptions.
	IsFailure func(resp *http.Response, err error) bool
	// OnStateChange is told of every breaker state change of the client,
	// never with a lock of the breaker held. A breaker shared by a group
	// (circuit_breaker.group) takes Options.Hooks' IsFailure and
	// OnStateChange, not a client's, and reports with client set to the
	// group's name (its events name the client whose call caused the
	// change); host is "" for a breaker of
	// scope client. A change caused by a reload's retune is told while that
	// reload runs: then it must not call Apply, Reload or Close.
	OnStateChange func(client, host string, from, to middleware.BreakerState)
	// FaultSeed, when not 0, seeds the random source of the client's fault
	// injection (the `fault` block), so that a test sees the very same
	// faults on every run; 0 seeds it at random. Each pipeline has one
	// source, so a reload of the client starts the sequence again.
	FaultSeed uint64
}

// ReloadEvent reports one reload attempt to Options.OnReload.
type ReloadEvent struct {
	// Generation is the generation serving after the attempt: the new one
	// when applied, the old one when rejected.
	Generation uint64
	// Err is why the reload was rejected; nil when it was applied.
	Err error
	// Changed lists the clients whose pipeline was rebuilt, sorted.
	Changed []string
	// Plan is what the reload did, one ClientPlan per client sorted by
	// name, unchanged ones included: the plan Registry.Plan would have
	// returned for its config. Nil when the reload was rejected.
	Plan []ClientPlan
}
