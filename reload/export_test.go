package reload

import "sort"

// Test seams, compiled only into the tests.

// Notifier is notifier, for fakes in the external tests.
type Notifier = notifier

// NewFSNotifier is the production notifier constructor.
func NewFSNotifier() (Notifier, error) { return newFSNotifier() }

// WatchWith is Watch with an injected notifier constructor (nil = fsnotify) and a hook
// called after every check, after fn, with whether fn was called (nil = none).
func WatchWith(files []string, o Options, fn func(), newN func() (Notifier, error), checked func(changed bool)) (*Watcher, error) {
	if newN == nil {
		newN = newFSNotifier
	}
	return watch(files, o, fn, newN, checked)
}

// WatchedDirs returns the sorted directories with a live watch.
func (w *Watcher) WatchedDirs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for dir, d := range w.dirs {
		if d.watched {
			out = append(out, dir)
		}
	}
	sort.Strings(out)
	return out
}
