package reload_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/internal/atomicfile"
	"github.com/switchboard-http/switchboard/reload"
)

// These tests use the real filesystem and the real fsnotify, outside synctest. They
// wait for callbacks on channels with a deadline; none sleeps to decide a verdict.

func TestEditorSavesMakeReloadDue(t *testing.T) {
	tests := []struct {
		name string
		save func(t *testing.T, path, content string)
	}{
		{"write temp then rename over (vim, VS Code, Go atomic writers)", atomicfile.Write},
		{"truncate then write in several chunks", func(t *testing.T, path, content string) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for chunk := range slices.Chunk([]byte(content), 4) {
				if _, err := f.Write(chunk); err != nil {
					t.Fatal(err)
				}
				time.Sleep(5 * time.Millisecond) // an editor flushing as it goes
			}
		}},
		{"rename original to backup, write new, delete backup (vim backupcopy=no)", func(t *testing.T, path, content string) {
			if err := os.Rename(path, path+"~"); err != nil {
				t.Fatal(err)
			}
			write(t, path, content)
			if err := os.Remove(path + "~"); err != nil {
				t.Fatal(err)
			}
		}},
		{"delete then recreate", func(t *testing.T, path, content string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			write(t, path, content)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "clients.yaml")
			write(t, path, "retry: {max_retries: 1}\n")
			_, r := startWatch(t, []string{path}, watchOpts{})

			want := "retry: {max_retries: 2}\ntimeout: 5s\n"
			done := time.Now()
			tt.save(t, path, want)
			c, _ := r.waitFor(t, 0, want)
			if c.at.Before(done) {
				t.Errorf("callback at %v, before the save started at %v", c.at, done)
			}
		})
	}
}

func TestNoReloadWhenContentIsUnchanged(t *testing.T) {
	const content = "timeout: 5s\n"
	tests := []struct {
		name  string
		touch func(t *testing.T, path string)
	}{
		{"chmod", func(t *testing.T, path string) {
			if err := os.Chmod(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"touch", func(t *testing.T, path string) {
			now := time.Now().Add(time.Hour)
			if err := os.Chtimes(path, now, now); err != nil {
				t.Fatal(err)
			}
		}},
		{"rewrite in place with identical bytes", func(t *testing.T, path string) { write(t, path, content) }},
		{"atomic rewrite with identical bytes", func(t *testing.T, path string) { atomicfile.Write(t, path, content) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "clients.yaml")
			write(t, path, content)
			// A long debounce so that the two syscalls of an in-place rewrite can never
			// fall into two checks, even on a loaded machine.
			_, r := startWatch(t, []string{path}, watchOpts{opts: reload.Options{Debounce: 300 * time.Millisecond}})

			tt.touch(t, path)
			if r.nextCheck(t) {
				t.Error("the check called the callback, want a skip: content is unchanged")
			}
			r.noCalls(t)
		})
	}
}

func TestDeletedFileMakesReloadDueAndWatchingContinues(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clients.yaml")
	write(t, path, "v1")
	_, r := startWatch(t, []string{path}, watchOpts{})

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if c := r.next(t); c.contents[0] != missing {
		t.Fatalf("callback after delete read %q, want the file missing", c.contents[0])
	}
	write(t, path, "v2")
	if c := r.next(t); c.contents[0] != "v2" {
		t.Fatalf("callback after recreate read %q, want %q", c.contents[0], "v2")
	}
}

func TestFileAndDirectoryMissingAtStart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not", "yet")
	path := filepath.Join(dir, "clients.yaml")
	_, r := startWatch(t, []string{path}, watchOpts{})

	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, path, "v1")
	r.waitFor(t, 0, "v1")
	atomicfile.Write(t, path, "v2") // watched normally from now on
	r.waitFor(t, 0, "v2")
}

func TestDirectoryReplaced(t *testing.T) {
	tests := []struct {
		name    string
		replace func(t *testing.T, dir string)
	}{
		{"removed and recreated", func(t *testing.T, dir string) {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{"renamed away and a new one made", func(t *testing.T, dir string) {
			if err := os.Rename(dir, dir+".old"); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name+", at once", func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "config")
			path := filepath.Join(dir, "clients.yaml")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			write(t, path, "v1")
			_, r := startWatch(t, []string{path}, watchOpts{})

			tt.replace(t, dir)
			write(t, path, "v2")
			r.waitFor(t, 0, "v2")
			// The new directory is the one watched: an in-place write is seen.
			write(t, path, "v3")
			r.waitFor(t, 0, "v3")
		})
		t.Run(tt.name+", after a while", func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "config")
			path := filepath.Join(dir, "clients.yaml")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			write(t, path, "v1")
			w, r := startWatch(t, []string{path}, watchOpts{})

			tt.replace(t, dir)
			if err := os.Remove(dir); err != nil { // gone for a while: the watcher polls
				t.Fatal(err)
			}
			r.waitFor(t, 0, missing)
			poll(t, "the directory to be unwatched", func() bool { return len(w.WatchedDirs()) == 0 })
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			write(t, path, "v2")
			r.waitFor(t, 0, "v2")
			write(t, path, "v3")
			r.waitFor(t, 0, "v3")
		})
	}
}

