package factory

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/middleware"
)

// A reload is one transaction in three named phases, each in its own
// file: plan (plan.go: pure, the inputs → what changes), build (build.go:
// new objects aside, touching nothing live) and apply (this file, which
// reads top to bottom in the order an attempt runs):
//
//	Reload ─ load every layer (a Source that fails keeps its last good
//	   │     snapshot)
//	Apply ─┴─ watch the files the config names first (watch.go)
//	   ├─ skip if the inputs are the serving ones (Reload only)
//	   └─ validate
//	        → plan: resolve the files each client names (material.go),
//	          then planAll (plan.go)
//	        → build aside what the plan creates (build.go)
//	        → swap: the new generation serves, one atomic store
//	        → retune the kept components, retire the replaced transports
//	          (drain.go)
//	        → tell: log, Observer, OnReload, outside every lock
//
// Attempts run one at a time (r.reloading); a Reload asked for while one
// runs joins the one that starts after it (r.reloads), which reads fresh
// inputs, so older inputs never serve after newer ones. Any error before
// the swap leaves everything serving exactly as it was; nothing after the
// swap can turn it into a rejection.

// Apply validates cfg and, if it is valid, moves every client to it at once
// as a new generation; a request in flight finishes on the pipeline it
// started on. It executes Registry.Plan(cfg): clients whose effective config
// and secret and TLS files' contents did not change keep their pipeline;
// changed ones keep their components as the plan says. On any error (an
// unreadable or invalid secret or TLS file, a hook that panics while its
// client is built) nothing changes: no component is retuned, no transport
// closed; the error (redacted) is logged, reported to OnReload, kept in
// Status().LastError and returned. After Close it returns ErrClosed and
// reports nothing. On a registry made by Open (unless NoWatch), the secret
// and TLS files cfg names are watched from then on, as a reload's are: a
// change of one triggers a reload, which reads the layers again. It is
// safe for concurrent use; Applies and reloads run one at a time.
func (r *Registry) Apply(cfg config.Config) error {
	rep := r.attempt(func() (config.Config, error) { return cfg, nil }, false)
	r.flush()
	return rep.err
}

// Reload re-reads every layer now and applies the result as Apply does. A
// load whose inputs hash the same as the last applied ones (config file,
// Sources, env, flags, and the contents of every secret and TLS file the
// config names) changes nothing and returns nil. A Source whose Read fails
// keeps serving its last good snapshot (one WARN per outage;
// Status().Sources marks it stale), so the other layers' changes still
// apply; one whose Read says its content is bad (config.ErrSourceContent)
// rejects the reload. A Reload asked for while another runs waits for it
// and then shares the next one, which reads the inputs as they are then;
// it returns that reload's result. After Close it returns ErrClosed; on a
// registry made by New, which has no layers, ErrNoSource.
func (r *Registry) Reload() error {
	if r.isClosed() {
		return ErrClosed
	}
	if r.loader == nil {
		return ErrNoSource
	}
	err := r.reloads.do()
	r.flush()
	return err
}

// reload is one Reload, run by r.reloads one at a time.
func (r *Registry) reload() error { return r.attempt(r.load, true).err }

// load reads every layer, under the registry's context (which Close ends
// for Sources that take one), turning a panic into an error.
func (r *Registry) load() (cfg config.Config, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("loading config panicked: %v", v)
		}
	}()
	cfg, err = r.loader.LoadContext(r.ctx)
	if err == nil && len(cfg.Dropped) > 0 {
		// The client was removed from the file or a Source while an env
		// variable or flag still tunes it: that must not pin the old
		// config until a redeploy changes the env.
		r.log.Warn("config: ignoring env variables and flags that name a client the config no longer defines; remove them at the next deploy",
			"inputs", cfg.Dropped)
	}
	return cfg, err
}

// outcome is what one attempt did, for deliver.
type outcome struct {
	plans   []ClientPlan // sorted by name; nil unless applied
	gen     uint64       // the generation serving after it
	err     error        // why it was rejected (redacted); nil when applied or skipped
	skipped bool         // the inputs hashed as the serving ones
	quiet   bool         // ErrClosed: nothing to tell anyone
	late    []string     // panics recovered after the commit, which stands
}

