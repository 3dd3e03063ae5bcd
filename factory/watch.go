package factory

import (
	"fmt"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/reload"
)

// startWatching starts, before the first load reads anything, the watcher
// of the config file and the debouncer of the Sources' notifications, so
// that an edit made while Open reads its inputs is seen. Their callbacks
// only signal r.due, so a slow reload never blocks a watcher and SetFiles
// is never called from inside the watcher's own callback; the reloader,
// which acts on r.due, starts with startReloader once the first generation
// serves. The Sources' own watches start after the first load
// (watchSources): a Watchable may resume from what its Read saw (an etcd
// revision), which a watch started before the read cannot. On error the
// caller closes the registry, which stops whatever had started.
func (r *Registry) startWatching() error {
	due := make(chan struct{}, 1)
	deb := reload.NewDebouncer(r.opts.Debounce, r.opts.MaxDebounce, func() { signal(due) })
	r.mu.Lock()
	r.due, r.srcDebounce = due, deb
	r.mu.Unlock()
	return r.watchFiles(nil)
}

// startReloader starts the goroutine that reloads when a reload is due,
// if anything watches.
func (r *Registry) startReloader() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.due == nil {
		return
	}
	r.stop, r.stopped = make(chan struct{}), make(chan struct{})
	go r.reloader()
}

// watchFiles makes the watcher watch the config file, the files the
// serving config names and named: the files of a config about to be read
// further (validated, resolved, built), or of one just rejected, a file it
// names that does not exist yet included, so that the file's creation
// triggers the reload that then succeeds. A file already watched keeps the
// state it last reported; a new one takes its state now. Call it before the
// read that uses the files: every change after that read is then seen and
// triggers another reload. It creates the watcher on first need (a config
// from env, flags or Sources alone may name files too) and does nothing
// when nothing watches (NoWatch, or a registry made by New). The serving
// config's files are those it names (Config.ReferencedFiles), whether it
// was loaded or applied. r.reloading held,
// or Open's goroutine before it returns.
func (r *Registry) watchFiles(named []string) error {
	r.mu.Lock()
	due, w, closed := r.due, r.watcher, r.closed
	serving := r.gen.Load().cfg.ReferencedFiles()
	r.mu.Unlock()
	if due == nil || closed {
		return nil
	}
	files := make([]string, 0, 1+len(serving)+len(named))
	seen := make(map[string]bool, cap(files))
	for _, list := range [][]string{{r.opts.File}, serving, named} {
		for _, f := range list {
			if f != "" && !seen[f] {
				seen[f] = true
				files = append(files, f)
			}
		}
	}
	if w != nil {
		return w.SetFiles(files)
	}
	if len(files) == 0 {
		return nil
	}
	o := reload.Options{Debounce: r.opts.Debounce, MaxDebounce: r.opts.MaxDebounce, Logger: r.log}
	w, err := reload.Watch(files, o, func() { signal(due) })
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.watcher = w
	r.mu.Unlock()
	return nil
}

// rewatch is watchFiles for a reload, which logs its error: watching goes
// on with the files it watched before.
func (r *Registry) rewatch(named []string) {
	if err := r.watchFiles(named); err != nil {
		r.log.Error("watching config files failed", "error", err)
	}
}

// watchSources starts the watch of every Watchable Source, if anything
// watches; their notifications go to the reloader, which debounces them.
func (r *Registry) watchSources() error {
	if r.srcDebounce == nil {
		return nil
	}
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
