package reload

import (
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/fsnotify/fsnotify"
)

// configMapLink is the symlink Kubernetes swaps atomically to update a mounted
// ConfigMap or Secret; the visible files are symlinks through it.
const configMapLink = "..data"

// dirWatch is one directory the watcher watches (or wants to).
type dirWatch struct {
	// required marks the parent directory of a watched file: while it cannot be
	// watched (it vanished), the watcher polls for it. The other directories are those
	// symlink targets live in; they are watched on a best-effort basis and recomputed
	// after every check.
	required bool
	names    map[string]bool // base names whose events make a check due
	watched  bool            // the notifier holds a live watch on it
	lost     bool            // it vanished or could not be added: the next Add makes a check due
	reported bool            // the current failure to add it was logged
}

// fileState is what the watcher knows of one watched file.
type fileState struct {
	fp      fingerprint // as last reported to the callback (or the baseline)
	realDir string      // the file's parent directory with symlinks resolved; "" if unknown
}

// observe reads the state of the file at path now.
func observe(path string) fileState {
	st := fileState{fp: fingerprintOf(path)}
	if d, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
		st.realDir = d
	}
	return st
}

// wantedLocked returns the directories the current files need. w.mu must be held.
func (w *Watcher) wantedLocked() map[string]*dirWatch {
	want := make(map[string]*dirWatch)
	add := func(dir, name string, required bool) {
		d := want[dir]
		if d == nil {
			d = &dirWatch{names: make(map[string]bool)}
			want[dir] = d
		}
		d.required = d.required || required
		d.names[name] = true
	}
	for path, st := range w.files {
		dir := filepath.Dir(path)
		add(dir, filepath.Base(path), true)
		add(dir, configMapLink, true)
		if st.fp.target == "" {
			continue
		}
		tdir, tname := filepath.Split(st.fp.target)
		tdir = filepath.Clean(tdir)
		if tdir == dir || tdir == st.realDir {
			// Same directory (perhaps reached through a symlinked parent): watching
			// it twice would give one inotify watch two names.
			add(dir, tname, true)
			continue
		}
		add(tdir, tname, false)
	}
	return want
}

// reconcileLocked makes the set of watched directories match the current files: it
// removes watches no longer needed and adds missing ones. pending reports that some
// required directory still cannot be watched (poll again later); restored, that one
// that had been lost is watched again (a check is due). With no notifier (during a
// restart) it only updates the bookkeeping. w.mu must be held.
func (w *Watcher) reconcileLocked() (pending, restored bool) {
	want := w.wantedLocked()
	for dir, d := range w.dirs {
		if _, ok := want[dir]; ok {
			continue
		}
		if d.watched && w.n != nil {
			_ = w.n.Remove(dir) // it may already be gone; nothing to do either way
		}
		delete(w.dirs, dir)
	}
	for dir, wd := range want {
		d := w.dirs[dir]
		if d == nil {
			d = wd
			w.dirs[dir] = d
		} else {
			d.required, d.names = wd.required, wd.names
		}
		if d.watched || w.n == nil {
			continue
		}
		err := w.n.Add(dir)
		if err == nil {
			d.watched = true
			if d.lost {
				restored = true
				if d.reported {
					w.log.Info("reload: watching directory again", "event", "watch.dir_restored", "dir", dir)
				}
			}
			d.lost, d.reported = false, false
			continue
		}
		d.lost = true
		if !d.required {
			continue // a symlink target's directory: the next check looks again
		}
		pending = true
		if d.reported {
			continue
		}
		d.reported = true
		if errors.Is(err, fs.ErrNotExist) {
			w.log.Warn("reload: directory missing, polling until it appears",
				"event", "watch.dir_missing", "dir", dir)
		} else {
			w.log.Error("reload: cannot watch directory, retrying",
				"event", "watch.error", "dir", dir, "err", err)
		}
	}
	return pending, restored
}

// eventLocked classifies one fsnotify event. relevant means a check is due; pending,
// that a required directory vanished and could not be watched again yet. w.mu must be
// held.
func (w *Watcher) eventLocked(ev fsnotify.Event) (relevant, pending bool) {
	if d, ok := w.dirs[ev.Name]; ok && ev.Has(fsnotify.Remove|fsnotify.Rename) {
		// A watched directory itself was removed, or renamed so that its path now
		// names something else (or nothing). Drop the stale watch, which after a
		// rename would follow the old directory, and watch the path again.
		if d.watched && w.n != nil {
			_ = w.n.Remove(ev.Name)
		}
		d.watched, d.lost = false, true
		pending, _ = w.reconcileLocked()
		return true, pending
	}
	d := w.dirs[filepath.Dir(ev.Name)]
	return d != nil && d.names[filepath.Base(ev.Name)], false
}
