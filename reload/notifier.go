package reload

import "github.com/fsnotify/fsnotify"

// notifier is the part of *fsnotify.Watcher the watcher uses. It exists so tests can
// inject failures (an error, a closed channel, a constructor that fails) into the
// restart path without breaking the operating system's inotify.
type notifier interface {
	Add(dir string) error
	Remove(dir string) error
	Events() <-chan fsnotify.Event
	Errors() <-chan error
	Close() error
}

// newNotifierFunc creates a notifier; a Watcher calls it at start and on every restart.
type newNotifierFunc func() (notifier, error)

// fsNotifier adapts *fsnotify.Watcher, whose channels are fields, to notifier.
type fsNotifier struct{ w *fsnotify.Watcher }

// newFSNotifier is the production newNotifierFunc.
func newFSNotifier() (notifier, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	return fsNotifier{w}, nil
}

func (f fsNotifier) Add(dir string) error          { return f.w.Add(dir) }
func (f fsNotifier) Remove(dir string) error       { return f.w.Remove(dir) }
func (f fsNotifier) Events() <-chan fsnotify.Event { return f.w.Events }
func (f fsNotifier) Errors() <-chan error          { return f.w.Errors }
func (f fsNotifier) Close() error                  { return f.w.Close() }
