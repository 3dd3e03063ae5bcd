package factory

import (
	"context"
	"fmt"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/middleware"
	"github.com/switchboard-http/switchboard/reload"
)

// startWatching starts the file watcher (when there is a file), the
// debouncer of the Sources' notifications, the goroutine that reloads when
// a reload is due, and the watches of the Sources that have one. The
// callbacks only signal, so a slow reload never blocks a watcher and
// SetFiles is never called from inside the watcher's own callback. On
// error the caller closes the registry, which stops whatever had started.
func (r *Registry) startWatching(files []string) error {
	due := make(chan struct{}, 1)
	var w *reload.Watcher
	if r.opts.File != "" {
		var err error
		o := reload.Options{Debounce: r.opts.Debounce, MaxDebounce: r.opts.MaxDebounce, Logger: r.log}
		w, err = reload.Watch(files, o, func() { signal(due) })
		if err != nil {
			return err
		}
	}
	deb := reload.NewDebouncer(r.opts.Debounce, r.opts.MaxDebounce, func() { signal(due) })
	r.mu.Lock()
	r.watcher, r.due, r.srcDebounce = w, due, deb
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
		stop, err := ws.Watch(r.srcDebounce.Trigger)
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

// reloader runs a reload each time one is due, until Close. Reload
// recovers every panic of a reload, so watching goes on whatever a reload
// does.
func (r *Registry) reloader() {
	defer close(r.stopped)
	for {
		select {
		case <-r.stop:
			return
		case <-r.due:
			_ = r.Reload() // reported by Reload itself
		}
	}
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
