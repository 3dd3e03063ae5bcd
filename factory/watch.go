package factory

import (
	"github.com/switchboard-http/switchboard/reload"
)

// startWatching starts the file watcher and the goroutine that reloads when
// it says a reload is due. The watcher's callback only signals, so a slow
// reload never blocks the watcher and SetFiles is never called from inside
// the watcher's own callback.
func (r *Registry) startWatching(files []string) error {
	r.due = make(chan struct{}, 1)
	r.stop = make(chan struct{})
	r.stopped = make(chan struct{})
	w, err := reload.Watch(files, reload.Options{Debounce: r.opts.Debounce, Logger: r.log}, func() {
		select {
		case r.due <- struct{}{}:
		default: // one is pending already
		}
	})
	if err != nil {
		close(r.stopped)
		return err
	}
	r.mu.Lock()
	r.watcher = w
	r.mu.Unlock()
	go r.reloader()
	return nil
}

// reloader runs a reload each time one is due, until Close.
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