func TestBurstIsDebounced(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "clients.yaml")
	sentinel := filepath.Join(dir, "sentinel")
	write(t, path, "write ---")
	write(t, sentinel, "0")
	_, r := startWatch(t, []string{path, sentinel}, watchOpts{})

	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var final string
	start := time.Now()
	for i := range 100 {
		final = fmt.Sprintf("write %03d", i) // all the same length: each write replaces the last
		if _, err := f.WriteAt([]byte(final), 0); err != nil {
			t.Fatal(err)
		}
	}
	lastWrite := time.Now()
	t.Logf("100 writes took %v", lastWrite.Sub(start))

	c, n := r.waitFor(t, 0, final)
	if !c.at.After(lastWrite) {
		t.Errorf("callback seeing the final content at %v, not after the final write at %v", c.at, lastWrite)
	}
	// Anything the burst still had queued is processed before the sentinel's event.
	write(t, sentinel, "1")
	_, m := r.waitFor(t, 1, "1")
	if calls := n + m - 1; calls > 2 {
		t.Errorf("got %d callbacks for a burst of 100 writes, want at most 2", calls)
	}
}

func TestSetFilesReplacesWatchedDirectories(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	a := filepath.Join(dirA, "clients.yaml")
	b := filepath.Join(dirB, "token")
	write(t, a, "a1")
	write(t, b, "b1")
	w, r := startWatch(t, []string{a}, watchOpts{})
	if got, want := w.WatchedDirs(), []string{dirA}; !slices.Equal(got, want) {
		t.Fatalf("watched dirs %q, want %q", got, want)
	}

	if err := w.SetFiles([]string{b}); err != nil {
		t.Fatal(err)
	}
	if got, want := w.WatchedDirs(), []string{dirB}; !slices.Equal(got, want) {
		t.Fatalf("after SetFiles: watched dirs %q, want %q", got, want)
	}
	r.noCalls(t) // a new file's current state is its baseline, not a change
	r.files = []string{b}

	write(t, b, "b2")
	r.waitFor(t, 0, "b2")
}

func TestSetFilesFromCallback(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "clients.yaml")
	token := filepath.Join(t.TempDir(), "token")
	write(t, cfg, "v1")
	write(t, token, "t1")

	var self atomic.Pointer[reload.Watcher] // fn may run before Watch's result is assigned
	calls := make(chan error, 10)
	w, err := reload.Watch([]string{cfg}, reload.Options{}, func() {
		// What a consumer does: the new config names a token file to watch too.
		calls <- self.Load().SetFiles([]string{cfg, token})
	})
	if err != nil {
		t.Fatal(err)
	}
	self.Store(w)
	defer w.Close()

	write(t, cfg, "v2")
	select {
	case err := <-calls:
		if err != nil {
			t.Fatalf("SetFiles from the callback: %v", err)
		}
	case <-time.After(deadline):
		t.Fatal("no callback")
	}
	write(t, token, "t2")
	select {
	case <-calls:
	case <-time.After(deadline):
		t.Fatal("no callback for a file added by SetFiles")
	}
}

func TestWatchErrors(t *testing.T) {
	if _, err := reload.Watch([]string{"ok.yaml", ""}, reload.Options{}, func() {}); err == nil {
		t.Error("Watch with an empty file name: got nil error")
	}
	if _, err := reload.Watch([]string{"ok.yaml"}, reload.Options{}, nil); err == nil {
		t.Error("Watch with a nil callback: got nil error")
	}
	boom := errors.New("boom")
	_, err := reload.WatchWith([]string{"ok.yaml"}, reload.Options{}, func() {},
		func() (reload.Notifier, error) { return nil, boom }, nil)
	if !errors.Is(err, boom) {
		t.Errorf("Watch when fsnotify fails: got %v, want it to wrap %v", err, boom)
	}
}
