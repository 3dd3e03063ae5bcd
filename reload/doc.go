// Package reload tells its caller when a set of files should be read again.
//
// It watches the parent directory of each file, never the file itself, because the
// tools that change configuration replace files rather than write into them: vim and
// VS Code write a temporary file and rename it over the original, some tools delete and
// recreate, and Kubernetes updates a mounted ConfigMap by creating a new timestamped
// directory and atomically renaming a `..data_tmp` symlink over `..data`. A watch on the
// file's inode would lose track after the first of these.
//
// Every event that names a watched file (or a ConfigMap's `..data` link) starts a quiet
// period of [Options.Debounce]; each further event restarts it, up to [Options.MaxDebounce]
// after the first event of the burst. When it ends, the watcher
// fingerprints every watched file — the path its symlinks resolve to plus the SHA-256 of
// its content, or "missing" — and calls the callback only if some fingerprint differs
// from the one last reported:
//
//	fsnotify ─▶ filter by name ─▶ debounce ─▶ fingerprint ─▶ changed? ─▶ fn()
//
// So a burst of writes is one reload (or two, if it pauses longer than Debounce), a
// touch, a chmod or a rewrite with identical bytes is none, and a ConfigMap update is
// exactly one. A file rewritten without ever pausing for Debounce is still reloaded once
// per MaxDebounce (1 s by default), with whatever it holds then. The callback receives nothing but "a
// reload is due"; what to read, and what to do when reading fails, is the caller's
// business.
//
// A watched file that is a symlink into another directory (a TLS certificate linked from
// a secrets mount, say) also has its target's directory watched, so an in-place write to
// the target is seen; that directory follows the link when it is repointed.
//
// Missing files and directories are not errors: a deleted file makes a reload due (the
// caller sees the error and keeps its last good configuration) and another one when it
// comes back; a directory that disappears is polled for with a growing interval (100ms
// up to 1s) until it reappears. Failures of fsnotify itself are logged at ERROR with
// event "watch.error" and the underlying watcher is restarted with exponential backoff
// (100ms doubling up to 5s), after which a reload is reported unconditionally, since
// changes may have been missed in between.
//
// The package imports only the standard library and fsnotify.
package reload