// attempt runs one reload (layered: from r.load, whose inputs may be
// unchanged) or Apply, under r.reloading, and queues its outcome for
// deliver before it lets the next attempt start, so outcomes are told in
// the order the attempts ran. A panic before the commit rejects the
// attempt; one after it (a log handler, a retune's OnStateChange) is
// recorded and the commit stands.
func (r *Registry) attempt(load func() (config.Config, error), layered bool) (out outcome) {
	r.reloading.Lock()
	defer r.reloading.Unlock()
	committed := false
	defer func() {
		if v := recover(); v != nil {
			if committed {
				out.late = append(out.late, fmt.Sprint(v))
			} else {
				out = outcome{err: fmt.Errorf("reload panicked: %v", v)}
			}
		}
		r.finish(&out)
	}()
	if r.isClosed() {
		return outcome{err: ErrClosed, quiet: true}
	}
	// Load.
	cfg, err := load()
	// The files this config names are watched before anything reads them
	// (again), those of a rejected one too (one it names may not exist
	// yet): a change after the read triggers a reload. An applied config
	// names its files as a loaded one does.
	named := cfg.ReferencedFiles()
	if err != nil {
		named = config.NamedFiles(err)
	}
	r.rewatch(named)
	// Skip if unchanged.
	if err == nil && layered {
		r.mu.Lock()
		// InputHash covers the contents of the secret and TLS files too, so
		// a rotated token or certificate is never skipped as unchanged.
		same := cfg.InputHash != "" && cfg.InputHash == r.lastHash
		r.mu.Unlock()
		if same {
			r.rewatch(nil) // the serving config's files, no more
			return outcome{skipped: true}
		}
	}
	// Validate.
	if err == nil {
		err = cfg.Validate()
	}
	if err == nil {
		err = r.required(cfg)
	}
	// Plan, build aside, swap.
	var (
		old, g  *generation
		plans   []ClientPlan
		retunes []func()
	)
	if err == nil {
		old, g, plans, retunes, err = r.commit(cfg, layered)
	}
	if err != nil {
		if errors.Is(err, ErrClosed) || r.isClosed() { // Close came first: nothing to tell
			return outcome{err: ErrClosed, quiet: true}
		}
		return outcome{err: err}
	}
	committed = true
	out = outcome{plans: sortedPlans(plans), gen: g.num}

	// Retunes and retirements, after the swap: each step on its own, so
	// that one that panics neither skips the others nor turns the commit
	// into a rejection. Telling is finish's (deferred) and flush's.
	after := func(f func()) {
		defer func() {
			if v := recover(); v != nil {
				out.late = append(out.late, fmt.Sprint(v))
			}
		}()
		f()
	}
	after(func() { r.rewatch(nil) }) // the new serving config's files, no more
	// The kept components take their new settings now that the new
	// generation serves (a breaker's retune may call OnStateChange).
	for _, f := range retunes {
		after(f)
	}
	after(func() { r.retire(old, g) })
	for _, p := range g.pipes {
		after(func() { r.warnInsecure(p) })
	}
	after(func() { r.warnHooks(cfg) })
	return out
}

// finish records out in the registry (LastError; a skip also commits what
// the Sources read, which is what serves) and queues it for deliver.
// r.reloading held.
func (r *Registry) finish(out *outcome) {
	if out.quiet {
		return
	}
	out.err = redactText(out.err)
	r.mu.Lock()
	switch {
	case out.err != nil:
		r.lastErr = out.err
	case out.skipped:
		r.lastErr = nil // the inputs are back to the serving ones
		r.sources.commit()
	}
	out.gen = r.gen.Load().num
	if !out.skipped {
		r.reloadLog.add(ReloadRecord{Time: time.Now(), Generation: out.gen, Err: out.err, Changed: changedClients(out.plans)})
	}
	r.mu.Unlock()
	r.told.push(*out)
}

// Plan returns what Apply(cfg) would do now, without doing it: the very
// plan Apply executes, with the secret and TLS files cfg names read, and
// the names code has asked for with Get (which follow `defaults`) planned
// too. It returns the error Apply would return for an invalid cfg or an
// unreadable file, and ErrClosed after Close. It is safe for concurrent
// use.
func (r *Registry) Plan(cfg config.Config) ([]ClientPlan, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	t, err := r.prepare(cfg)
	if err != nil {
		return nil, err
	}
	return sortedPlans(t.plans), nil
}

