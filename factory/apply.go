package factory

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/middleware"
)

// A reload is one transaction, and this file reads top to bottom in its
// order:
//
//	Reload ─ load (every layer; a Source that fails keeps its last good snapshot)
//	Apply ───┴─ transact: validate → prepare (resolve files, Plan) → build aside
//	            → commit (one atomic swap) → retune kept components → retire
//	            replaced transports
//	         └─ report (Status, log, event, OnReload)
//
// Reloads and Applies run one at a time (r.reloading); a Reload asked for
// while one runs joins the one that starts after it (r.reloads), which
// reads fresh inputs, so older inputs never serve after newer ones. Any
// error before the commit leaves everything serving exactly as it was.

// Apply validates cfg and, if it is valid, moves every client to it at once
// as a new generation; a request in flight finishes on the pipeline it
// started on. It executes Registry.Plan(cfg): clients whose effective config
// and secret and TLS files' contents did not change keep their pipeline;
// changed ones keep their components as the plan says. On any error (an
// unreadable or invalid secret or TLS file, a hook that panics while its
// client is built) nothing changes: no component is retuned, no transport
// closed; the error (redacted) is logged, reported to OnReload, kept in
// Status().LastError and returned. After Close it returns ErrClosed. It is
// safe for concurrent use; Applies and reloads run one at a time.
func (r *Registry) Apply(cfg config.Config) error {
	r.reloading.Lock()
	defer r.reloading.Unlock()
	plans, err := r.transact(cfg)
	if err == nil {
		r.mu.Lock()
		r.lastHash = cfg.InputHash
		r.mu.Unlock()
	}
	return r.report(plans, err)
}

// Reload re-reads every layer now and applies the result as Apply does. A
// load whose inputs hash the same as the last applied ones (config file,
// Sources, env, flags, and the contents of every secret and TLS file the
// config names) changes nothing and returns nil. A Source whose Read fails
// keeps serving its last good snapshot (one WARN; Status().Sources marks it
// stale), so the other layers' changes still apply; one whose Read says
// its content is bad (config.ErrSourceContent) rejects the reload. A
// Reload asked for while another runs waits for it and then shares the
// next one, which reads the inputs as they are then; it returns that
// reload's result.
// After Close it returns ErrClosed; on a registry made by New, which has no
// layers, ErrNoSource.
func (r *Registry) Reload() error {
	if r.isClosed() {
		return ErrClosed
	}
	if r.loader == nil {
		return ErrNoSource
	}
	return r.reloads.do()
}

// reload is one Reload, run by r.reloads one at a time. The loader's,
// the builds' and OnReload's panics are recovered where they happen; any
// other (a panicking Observer or log handler, a bug) is recovered here and
// recorded as the reload's error, so that watching goes on.
func (r *Registry) reload() (err error) {
	r.reloading.Lock()
	defer r.reloading.Unlock()
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("reload panicked: %v", v)
			r.mu.Lock()
			r.lastErr = err
			gen := r.gen.Load().num
			r.mu.Unlock()
			r.log.Error("config rejected; the last good config keeps serving",
				"event", middleware.EventConfigRejected, "file", r.opts.File, "generation", gen, "error", err.Error())
			r.callOnReload(ReloadEvent{Generation: gen, Err: err})
		}
	}()
	if r.isClosed() {
		return ErrClosed
	}
	cfg, err := r.load()
	if err == nil {
		r.mu.Lock()
		// InputHash covers the contents of the secret and TLS files too, so
		// a rotated token or certificate is never skipped as unchanged.
		same := cfg.InputHash != "" && cfg.InputHash == r.lastHash
		if same {
			r.lastErr = nil // the inputs are back to the serving ones
		}
		r.mu.Unlock()
		if same {
			r.sources.commit()
			r.log.Debug("config unchanged; reload skipped", "file", r.opts.File)
			return nil
		}
	}
	var plans []ClientPlan
	if err == nil {
		plans, err = r.transact(cfg)
	}
	if err == nil {
		r.sources.commit()
		r.mu.Lock()
		r.lastHash = cfg.InputHash
		w := r.watcher
		r.mu.Unlock()
		if w != nil {
			if werr := w.SetFiles(cfg.Files); werr != nil {
				r.log.Error("watching config files failed", "error", werr)
			}
		}
	}
	return r.report(plans, err)
}

// load reads every layer, under the registry's context (which Close ends
// for Sources that take one), turning a panic into an error.
func (r *Registry) load() (cfg config.Config, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("loading config panicked: %v", v)
		}
	}()
	return r.loader.LoadContext(r.ctx)
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
}

// transact validates cfg, plans, builds what the plan creates aside,
// commits the new generation with one swap, then retunes and retires. It
// returns the plans, sorted by name. r.reloading held.
func (r *Registry) transact(cfg config.Config) ([]ClientPlan, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	old, g, plans, retunes, err := r.commit(cfg)
	if err != nil {
		return nil, err
	}
	// The kept components take their new settings once the new generation
	// serves, outside r.mu: a breaker's retune may call OnStateChange,
	// which may ask for Status.
	for _, f := range retunes {
		f()
	}
	r.retire(old, g)
	for _, p := range g.pipes {
		r.warnInsecure(p)
	}
	return sortedPlans(plans), nil
}

