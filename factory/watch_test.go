package factory_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/atomicfile"
)

// End-to-end tests of the file watcher: each drives the real filesystem the
// way a tool does, and waits on OnReload (with a deadline) for the verdict.

// reloadDeadline bounds every wait for a reload; reaching it fails the test.
const reloadDeadline = 10 * time.Second

// testDebounce is small so that the tests are quick; bursts stay far below it.
const testDebounce = 20 * time.Millisecond

// reloads receives every ReloadEvent of a registry.
type reloads chan factory.ReloadEvent

func newReloads() reloads { return make(reloads, 1000) }

func (c reloads) on(e factory.ReloadEvent) { c <- e }

// next waits for the next reload event.
func (c reloads) next(t *testing.T) factory.ReloadEvent {
	t.Helper()
	select {
	case e := <-c:
		return e
	case <-time.After(reloadDeadline):
		t.Fatalf("no reload within %v", reloadDeadline)
		return factory.ReloadEvent{}
	}
}

// waitUntil polls cond until it holds, failing the test after
// reloadDeadline.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(reloadDeadline)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, reloadDeadline)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// clientStatus returns the status of the named client.
func clientStatus(t *testing.T, r *factory.Registry, name string) factory.ClientStatus {
	t.Helper()
	for _, c := range r.Status().Clients {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no client %q in Status", name)
	return factory.ClientStatus{}
}

// editServer answers 200 with the request's X-Edit header as its body.
func editServer(t *testing.T) *server {
	return newServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, r.Header.Get("X-Edit"))
	})
}

// editOf sends one request through c and returns the X-Edit the server saw.
func editOf(t *testing.T, c *http.Client, url string) string {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: got status %d, want 200", resp.StatusCode)
	}
	return string(b)
}

// editYAML is a config whose billing client sends X-Edit: edit.
func editYAML(edit string) string {
	return "clients:\n  billing:\n    headers: {X-Edit: \"" + edit + "\"}\n    retry: {max_retries: 0}\n"
}

// watched is a registry watching its file, with what the tests look at.
type watched struct {
	r      *factory.Registry
	events reloads
	srv    *server
}

