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

// Apply validates cfg and, if it is valid, moves every client to it at once
// as a new generation; a request in flight finishes on the pipeline it
// started on. Clients whose effective config and secret and TLS files'
// contents did not change keep their pipeline; changed ones keep their base
// transport unless its transport or tls block or the TLS files' contents
// changed. On any error (an unreadable or invalid secret or TLS file
// included) nothing changes, the error (redacted) is logged, reported to
// OnReload and kept in Status().LastError, and returned.
func (r *Registry) Apply(cfg config.Config) error {
	changed, err := r.apply(cfg)
	if err == nil {
		r.mu.Lock()
		r.lastHash = cfg.InputHash
		r.mu.Unlock()
	}
	return r.report(changed, err)
}

// Reload re-reads every layer now and applies the result as Apply does. A
// load whose inputs hash the same as the last applied ones (config file,
// env, flags, and the contents of every secret and TLS file the config
// names) changes nothing and returns nil. A registry made by New has no layers: ErrNoSource.
func (r *Registry) Reload() error {
	if r.loader == nil {
		return ErrNoSource
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
			r.log.Debug("config unchanged; reload skipped", "file", r.opts.File)
			return nil
		}
	}
	var changed []string
	if err == nil {
		changed, err = r.apply(cfg)
	}
	if err == nil {
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
	return r.report(changed, err)
}

// load runs the loader, turning a panic into an error.
func (r *Registry) load() (cfg config.Config, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("loading config panicked: %v", v)
		}
	}()
	return r.loader.Load()
}

// apply validates cfg, builds what changed and swaps the generation. It
// returns the clients whose pipeline was rebuilt.
func (r *Registry) apply(cfg config.Config) (changed []string, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	old := r.gen.Load()
	g := &generation{num: old.num + 1, cfg: cfg}

	names := slices.Clone(r.names)
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
	names = append(names, added...)

	// Resolve every client's secret and TLS files first: one unreadable or
	// invalid file rejects the whole reload, and every such problem is
	// reported at once.
	mats := make([]material, len(names))
	fc := fileCache{}
	var errs []error
	seen := map[string]bool{}
	for i, name := range names {
		want, defined := cfg.Client(name)
		m, err := resolve(sectionOf(name, defined), want, r.opts.Base == nil, fc)
		if err != nil && !seen[err.Error()] { // clients following defaults share its errors
			seen[err.Error()] = true
			errs = append(errs, err)
		}
		mats[i] = m
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	g.pipes = make([]*pipeline, len(names))
	for i, name := range names {
		want, defined := cfg.Client(name)
		var prev *pipeline
		if i < len(old.pipes) {
			prev = old.pipes[i]
		}
		// Identity: the effective config and the content of the files it
		// names. A rotated token or certificate rebuilds the client. A
		// pipeline that failed to build is never kept.
		if prev != nil && prev.built && prev.defined == defined && prev.material == mats[i].digest && prev.cfg.Equal(want) {
			g.pipes[i] = prev
			continue
		}
		p, err := r.build(name, want, mats[i], defined, g.num, prev)
		if err != nil {
			return nil, err
		}
		g.pipes[i] = p
		changed = append(changed, name)
	}

	clients := make(map[string]*http.Client, len(added))
	for i := len(r.names); i < len(names); i++ {
		clients[names[i]] = r.newClient(i)
	}
	r.names = names
	r.gen.Store(g)
	r.publish(clients)
	r.retire(old, g)
	for _, p := range g.pipes {
		r.warnInsecure(p)
	}
	sort.Strings(changed)
	return changed, nil
}

// warnInsecure logs the WARN that DESIGN.md asks for on every load of a
// client whose tls.insecure_skip_verify is on.
func (r *Registry) warnInsecure(p *pipeline) {
	if p.cfg.TLS.InsecureSkipVerify && r.opts.Base == nil {
		r.log.Warn("tls.insecure_skip_verify is on: the server's certificate is not verified",
			"client", p.name, "key", sectionOf(p.name, p.defined)+".tls.insecure_skip_verify")
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

// report records the outcome of a reload attempt, logs it, emits its event
// and calls OnReload. It returns err, redacted.
func (r *Registry) report(changed []string, err error) error {
	err = redactText(err)
	r.mu.Lock()
	if !errors.Is(err, ErrClosed) {
		r.lastReload = time.Now()
		r.lastErr = err
	}
	gen := r.gen.Load().num
	r.mu.Unlock()

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
	if r.opts.OnReload != nil {
		func() {
			defer func() {
				if v := recover(); v != nil {
					r.log.Error("OnReload panicked", "panic", fmt.Sprint(v))
				}
			}()
			r.opts.OnReload(ReloadEvent{Generation: gen, Err: err, Changed: changed})
		}()
	}
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