// commit plans cfg against the serving generation, builds aside what the
// plan creates and, when all of it built, swaps the generation: the one
// moment a reload changes what serves. It returns the generation it
// replaced, the new one, the plans and the retunes still to run. On error
// nothing serving was touched and what was built is discarded.
func (r *Registry) commit(cfg config.Config) (old, g *generation, plans []ClientPlan, retunes []func(), err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, nil, nil, nil, ErrClosed
	}
	t, err := r.prepare(cfg)
	if err != nil {
		return nil, nil, nil, nil, err
	}

	g = &generation{num: t.old.num + 1, cfg: cfg, pipes: make([]*pipeline, len(t.names))}
	for i, name := range t.names {
		var prev *pipeline
		if i < len(t.old.pipes) {
			prev = t.old.pipes[i]
		}
		if t.plans[i].Action == ActionUnchanged {
			g.pipes[i] = prev
			continue
		}
		p, rts, err := r.build(name, t.inputs[i], t.mats[i], t.plans[i], prev, g.num)
		if err != nil {
			discard(t.old, g.pipes[:i])
			return nil, nil, nil, nil, err
		}
		g.pipes[i], retunes = p, append(retunes, rts...)
	}

	clients := make(map[string]*http.Client, len(t.names)-len(r.names))
	for i := len(r.names); i < len(t.names); i++ {
		clients[t.names[i]] = r.newClient(i)
	}
	r.names = t.names
	r.gen.Store(g)
	r.publish(clients)
	r.lastReload = time.Now()
	r.warnHooks(cfg)
	return t.old, g, t.plans, retunes, nil
}

// prepare resolves the files every client of cfg names and plans each
// client against what serves it. One unreadable or invalid file rejects
// the whole reload, and every such problem is reported at once. r.mu held.
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
	t.plans = make([]ClientPlan, len(t.names))
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
		t.mats[i] = m
		t.inputs[i] = clientInput{cfg: want, defined: defined, credDigest: m.credDigest, tlsDigest: m.tlsDigest}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for i, name := range t.names {
		var was *serving
		if i < len(t.old.pipes) {
			was = t.old.pipes[i].serving()
		}
		t.plans[i] = planClient(name, was, t.inputs[i], r.opts.Base != nil)
	}
	return t, nil
}

// sortedPlans returns plans sorted by client name.
func sortedPlans(plans []ClientPlan) []ClientPlan {
	out := slices.Clone(plans)
	slices.SortFunc(out, func(a, b ClientPlan) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// discard drops the pipelines a failed transaction built: it closes the
// idle connections of the base transports they made (which no request has
// used, as nothing built was ever published) and leaves old's alone.
func discard(old *generation, built []*pipeline) {
	serving := make(map[*base]bool, len(old.pipes))
	for _, p := range old.pipes {
		serving[p.base] = true
	}
	for _, p := range built {
		if p != nil && p.base != nil && !serving[p.base] {
			p.base.closeIdle()
		}
	}
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

// warnInsecure logs the WARN that an insecure_skip_verify asks for on
// every load of a client that has it on.
func (r *Registry) warnInsecure(p *pipeline) {
	if p.in.cfg.TLS.InsecureSkipVerify && r.opts.Base == nil {
		r.log.Warn("tls.insecure_skip_verify is on: the server's certificate is not verified",
			"client", p.name, "key", sectionOf(p.name, p.in.defined)+".tls.insecure_skip_verify")
	}
}

// warnHooks logs one WARN for each Options.ClientHooks name that cfg does
// not define and no Get asked for, as Get does for a name it does not
// know: a typo there would silently drop the hooks. r.mu held.
func (r *Registry) warnHooks(cfg config.Config) {
	for name := range r.opts.ClientHooks {
		if _, ok := cfg.Clients[name]; ok || r.warned["hooks:"+name] || slices.Contains(r.names, name) {
			continue
		}
		r.warned["hooks:"+name] = true
		r.log.Warn("Options.ClientHooks names a client the config does not define; its hooks apply once it is defined or asked for with Get",
			"client", name)
	}
}

// report records the outcome of a reload attempt, logs it, emits its event
// and calls OnReload. It returns err, redacted.
func (r *Registry) report(plans []ClientPlan, err error) error {
	err = redactText(err)
	r.mu.Lock()
	if !errors.Is(err, ErrClosed) {
		r.lastErr = err
	}
	gen := r.gen.Load().num
	r.mu.Unlock()

	var changed []string
	for _, p := range plans {
		if p.Action != ActionUnchanged {
			changed = append(changed, p.Name)
		}
	}
	ev := middleware.Event{Name: middleware.EventConfigReloaded}
	if err != nil {
		ev.Name, ev.Err = middleware.EventConfigRejected, err
		r.log.Error("config rejected; the last good config keeps serving",
			"event", ev.Name, "file", r.opts.File, "generation", gen, "error", err.Error())
	} else {
		r.log.Info("config reloaded",
			"event", ev.Name, "file", r.opts.File, "generation", gen, "changed", changed)
	}
	if r.opts.Observer != nil {
		r.observe(ev)
	}
	r.callOnReload(ReloadEvent{Generation: gen, Err: err, Changed: changed, Plan: plans})
	return err
}

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