// openWatched opens path (already written) with a small debounce.
func openWatched(t *testing.T, path string, o factory.Options) *watched {
	t.Helper()
	w := &watched{events: newReloads(), srv: editServer(t)}
	o.File, o.Debounce, o.OnReload = path, testDebounce, w.events.on
	if o.Logger == nil {
		o.Logger = discard()
	}
	r, err := factory.Open(context.Background(), o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	w.r = r
	return w
}

// edit returns the X-Edit that billing sends now.
func (w *watched) edit(t *testing.T) string {
	t.Helper()
	return editOf(t, w.r.Get("billing"), w.srv.URL)
}

// waitApplied waits for the reload that applies edit. Reloads before it
// must be rejected ones, which change nothing (the generation stays, the
// old config keeps serving), or applied ones of other content (a partial
// file that parsed). It returns the rejected events it saw.
func (w *watched) waitApplied(t *testing.T, edit string) (rejected []factory.ReloadEvent) {
	t.Helper()
	gen := w.r.Status().Generation
	for {
		e := w.events.next(t)
		if e.Generation < gen || (e.Err == nil && e.Generation == gen) {
			continue // a reload that ended before we read the generation
		}
		if e.Err != nil {
			if e.Generation != gen {
				t.Fatalf("rejected reload %v: got generation %d, want %d (kept)", e.Err, e.Generation, gen)
			}
			rejected = append(rejected, e)
			continue
		}
		if e.Generation != gen+1 {
			t.Fatalf("applied reload: got generation %d, want %d", e.Generation, gen+1)
		}
		gen = e.Generation
		if got := w.edit(t); got == edit {
			return rejected
		}
	}
}

func TestWatchKubernetesConfigMapSwap(t *testing.T) {
	dir := t.TempDir()
	ts1, ts2, ts3 := "..2026_11_29_10_00_00.123", "..2026_11_29_10_05_00.456", "..2026_11_29_10_10_00.789"
	// The kubelet's atomic writer: a timestamped directory, ..data linking
	// to it, and the visible name linking through ..data.
	publish := func(ts, content string, old string) {
		t.Helper()
		if err := os.Mkdir(filepath.Join(dir, ts), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ts, "clients.yaml"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(ts, filepath.Join(dir, "..data_tmp")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
		if old != "" {
			if err := os.RemoveAll(filepath.Join(dir, old)); err != nil {
				t.Fatal(err)
			}
		}
	}
	publish(ts1, editYAML("1"), "")
	path := filepath.Join(dir, "clients.yaml")
	if err := os.Symlink(filepath.Join("..data", "clients.yaml"), path); err != nil {
		t.Fatal(err)
	}
	w := openWatched(t, path, factory.Options{})
	if got := w.edit(t); got != "1" {
		t.Fatalf("X-Edit at start: got %q, want %q", got, "1")
	}

	publish(ts2, editYAML("2"), ts1)
	if rej := w.waitApplied(t, "2"); len(rej) > 0 {
		t.Fatalf("the ..data swap is atomic, yet reloads were rejected: %v", rej[0].Err)
	}
	publish(ts3, editYAML("3"), ts2) // it keeps following ..data
	if rej := w.waitApplied(t, "3"); len(rej) > 0 {
		t.Fatalf("the ..data swap is atomic, yet reloads were rejected: %v", rej[0].Err)
	}
	if st := w.r.Status(); st.Generation != 3 || st.LastError != nil {
		t.Fatalf("Status: got generation %d, error %v; want 3, nil", st.Generation, st.LastError)
	}
}

func TestWatchEditorSaves(t *testing.T) {
	tests := []struct {
		name string
		save func(t *testing.T, path, content string)
	}{
		{"temp file renamed over it (VS Code, Go atomic writers)", atomicfile.Write},
		{"original renamed to a backup, new file written, backup removed (vim)", func(t *testing.T, path, content string) {
			backup := path + "~"
			if err := os.Rename(path, backup); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(backup); err != nil {
				t.Fatal(err)
			}
		}},
		{"truncated, then written in several chunks", func(t *testing.T, path, content string) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for i := 0; i < len(content); i += 16 {
				if _, err := f.WriteString(content[i:min(i+16, len(content))]); err != nil {
					t.Fatal(err)
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "clients.yaml")
			atomicfile.Write(t, path, editYAML("1"))
			w := openWatched(t, path, factory.Options{})
			for i, edit := range []string{"2", "3"} { // the second save proves watching survived the first
				tt.save(t, path, editYAML(edit))
				w.waitApplied(t, edit)
				if got, want := w.r.Status().LastError, error(nil); got != want {
					t.Fatalf("save %d: LastError: got %v, want nil", i+1, got)
				}
			}
		})
	}
}

func TestWatchDeleteThenRecreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clients.yaml")
	atomicfile.Write(t, path, editYAML("1"))
	w := openWatched(t, path, factory.Options{})

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	e := w.events.next(t)
	if !errors.Is(e.Err, fs.ErrNotExist) || e.Generation != 1 {
		t.Fatalf("reload of a deleted file: got %+v, want a not-exist error at generation 1", e)
	}
	if st := w.r.Status(); st.Generation != 1 || !errors.Is(st.LastError, fs.ErrNotExist) {
		t.Fatalf("Status: got generation %d, error %v; want 1 and the not-exist error", st.Generation, st.LastError)
	}
	if got := w.edit(t); got != "1" {
		t.Fatalf("X-Edit with the file deleted: got %q, want %q (the last good config)", got, "1")
	}

	// Recreated in place (not renamed): watching went on while it was gone.
	if err := os.WriteFile(path, []byte(editYAML("2")), 0o644); err != nil {
		t.Fatal(err)
	}
	w.waitApplied(t, "2")
	if st := w.r.Status(); st.Generation != 2 || st.LastError != nil {
		t.Fatalf("Status after the recreate: got generation %d, error %v; want 2, nil", st.Generation, st.LastError)
	}
}

func TestWatchDirectoryReplaced(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "conf")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "clients.yaml")
	atomicfile.Write(t, path, editYAML("1"))
	w := openWatched(t, path, factory.Options{})

	for _, edit := range []string{"2", "3"} {
		next := filepath.Join(root, "conf.new")
		if err := os.Mkdir(next, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(next, "clients.yaml"), []byte(editYAML(edit)), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(next, dir); err != nil {
			t.Fatal(err)
		}
		// The directory may be seen missing first: a rejected reload.
		for _, e := range w.waitApplied(t, edit) {
			if !errors.Is(e.Err, fs.ErrNotExist) {
				t.Fatalf("while the directory was replaced: got error %v, want only not-exist ones", e.Err)
			}
		}
	}
}

// TestWatchBurstOf100Writes writes the file in place 100 times in about
// 50ms, each write truncating it and writing it in two halves, so that
// partial files exist along the way. Reading starts only after the file has
// been quiet for the debounce time, so the burst ends in one reload (one
// more for each pause of the writer longer than the debounce) that applies
// the final content.
func TestWatchBurstOf100Writes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clients.yaml")
	atomicfile.Write(t, path, editYAML("0"))
	w := openWatched(t, path, factory.Options{})

	var maxGap time.Duration
	last := time.Now()
	for i := 1; i <= 100; i++ {
		content := editYAML(strings.Repeat("x", i%7) + "burst")
		if i == 100 {
			content = editYAML("final")
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			t.Fatal(err)
		}
		half := len(content) / 2
		if _, err := f.WriteString(content[:half]); err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(content[half:]); err != nil {
			t.Fatal(err)
		}
		f.Close()
		now := time.Now()
		maxGap, last = max(maxGap, now.Sub(last)), now
		time.Sleep(500 * time.Microsecond) // pacing the burst, not waiting for a verdict
	}
	rejected := w.waitApplied(t, "final")
	gen := w.r.Status().Generation
	attempts := int(gen-1) + len(rejected)
	switch {
	case attempts <= 2:
	case maxGap >= testDebounce:
		t.Logf("the writer paused %v (> debounce %v): %d reloads", maxGap, testDebounce, attempts)
	default:
		t.Fatalf("a burst of 100 writes: got %d reload attempts (%d applied, %d rejected), want at most 2", attempts, gen-1, len(rejected))
	}
}

