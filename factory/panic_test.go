package factory_test

import (
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/atomicfile"
	"github.com/switchboard-http/switchboard/internal/logcapture"
	"github.com/switchboard-http/switchboard/middleware"
)

// panicky is a Hooks.Outer middleware whose constructor panics while on.
type panicky struct{ on atomic.Bool }

func (p *panicky) mw(next http.RoundTripper) http.RoundTripper {
	if p.on.Load() {
		panic("hook constructor exploded")
	}
	return next
}

// checkRejected checks that a reload was rejected with a panic's error,
// reported everywhere, and that generation gen still serves edit.
func checkRejected(t *testing.T, w *watched, logs *logcapture.Capture, e factory.ReloadEvent, gen uint64, panicText, edit string) {
	t.Helper()
	if e.Err == nil || !strings.Contains(e.Err.Error(), "panicked") || !strings.Contains(e.Err.Error(), panicText) {
		t.Fatalf("OnReload: got error %v, want one saying it panicked with %q", e.Err, panicText)
	}
	st := w.r.Status()
	if st.Generation != gen || e.Generation != gen || st.LastError == nil || st.LastError.Error() != e.Err.Error() {
		t.Fatalf("Status: got generation %d (event %d), error %v; want %d and the event's error", st.Generation, e.Generation, st.LastError, gen)
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), panicText) {
		t.Fatalf("no ERROR record of the panic; logs:\n%s", logs.String())
	}
	if got := w.edit(t); got != edit {
		t.Fatalf("X-Edit after the panic: got %q, want %q (the old generation)", got, edit)
	}
}

func TestReloadWhoseBuildPanicsKeepsOldGeneration(t *testing.T) {
	var hook panicky
	var logs logcapture.Capture
	path := filepath.Join(t.TempDir(), "clients.yaml")
	atomicfile.Write(t, path, editYAML("1"))
	w := openWatched(t, path, factory.Options{
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Hooks:  factory.Hooks{Outer: []middleware.Middleware{hook.mw}},
	})
	hook.on.Store(true)
	atomicfile.Write(t, path, editYAML("2"))
	checkRejected(t, w, &logs, w.events.next(t), 1, "hook constructor exploded", "1")

	hook.on.Store(false) // watching went on: the next edit applies
	atomicfile.Write(t, path, editYAML("3"))
	w.waitApplied(t, "3")
}

func TestReloadWhoseSourcePanicsKeepsOldGeneration(t *testing.T) {
	var logs logcapture.Capture
	src := &memSource{name: "mem", tree: sourceEdit("s1")}
	path := filepath.Join(t.TempDir(), "clients.yaml")
	atomicfile.Write(t, path, editYAML("1"))
	w := openWatched(t, path, factory.Options{
		Logger:  slog.New(slog.NewTextHandler(&logs, nil)),
		Sources: []config.Source{src},
	})
	// A Source whose Read panics is one that cannot be read: its last good
	// snapshot keeps serving, the source is marked stale, and one WARN
	// names the panic.
	src.set(sourceEdit("s2"), nil, "source read exploded")
	waitUntil(t, "the panicking source is marked stale", func() bool {
		s := w.r.Status().Sources
		return len(s) == 1 && s[0].Stale && strings.Contains(s[0].LastError, "source read exploded")
	})
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "source read exploded") {
		t.Fatalf("no WARN naming the panic; logs:\n%s", logs.String())
	}
	if got, st := w.edit(t), w.r.Status(); got != "s1" || st.Generation != 1 || st.LastError != nil {
		t.Fatalf("after the panic: X-Edit %q, generation %d, LastError %v; want s1, 1, nil (the old generation)", got, st.Generation, st.LastError)
	}

	src.set(sourceEdit("s3"), nil, "")
	w.waitApplied(t, "s3")
}

func TestReloadOnReloadPanicKeepsWatching(t *testing.T) {
	var logs logcapture.Capture
	events := newReloads()
	var calls atomic.Int64
	path := filepath.Join(t.TempDir(), "clients.yaml")
	atomicfile.Write(t, path, editYAML("1"))
	r, err := factory.Open(context.Background(), factory.Options{
		File: path, Debounce: testDebounce, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		OnReload: func(e factory.ReloadEvent) {
			events <- e
			if calls.Add(1) == 1 {
				panic("callback exploded")
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w := &watched{r: r, events: events, srv: editServer(t)}

	// The callback is an observer: its panic does not undo the reload,
	// which is applied; it is logged at ERROR, and watching goes on.
	atomicfile.Write(t, path, editYAML("2"))
	w.waitApplied(t, "2")
	atomicfile.Write(t, path, editYAML("3"))
	w.waitApplied(t, "3")
	// Reloads run one at a time: the first one's recovery was logged
	// before the second one called OnReload.
	if !strings.Contains(logs.String(), "OnReload panicked") || !strings.Contains(logs.String(), "callback exploded") {
		t.Fatalf("no ERROR record of the callback's panic; logs:\n%s", logs.String())
	}
}

// panickingObserver panics on every reload event.
type panickingObserver struct{}

func (panickingObserver) OnEvent(_ context.Context, e middleware.Event) {
	if e.Name == middleware.EventConfigReloaded || e.Name == middleware.EventConfigRejected {
		panic("observer exploded")
	}
}

func TestReloadObserverPanicIsRecovered(t *testing.T) {
	var logs logcapture.Capture
	path := filepath.Join(t.TempDir(), "clients.yaml")
	atomicfile.Write(t, path, editYAML("1"))
	w := openWatched(t, path, factory.Options{
		Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
		Observer: panickingObserver{},
	})
	for _, edit := range []string{"2", "3"} {
		atomicfile.Write(t, path, editYAML(edit))
		w.waitApplied(t, edit)
	}
	if !strings.Contains(logs.String(), "Observer panicked") {
		t.Fatalf("no ERROR record of the observer's panic; logs:\n%s", logs.String())
	}
}

func TestGetOfNewNameWhoseBuildPanicsFailsItsRequestsUntilReload(t *testing.T) {
	var hook panicky
	var logs logcapture.Capture
	srv := editServer(t)
	cfg := defaultsWithRetries(0)
	r, err := factory.New(cfg, factory.Options{
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Hooks:  factory.Hooks{Outer: []middleware.Middleware{hook.mw}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	hook.on.Store(true)
	c := r.Get("newcomer") // does not panic
	if _, err := c.Get(srv.URL); err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("request of a client whose build panicked: got %v, want an error saying so", err)
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "client=newcomer") {
		t.Fatalf("no ERROR record naming the client; logs:\n%s", logs.String())
	}
	hook.on.Store(false)
	if err := r.Apply(cfg); err != nil { // same config: the broken client is rebuilt anyway
		t.Fatal(err)
	}
	if got := editOf(t, c, srv.URL); got != "" {
		t.Fatalf("after the reload: got X-Edit %q, want none (defaults)", got)
	}
}
