package factory_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/atomicfile"
)

// memSource is an in-memory config.Source that notifies its watcher on
// every set, as a Consul or etcd watch would.
type memSource struct {
	name    string
	mu      sync.Mutex
	tree    map[string]any
	err     error
	panics  string // Read panics with it when not ""
	notify  func()
	stopped atomic.Bool
}

var (
	_ config.Source    = (*memSource)(nil)
	_ config.Watchable = (*memSource)(nil)
)

func (s *memSource) Name() string { return s.name }

func (s *memSource) Read() (map[string]any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.panics != "" {
		panic(s.panics)
	}
	return s.tree, s.err
}

func (s *memSource) Watch(notify func()) (func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notify = notify
	return func() {
		s.stopped.Store(true)
		s.mu.Lock()
		s.notify = nil
		s.mu.Unlock()
	}, nil
}

// set changes the source and notifies the watcher, if any.
func (s *memSource) set(tree map[string]any, err error, panics string) {
	s.mu.Lock()
	s.tree, s.err, s.panics = tree, err, panics
	notify := s.notify
	s.mu.Unlock()
	if notify != nil {
		notify()
	}
}

// sourceEdit is a source tree whose billing client sends X-Edit: edit.
func sourceEdit(edit string) map[string]any {
	return map[string]any{"clients": map[string]any{"billing": map[string]any{
		"headers": map[string]any{"X-Edit": edit},
	}}}
}

func TestReloadFromWatchableSource(t *testing.T) {
	src := &memSource{name: "mem", tree: sourceEdit("s1")}
	path := filepath.Join(t.TempDir(), "clients.yaml")
	atomicfile.Write(t, path, editYAML("file1"))
	w := openWatched(t, path, factory.Options{Sources: []config.Source{src}})
	if got := w.edit(t); got != "s1" {
		t.Fatalf("X-Edit at start: got %q, want %q (the source is layered over the file)", got, "s1")
	}

	src.set(sourceEdit("s2"), nil, "")
	w.waitApplied(t, "s2")

	// A bad value from the source is rejected like a bad file, naming the
	// key and the source.
	bad := sourceEdit("s3")
	bad["clients"].(map[string]any)["billing"].(map[string]any)["retry"] = map[string]any{"max_retries": "many"}
	src.set(bad, nil, "")
	e := w.events.next(t)
	if e.Err == nil || e.Generation != 2 ||
		!strings.Contains(e.Err.Error(), "clients.billing.retry.max_retries") || !strings.Contains(e.Err.Error(), "source mem") {
		t.Fatalf("bad source value: got %+v, want rejected at generation 2, naming the key and source mem", e)
	}
	if got := w.edit(t); got != "s2" {
		t.Fatalf("X-Edit after a rejected source edit: got %q, want %q", got, "s2")
	}

	// A source that answers with a document that does not parse is
	// rejected too: that is a bad put, not an outage.
	src.set(nil, config.ContentError(errors.New("key /x: yaml: line 2: bad")), "")
	e = w.events.next(t)
	if e.Err == nil || e.Generation != 2 || !strings.Contains(e.Err.Error(), "config source mem: key /x: yaml: line 2: bad") {
		t.Fatalf("bad source document: got %+v, want rejected at generation 2, naming the source", e)
	}
	if st := w.r.Status(); st.LastError == nil || len(st.Sources) != 1 || st.Sources[0].Stale {
		t.Fatalf("status after a bad source document: got last error %v, sources %+v; want the error, the source not stale", st.LastError, st.Sources)
	}

	// A source that cannot be read keeps its last good snapshot: Status
	// marks it stale, and a file edit made meanwhile still applies.
	src.set(nil, errors.New("connection refused"), "")
	waitUntil(t, "the source is marked stale", func() bool {
		s := w.r.Status().Sources
		return len(s) == 1 && s[0].Name == "mem" && s[0].Stale && strings.Contains(s[0].LastError, "connection refused")
	})
	atomicfile.Write(t, path, editYAML("file2")+"    timeout: 7s\n")
	if e := w.events.next(t); e.Err != nil || e.Generation != 3 {
		t.Fatalf("file edit during the source's outage: got %+v, want applied as generation 3", e)
	}
	if got := w.edit(t); got != "s2" {
		t.Fatalf("X-Edit during the outage: got %q, want %q (the source's last good snapshot)", got, "s2")
	}
	if got := clientStatus(t, w.r, "billing").Config.Timeout; got != 7*time.Second {
		t.Fatalf("timeout after the file edit during the outage: got %v, want 7s", got)
	}

	// The source answers again: its new content applies, and it is fresh.
	src.set(sourceEdit("s4"), nil, "")
	w.waitApplied(t, "s4")
	if s := w.r.Status().Sources; len(s) != 1 || s[0].Stale || s[0].LastError != "" {
		t.Fatalf("sources after the source recovered: got %+v, want mem fresh", s)
	}
	if st := w.r.Status(); st.Generation != 4 {
		t.Fatalf("after the source recovered: got generation %d, want 4", st.Generation)
	}
	w.r.Close()
	if !src.stopped.Load() {
		t.Fatal("Close did not stop the source's watch")
	}
}

func TestReloadFromSourceWithoutFile(t *testing.T) {
	src := &memSource{name: "mem", tree: sourceEdit("s1")}
	events := newReloads()
	srv := editServer(t)
	r, err := factory.Open(context.Background(), factory.Options{
		Sources: []config.Source{src}, Debounce: testDebounce, Logger: discard(), OnReload: events.on,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w := &watched{r: r, events: events, srv: srv}
	if got := w.edit(t); got != "s1" {
		t.Fatalf("X-Edit at start: got %q, want %q", got, "s1")
	}
	// A burst of notifications is debounced into one reload.
	for i := range 10 {
		src.set(sourceEdit("burst"+string(rune('0'+i))), nil, "")
	}
	w.waitApplied(t, "burst9")
	if g := r.Status().Generation; g != 2 {
		t.Fatalf("after a burst of 10 notifications: got generation %d, want 2 (one reload)", g)
	}
}

func TestWatchOffLeavesSourcesUnwatched(t *testing.T) {
	src := &memSource{name: "mem", tree: sourceEdit("s1")}
	r, err := factory.Open(context.Background(), factory.Options{Sources: []config.Source{src}, NoWatch: true, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	src.mu.Lock()
	watched := src.notify != nil
	src.mu.Unlock()
	if watched {
		t.Fatal("NoWatch: the source's Watch was called")
	}
	src.set(sourceEdit("s2"), nil, "")
	if err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	if g := r.Status().Generation; g != 2 {
		t.Fatalf("Reload with NoWatch: got generation %d, want 2", g)
	}
}