// TestWatchPartialFileIsRejectedOrSuperseded pins down what a writer that
// pauses mid-file (longer than the debounce) gets: the partial file is read.
// If it does not parse or validate, the reload is rejected and the old
// config keeps serving; if it happens to be valid, it is applied, and the
// complete file's reload supersedes it moments later.
func TestWatchPartialFileIsRejectedOrSuperseded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clients.yaml")
	atomicfile.Write(t, path, editYAML("1"))
	w := openWatched(t, path, factory.Options{})
	full := "clients:\n  billing:\n    headers: {X-Edit: \"2\"}\n    retry: {max_retries: 0}\n    timeout: 5s\n"

	// Cut inside a key: "retry: {max_re" does not parse.
	cut := strings.Index(full, "max_retries") + len("max_re")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(full[:cut]); err != nil {
		t.Fatal(err)
	}
	if e := w.events.next(t); e.Err == nil || e.Generation != 1 {
		t.Fatalf("reload of a partial file that does not parse: got %+v, want rejected at generation 1", e)
	}
	if got := w.edit(t); got != "1" {
		t.Fatalf("X-Edit after the rejected partial file: got %q, want %q", got, "1")
	}
	if _, err := f.WriteString(full[cut:]); err != nil {
		t.Fatal(err)
	}
	f.Close()
	w.waitApplied(t, "2")

	// Cut after a whole line: the partial file is valid and is applied,
	// then superseded when the rest is written.
	full = strings.ReplaceAll(full, `"2"`, `"3"`)
	cut = strings.Index(full, "    retry")
	f, err = os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(full[:cut]); err != nil {
		t.Fatal(err)
	}
	w.waitApplied(t, "3")
	if _, err := f.WriteString(full[cut:]); err != nil {
		t.Fatal(err)
	}
	e := w.events.next(t)
	if e.Err != nil || e.Generation != 4 || strings.Join(e.Changed, ",") != "billing" {
		t.Fatalf("reload of the completed file: got %+v, want generation 4 applied, billing changed", e)
	}
}
