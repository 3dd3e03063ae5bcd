package factory

import (
	"context"
	"fmt"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/middleware"
	"github.com/switchboard-http/switchboard/reload"
)

// startWatching starts the file watcher (when there is a file), the
// goroutine that reloads when a reload is due, and the watches of the
// Sources that have one. The callbacks only signal, so a slow reload never
// blocks a watcher and SetFiles is never called from inside the watcher's
// own callback. On error the caller closes the registry, which stops
// whatever had started.
func (r *Registry) startWatching(files []string) error {
	due := make(chan struct{}, 1)
	srcDue := make(chan struct{}, 1)
	var w *reload.Watcher
	if r.opts.File != "" {
		var err error
		w, err = reload.Watch(files, reload.Options{Debounce: r.opts.Debounce, Logger: r.log}, func() { signal(due) })
		if err != nil {
			return err
		}
	}
	r.mu.Lock()
	r.watcher, r.due, r.srcDue = w, due, srcDue
	r.stop, r.stopped = make(chan struct{}), make(chan struct{})
	r.mu.Unlock()
	go r.reloader()
	return r.watchSources()
}

// hasWatchable reports whether one of srcs implements config.Watchable.
func hasWatchable(srcs []config.Source) bool {
	for _, s := range srcs {
		if _, ok := s.(config.Watchable); ok {
			return true
		}
	}
	return false
}

// watchSources starts the watch of every Watchable Source; their
// notifications go to the reloader, which debounces them.
func (r *Registry) watchSources() error {
	for _, s := range r.opts.Sources {
		ws, ok := s.(config.Watchable)
		if !ok {
			continue
		}
		stop, err := ws.Watch(func() { signal(r.srcDue) })
		if err != nil {
			return fmt.Errorf("watch config source %s: %w", s.Name(), err)
		}
		if stop == nil {
			continue
		}
		r.mu.Lock()
		r.srcStops = append(r.srcStops, stop)
		r.mu.Unlock()
	}
	return nil
}

// signal sends on a channel of capacity 1 without blocking: a value
// already waiting says the same thing.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// reloader runs a reload each time one is due, until Close: at once for
// the file watcher, which debounced already, and Options.Debounce after the
// last notification of a Source.
func (r *Registry) reloader() {
	defer close(r.stopped)
	debounce := r.opts.Debounce
	if debounce <= 0 {
		debounce = reload.DefaultDebounce
	}
	timer := time.NewTimer(debounce)
	timer.Stop()
	defer timer.Stop()
	var fire <-chan time.Time // nil unless a Source's reload is pending
	for {
		select {
		case <-r.stop:
			return
		case <-r.due:
			r.reloadRecovered()
		case <-r.srcDue:
			timer.Reset(debounce)
			fire = timer.C
		case <-fire:
			fire = nil
			r.reloadRecovered()
		}
	}
}

// reloadRecovered runs Reload for the watchers. Reload recovers the panics
// of the loader, of building and of OnReload itself; this catches any
// other one (a panicking Observer or log handler, a bug), records it as the
// reload's error and keeps the reloader, and so watching, alive.
func (r *Registry) reloadRecovered() {
	defer func() {
		if v := recover(); v != nil {
			err := fmt.Errorf("reload panicked: %v", v)
			r.mu.Lock()
			r.lastReload, r.lastErr = time.Now(), err
			r.mu.Unlock()
			gen := r.gen.Load().num
			r.log.Error("config rejected; the last good config keeps serving",
				"event", "config.rejected", "file", r.opts.File, "generation", gen, "error", err.Error())
			r.callOnReload(ReloadEvent{Generation: gen, Err: err})
		}
	}()
	_ = r.Reload() // reported by Reload itself
}

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
