package reload

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"
)

// ErrClosed is returned by [Watcher.SetFiles] after [Watcher.Close].
var ErrClosed = errors.New("reload: watcher closed")

// Watcher watches a set of files and calls a callback when a reload is due. Create one
// with [Watch]; the zero value is not usable. See the package documentation for what
// counts as a change.
//
// A Watcher runs two goroutines: one reads fsnotify, one debounces and calls the
// callback. Its methods are safe for concurrent use, also from within the callback,
// except Close, which waits for the callback and so must not be called from it.
type Watcher struct {
	fn          func()
	log         *slog.Logger
	newNotifier newNotifierFunc
	checked     func(changed bool) // test hook: after every check, after fn; may be nil

	mu    sync.Mutex
	n     notifier             // nil while restarting or after Close
	files map[string]fileState // absolute path → state last reported
	dirs  map[string]*dirWatch
	force bool // the next check reports a reload even if nothing changed
	shut  bool // Close was called

	due  chan struct{} // cap 1: a relevant event happened (to the debouncer)
	kick chan struct{} // cap 1: a required directory is missing (to the loop)
	stop chan struct{} // closed by Close
	done chan struct{} // closed when the loop returns
	deb  *debouncer

	closeOnce sync.Once
	closeErr  error
}

// Watch starts watching files and calls fn, on the Watcher's goroutine and never
// concurrently with itself, each time a reload is due: a watched file's content
// changed, it appeared or disappeared, or the target of its symlink changed, and
// o.Debounce has passed without a further event. A panic in fn is recovered and
// logged at ERROR (event "watch.error"), and watching goes on.
//
// It watches the parent directory of each file, never the file itself, and takes the
// files' current state as the baseline, without calling fn: read the files after Watch
// returns to not miss a change made in between. A file or directory that does not exist
// yet is not an error; fn is called when it appears. An empty file name, a path that
// cannot be made absolute, a nil fn, or a failure to start fsnotify is an error, and
// nothing keeps running. Watch is safe for concurrent use; each Watcher is independent.
func Watch(files []string, o Options, fn func()) (*Watcher, error) {
	return watch(files, o, fn, newFSNotifier, nil)
}

// watch is Watch with the test seams: the notifier constructor and the check hook.
func watch(files []string, o Options, fn func(), newN newNotifierFunc, checked func(bool)) (*Watcher, error) {
	if fn == nil {
		return nil, errors.New("reload: nil callback")
	}
	paths, err := absPaths(files)
	if err != nil {
		return nil, err
	}
	o = o.withDefaults()
	n, err := newN()
	if err != nil {
		return nil, fmt.Errorf("reload: start watcher: %w", err)
	}
	w := &Watcher{
		fn:          fn,
		log:         o.Logger,
		newNotifier: newN,
		checked:     checked,
		n:           n,
		files:       make(map[string]fileState),
		dirs:        make(map[string]*dirWatch),
		due:         make(chan struct{}, 1),
		kick:        make(chan struct{}, 1),
		stop:        make(chan struct{}),
		done:        make(chan struct{}),
	}
	for _, p := range paths {
		w.files[p] = observe(p)
	}
	w.mu.Lock()
	pending, _ := w.reconcileLocked()
	w.mu.Unlock()
	if pending {
		w.kick <- struct{}{}
	}
	w.deb = startDebouncer(w.due, o.Debounce, o.MaxDebounce, w.check)
	go w.loop(n)
	return w, nil
}

// SetFiles replaces the set of watched files, for example when a new configuration
// names other secret or TLS files. Directories no longer needed stop being watched and
// new ones are added before it returns. Files already watched keep their state; new
// ones take their current state as the baseline, without a call of fn. The errors are
// those of [Watch] for bad names (and the set is then left unchanged) and [ErrClosed].
func (w *Watcher) SetFiles(files []string) error {
	paths, err := absPaths(files)
	if err != nil {
		return err
	}
	fresh := make(map[string]fileState, len(paths))
	w.mu.Lock()
	for _, p := range paths {
		if st, ok := w.files[p]; ok {
			fresh[p] = st
		}
	}
	w.mu.Unlock()
	for _, p := range paths {
		if _, ok := fresh[p]; !ok {
			fresh[p] = observe(p) // outside the lock: this reads files
		}
	}

	w.mu.Lock()
	if w.shut {
		w.mu.Unlock()
		return ErrClosed
	}
	w.files = fresh
	pending, _ := w.reconcileLocked()
	w.mu.Unlock()
	if pending {
		signal(w.kick)
	}
	return nil
}

// Close stops watching and every goroutine the Watcher started, waiting for a callback
// in progress. After it returns fn is never called again. It is idempotent and safe for
// concurrent use (every call returns after the Watcher has stopped), but must not be
// called from fn. It returns the error of closing fsnotify, if any.
func (w *Watcher) Close() error {
	w.closeOnce.Do(func() {
		w.mu.Lock()
		w.shut = true
		w.mu.Unlock()
		close(w.stop)
		<-w.done
		w.deb.close()
		w.mu.Lock()
		n := w.n
		w.n = nil
		w.mu.Unlock()
		if n != nil {
			if err := n.Close(); err != nil {
				w.closeErr = fmt.Errorf("reload: close watcher: %w", err)
			}
		}
	})
	return w.closeErr
}

