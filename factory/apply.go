package factory

import (
	"context"
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
// started on. Clients whose effective config did not change keep their
// pipeline; changed ones keep their base transport unless its transport or
// tls block changed. On any error nothing changes, the error is logged,
// reported to OnReload and kept in Status().LastError.
func (r *Registry) Apply(cfg config.Config) error {
	changed, err := r.apply(cfg)
	if err == nil {
		r.mu.Lock()
		r.lastHash = cfg.InputHash
		r.mu.Unlock()
	}
	r.report(changed, err)
	return err
}

// Reload re-reads every layer now and applies the result as Apply does. A
// load whose inputs hash the same as the last applied ones changes nothing
// and returns nil. A registry made by New has no layers: ErrNoSource.
func (r *Registry) Reload() error {
	if r.loader == nil {
		return ErrNoSource
	}
	cfg, err := r.load()
	if err == nil {
		r.mu.Lock()
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
	r.report(changed, err)
	return err
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
	var added []string
	for name := range cfg.Clients {
		if !slices.Contains(r.names, name) {
			added = append(added, name)
		}
	}
	sort.Strings(added)
	names = append(names, added...)

	g.pipes = make([]*pipeline, len(names))
	for i, name := range names {
		want, defined := cfg.Clients[name]
		if !defined {
			want = cfg.Defaults
		}
		var prev *pipeline
		if i < len(old.pipes) {
			prev = old.pipes[i]
		}
		if prev != nil && prev.defined == defined && prev.hash == want.Hash() {
			g.pipes[i] = prev
			continue
		}
		p, err := r.build(name, want, defined, g.num, prev)
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
	sort.Strings(changed)
	return changed, nil
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
			p.base.retire()
		}
	}
}

// report records the outcome of a reload attempt, logs it, emits its event
// and calls OnReload.
func (r *Registry) report(changed []string, err error) {
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
		r.opts.Observer.OnEvent(context.Background(), ev)
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
}