// txn is one reload transaction in the making: for every client, by index
// as in the new generation, its input, its resolved material and its plan.
type txn struct {
	old    *generation
	names  []string
	inputs []clientInput
	mats   []material
	plans  []ClientPlan
	groups map[groupKey]ComponentPlan // what the plan does to each shared component
}

// commit plans cfg against the serving generation (prepare), builds aside
// what the plan creates (buildAside) and, when all of it built, swaps the
// generation (swap): the one moment a reload changes what serves. It
// returns the generation it replaced, the new one, the plans and the
// retunes still to run. On error nothing serving was touched and what was
// built is discarded.
func (r *Registry) commit(cfg config.Config, layered bool) (old, g *generation, plans []ClientPlan, retunes []func(), err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, nil, nil, nil, ErrClosed
	}
	t, err := r.prepare(cfg)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	g = &generation{num: t.old.num + 1, cfg: cfg}
	if g.pipes, retunes, err = r.buildAside(t, g.num); err != nil {
		return nil, nil, nil, nil, err
	}
	r.swap(t, g, layered)
	return t.old, g, t.plans, retunes, nil
}

// swap makes g, built from t, the serving generation, with the records of
// what serves: the clients of names it adds, the input hash, LastReload, a
// cleared LastError and, for a load of the layers, the Sources' snapshots.
// r.mu held.
func (r *Registry) swap(t *txn, g *generation, layered bool) {
	clients := make(map[string]*http.Client, len(t.names)-len(r.names))
	for i := len(r.names); i < len(t.names); i++ {
		clients[t.names[i]] = r.newClient(i)
	}
	r.names = t.names
	r.gen.Store(g)
	r.publish(clients)
	r.lastReload, r.lastErr, r.lastHash = time.Now(), nil, g.cfg.InputHash
	if layered {
		r.sources.commit()
	}
}