// check is the debouncer's callback: fingerprint every file and call fn if one changed
// since it was last reported (or a restart forced a report).
func (w *Watcher) check() {
	w.mu.Lock()
	paths := make([]string, 0, len(w.files))
	for p := range w.files {
		paths = append(paths, p)
	}
	changed := w.force
	w.force = false
	w.mu.Unlock()

	now := make([]fileState, len(paths))
	for i, p := range paths {
		now[i] = observe(p) // outside the lock: this reads files
	}

	w.mu.Lock()
	retarget := false
	for i, p := range paths {
		old, ok := w.files[p]
		if !ok || old == now[i] {
			continue // removed by SetFiles meanwhile, or unchanged
		}
		changed = changed || old.fp != now[i].fp
		retarget = retarget || old.fp.target != now[i].fp.target || old.realDir != now[i].realDir
		w.files[p] = now[i]
	}
	pending := false
	if retarget {
		pending, _ = w.reconcileLocked()
	}
	w.mu.Unlock()
	if pending {
		signal(w.kick)
	}

	if changed {
		w.call()
	}
	if w.checked != nil {
		w.checked(changed)
	}
}

// call runs the callback, recovering its panic: a panicking callback is
// logged at ERROR (event "watch.error") and watching goes on.
func (w *Watcher) call() {
	defer func() {
		if v := recover(); v != nil {
			w.log.Error("reload: callback panicked", "event", "watch.error", "panic", fmt.Sprint(v))
		}
	}()
	w.fn()
}

// loop reads the notifier, keeps directories watched and restarts the notifier when it
// fails. It owns the two retry timers; n is the notifier it starts with.
func (w *Watcher) loop(n notifier) {
	defer close(w.done)
	events, errs := n.Events(), n.Errors()
	started := time.Now()

	dirRetry := backoff{min: dirRetryMin, max: dirRetryMax}
	dirTimer := time.NewTimer(time.Hour)
	dirTimer.Stop()
	defer dirTimer.Stop()
	var dirDue <-chan time.Time // nil when no poll for missing directories is scheduled
	pollDirs := func() {
		if dirDue == nil {
			dirTimer.Reset(dirRetry.next())
			dirDue = dirTimer.C
		}
	}

	restart := backoff{min: restartRetryMin, max: restartRetryMax}
	restartTimer := time.NewTimer(time.Hour)
	restartTimer.Stop()
	defer restartTimer.Stop()
	var restartDue <-chan time.Time // nil unless the notifier failed and is to be restarted

	fail := func(err error) {
		w.log.Error("reload: file watcher failed, restarting it",
			"event", "watch.error", "err", err)
		w.mu.Lock()
		old := w.n
		w.n = nil
		for _, d := range w.dirs {
			d.watched = false
		}
		w.mu.Unlock()
		if old != nil {
			_ = old.Close() // it failed already; a second error adds nothing
		}
		events, errs = nil, nil
		dirTimer.Stop()
		dirDue = nil
		if time.Since(started) >= restartRetryMax {
			restart.reset() // it had been healthy for a while: start again from the minimum
		}
		restartTimer.Reset(restart.next())
		restartDue = restartTimer.C
	}

	for {
		select {
		case <-w.stop:
			return

		case ev, ok := <-events:
			if !ok {
				fail(errors.New("fsnotify events channel closed"))
				continue
			}
			w.mu.Lock()
			relevant, pending := w.eventLocked(ev)
			w.mu.Unlock()
			if relevant {
				signal(w.due)
			}
			if pending {
				pollDirs()
			}

		case err, ok := <-errs:
			if !ok {
				err = errors.New("fsnotify errors channel closed")
			}
			fail(err)

		case <-w.kick:
			if restartDue == nil {
				pollDirs()
			}

		case <-dirDue:
			dirDue = nil
			w.mu.Lock()
			pending, restored := w.reconcileLocked()
			w.mu.Unlock()
			if restored {
				signal(w.due)
			}
			if pending {
				pollDirs()
			} else {
				dirRetry.reset()
			}

		case <-restartDue:
			restartDue = nil
			n, err := w.newNotifier()
			if err != nil {
				w.log.Error("reload: cannot restart file watcher, retrying",
					"event", "watch.error", "err", err)
				restartTimer.Reset(restart.next())
				restartDue = restartTimer.C
				continue
			}
			w.mu.Lock()
			w.n = n
			w.force = true // changes may have been missed while it was down
			pending, _ := w.reconcileLocked()
			w.mu.Unlock()
			events, errs = n.Events(), n.Errors()
			started = time.Now()
			w.log.Info("reload: file watcher restarted", "event", "watch.restarted")
			signal(w.due)
			dirRetry.reset()
			if pending {
				pollDirs()
			}
		}
	}
}

// signal sends on a channel of capacity 1 without blocking: a value already waiting
// says the same thing.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// absPaths cleans and deduplicates files, making them absolute.
func absPaths(files []string) ([]string, error) {
	out := make([]string, 0, len(files))
	seen := make(map[string]bool, len(files))
	for _, f := range files {
		if f == "" {
			return nil, errors.New("reload: empty file name")
		}
		p, err := filepath.Abs(f)
		if err != nil {
			return nil, fmt.Errorf("reload: file %q: %w", f, err)
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}