// prepare is the plan phase with its inputs: it resolves the files every
// client of cfg names (reading them; on a reload of the layers the watcher
// watches them already, see attempt) and plans each client against what
// serves it (planAll). One
// unreadable or invalid file rejects the whole reload, and every such
// problem is reported at once. r.mu held.
func (r *Registry) prepare(cfg config.Config) (*txn, error) {
	t := &txn{old: r.gen.Load(), names: slices.Clone(r.names)}
	known := make(map[string]bool, len(r.names)) // a set: Contains would make Apply quadratic
	for _, name := range r.names {
		known[name] = true
	}
	var added []string
	for name := range cfg.Clients {
		if !known[name] {
			added = append(added, name)
		}
	}
	sort.Strings(added)
	t.names = append(t.names, added...)

	t.inputs = make([]clientInput, len(t.names))
	t.mats = make([]material, len(t.names))
	fc := fileCache{}
	var errs []error
	seen := map[string]bool{}
	for i, name := range t.names {
		want, defined := cfg.Client(name)
		m, err := resolve(sectionOf(name, defined), want, r.opts.Base == nil, fc)
		if err != nil && !seen[err.Error()] { // clients following defaults share its errors
			seen[err.Error()] = true
			errs = append(errs, err)
		}
		if err := r.needsQuotas(cfg.Provenance, name, defined, want); err != nil && !seen[err.Error()] {
			seen[err.Error()] = true
			errs = append(errs, err)
		}
		t.mats[i] = m
		t.inputs[i] = clientInput{cfg: want, defined: defined, credDigest: m.credDigest, tlsDigest: m.tlsDigest}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	was := make([]*serving, len(t.names))
	for i, p := range t.old.pipes {
		was[i] = p.serving()
	}
	t.plans, t.groups = planAll(t.names, was, t.inputs, groupViewOf(t.old.pipes), r.opts.Base != nil)
	return t, nil
}

// needsQuotas returns the error of a client whose rate limit has scope
// fleet while Options.Quotas is nil: a cross-field rule between the config
// and the code, so the factory checks it. The error names the key as the
// config's own errors do: under Options.Section, with the file line or the
// layer that set it (prov), and the file.
func (r *Registry) needsQuotas(prov *config.Provenance, name string, defined bool, c config.ClientConfig) error {
	if r.opts.Quotas != nil || c.RateLimit.RequestsPerSecond <= 0 || c.RateLimit.Scope != middleware.QuotaFleet {
		return nil
	}
	const key = "rate_limit.scope"
	fe := &config.FieldError{Path: sectionOf(name, defined) + "." + key,
		Msg: "fleet needs a quota store: set factory.Options.Quotas (such as quotas/redis), or use scope process"}
	if r.opts.Section != "" {
		fe.Path = r.opts.Section + "." + fe.Path
	}
	o, _ := prov.Of(name, key)
	if !defined {
		o, _ = prov.Default(key)
	}
	switch o.Layer {
	case config.LayerFile:
		fe.Line = o.Line
		return fmt.Errorf("config %s: %w", o.Name, fe)
	case config.LayerSource:
		fe.SetBy = "source " + o.Name
	case config.LayerEnv:
		fe.SetBy = "env " + o.Name
	case config.LayerFlag:
		fe.SetBy = o.Name
	}
	return fe
}

// sortedPlans returns plans sorted by client name.
func sortedPlans(plans []ClientPlan) []ClientPlan {
	out := slices.Clone(plans)
	slices.SortFunc(out, func(a, b ClientPlan) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// retire drains the base transports that old used and g no longer does.
func (r *Registry) retire(old, g *generation) {
	keep := make(map[*base]bool, len(g.pipes))
	for _, p := range g.pipes {
		keep[p.base] = true
	}
	for _, p := range old.pipes {
		if p.base != nil && !keep[p.base] {
			keep[p.base] = true // retire each once
			r.drain.retire(p.base, p.name)
		}
	}
}

// warnInsecure logs the WARNs that insecure_skip_verify and fault
// injection ask for on every load of a client that has them on: neither
// should stay on unnoticed. It also warns, on every load, of a
// bulkhead.max_concurrent that mode adaptive does not read: a WARN, not
// an error, since defaults may hold it for the static clients beside
// an adaptive one, and a switch back to static reads it again. So does
// an idempotency key enabled with an empty methods list (on the client or
// a route): it keys nothing, which is valid but almost surely not what
// was meant.
func (r *Registry) warnInsecure(p *pipeline) {
	section := sectionOf(p.name, p.in.defined)
	keysNothing := func(k middleware.IdempotencyKeySettings) bool {
		return k.Enabled && k.Methods != nil && len(k.Methods) == 0
	}
	clientNoop := keysNothing(p.in.cfg.Retry.IdempotencyKey)
	if clientNoop {
		r.log.Warn("retry.idempotency_key is enabled with methods: []: no request gets a key",
			"client", p.name, "key", section+".retry.idempotency_key.methods")
	}
	for _, pat := range slices.Sorted(maps.Keys(p.in.cfg.Routes)) {
		if !clientNoop && keysNothing(p.in.cfg.Routes[pat].Retry.IdempotencyKey) {
			r.log.Warn("retry.idempotency_key is enabled with methods: []: no request gets a key",
				"client", p.name, "key", section+"."+config.RouteKey(pat, "retry.idempotency_key.methods"))
		}
	}
	if p.in.cfg.TLS.InsecureSkipVerify && r.opts.Base == nil {
		r.log.Warn("tls.insecure_skip_verify is on: the server's certificate is not verified",
			"client", p.name, "key", sectionOf(p.name, p.in.defined)+".tls.insecure_skip_verify")
	}
	if f := p.in.cfg.Fault; f.Enabled {
		r.log.Warn("fault injection is on: attempts of this client are aborted or delayed on purpose",
			"client", p.name, "key", sectionOf(p.name, p.in.defined)+".fault.enabled",
			"abort_percent", f.Abort.Percent, "delay_percent", f.Delay.Percent, "header", f.Header)
	}
	if b := p.in.cfg.Bulkhead; b.Mode == middleware.BulkheadAdaptive && b.MaxConcurrent > 0 {
		r.log.Warn("bulkhead.max_concurrent is set but mode adaptive does not read it: the limit is learned within [min_limit, max_limit]",
			"client", p.name, "key", sectionOf(p.name, p.in.defined)+".bulkhead.max_concurrent", "max_concurrent", b.MaxConcurrent)
	}
}

// warnHooks logs one WARN for each Options.ClientHooks name that cfg does
// not define and no Get asked for, as Get does for a name it does not
// know: a typo there would silently drop the hooks.
func (r *Registry) warnHooks(cfg config.Config) {
	var typos []string
	r.mu.Lock()
	for name := range r.opts.ClientHooks {
		if _, ok := cfg.Clients[name]; ok || r.warned["hooks:"+name] || slices.Contains(r.names, name) {
			continue
		}
		r.warned["hooks:"+name] = true
		typos = append(typos, name)
	}
	// A shared breaker serves several clients: it takes Options.Hooks'
	// IsFailure and OnStateChange, never one client's.
	var unshared []string
	for name, h := range r.opts.ClientHooks {
		c, ok := cfg.Clients[name]
		if ok && c.CircuitBreaker.Enabled && c.CircuitBreaker.Group != "" && (h.IsFailure != nil || h.OnStateChange != nil) && !r.warned["group-hooks:"+name] {
			r.warned["group-hooks:"+name] = true
			unshared = append(unshared, name)
		}
	}
	r.mu.Unlock()
	slices.Sort(typos)
	for _, name := range typos {
		r.log.Warn("Options.ClientHooks names a client the config does not define; its hooks apply once it is defined or asked for with Get",
			"client", name)
	}
	slices.Sort(unshared)
	for _, name := range unshared {
		r.log.Warn("the client's breaker is shared by a group: its own IsFailure and OnStateChange hooks do not apply to it (Options.Hooks' do)",
			"client", name, "group", cfg.Clients[name].CircuitBreaker.Group)
	}
}

// tell logs an attempt's outcome, emits its event and calls OnReload. It
// runs with no lock held (see reportQueue), so a callback may call the
// registry, Apply and Reload included.
func (r *Registry) tell(out outcome) {
	for _, v := range out.late {
		r.log.Error("panic after a reload was applied; the reload stands", "generation", out.gen, "panic", v)
	}
	if out.skipped {
		r.log.Debug("config unchanged; reload skipped", "event", middleware.EventConfigUnchanged, "file", r.opts.File, "generation", out.gen)
		if r.opts.Observer != nil {
			r.observe(middleware.Event{Name: middleware.EventConfigUnchanged})
		}
		return
	}
	changed := changedClients(out.plans)
	ev := middleware.Event{Name: middleware.EventConfigReloaded}
	if out.err != nil {
		ev.Name, ev.Err = middleware.EventConfigRejected, out.err
		r.log.Error("config rejected; the last good config keeps serving",
			"event", ev.Name, "file", r.opts.File, "generation", out.gen, "error", out.err.Error())
	} else {
		r.log.Info("config reloaded",
			"event", ev.Name, "file", r.opts.File, "generation", out.gen, "changed", changed)
	}
	if r.opts.Observer != nil {
		r.observe(ev)
	}
	r.callOnReload(ReloadEvent{Generation: out.gen, Err: out.err, Changed: changed, Plan: out.plans})
}

// flush tells every queued outcome, in order (see reportQueue).
func (r *Registry) flush() { r.told.drain(r.tell) }

// redactText returns err with any URL in its message redacted
// (middleware.RedactText), keeping err reachable through Unwrap. Config
// errors never quote a secret value; this guards the rest (a loader's or a
// hook's error that names a URL).
func redactText(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if red := middleware.RedactText(msg); red != msg {
		return &redactedTextError{msg: red, err: err}
	}
	return err
}

// redactedTextError is an error whose message was redacted.
type redactedTextError struct {
	msg string
	err error
}

func (e *redactedTextError) Error() string { return e.msg }
func (e *redactedTextError) Unwrap() error { return e.err }

// callOnReload calls Options.OnReload, if set, recovering its panic.
func (r *Registry) callOnReload(e ReloadEvent) {
	if r.opts.OnReload == nil {
		return
	}
	defer func() {
		if v := recover(); v != nil {
			r.log.Error("OnReload panicked", "panic", fmt.Sprint(v))
		}
	}()
	r.opts.OnReload(e)
}

// observe passes a reload's event to Options.Observer, recovering its
// panic: a broken metrics hook must not stop reloads.
func (r *Registry) observe(ev middleware.Event) {
	defer func() {
		if v := recover(); v != nil {
			r.log.Error("Observer panicked", "event", ev.Name, "panic", fmt.Sprint(v))
		}
	}()
	r.opts.Observer.OnEvent(context.Background(), ev)
}
