package factory_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/atomicfile"
)

// End-to-end tests of what the watcher watches: every file a config names,
// from before the read that uses it, whether or not it exists yet. Each
// drives the real filesystem and polls with a deadline for the verdict.

// replaceFile writes content to path by a rename, as atomicfile.Write does,
// for code that runs outside the test's goroutine (a hook, a Source's
// Read): it reports a failure through the returned error.
func replaceFile(path, content string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// sawBearer returns a poll that sends one request through c and reports
// whether srv saw want as its Authorization.
func sawBearer(t *testing.T, srv *authServer, c *http.Client, want string) func() bool {
	return func() bool {
		get(t, c, srv.URL)
		got := srv.got()
		return got[len(got)-1] == want
	}
}

// authYAML is a config whose billing client sends the bearer token in
// file to srv's host, or no credential for file "".
func authYAML(srv *authServer, file string) string {
	if file == "" {
		return "clients:\n  billing:\n    retry: {max_retries: 0}\n"
	}
	return "clients:\n  billing:\n    retry: {max_retries: 0}\n    auth: {host: \"" + hostOf(srv.Server) +
		"\", bearer_token_file: " + file + "}\n"
}

func TestTokenFileCreatedAfterTheConfigNamingItIsPickedUp(t *testing.T) {
	srv := newAuthServer(t, nil)
	events := newReloads()
	r, path := openFile(t, authYAML(srv, ""), factory.Options{Debounce: testDebounce, Logger: discard(), OnReload: events.on})
	c := r.Get("billing")

	// The config names a token file that is not there yet, in a directory
	// that is not there either: the edit is rejected…
	token := filepath.Join(t.TempDir(), "secrets", "token")
	atomicfile.Write(t, path, authYAML(srv, token))
	for e := events.next(t); e.Err == nil; e = events.next(t) {
	}
	// …and once the file appears, the next reload applies it.
	if err := os.Mkdir(filepath.Dir(token), 0o700); err != nil {
		t.Fatal(err)
	}
	atomicfile.Write(t, token, "late-token\n")
	waitUntil(t, "the token created after the config is sent", sawBearer(t, srv, c, "Bearer late-token"))
	if err := r.Status().LastError; err != nil {
		t.Fatalf("LastError = %v, want nil once the file exists", err)
	}
}

func TestTLSFileCreatedAfterTheConfigNamingItIsPickedUp(t *testing.T) {
	ca := newCA(t, "test CA")
	_, _, serverPair := ca.issue(t, "server", true)
	var cert atomic.Pointer[tls.Certificate]
	cert.Store(&serverPair)
	srv := newTLSServer(t, &cert, nil)
	events := newReloads()
	r, path := openFile(t, "clients:\n  billing:\n    retry: {max_retries: 0}\n",
		factory.Options{Debounce: testDebounce, Logger: discard(), OnReload: events.on})
	c := r.Get("billing")

	caFile := filepath.Join(t.TempDir(), "ca.pem")
	atomicfile.Write(t, path, "clients:\n  billing:\n    retry: {max_retries: 0}\n    tls: {ca_file: "+caFile+"}\n")
	for e := events.next(t); e.Err == nil; e = events.next(t) {
	}
	atomicfile.Write(t, caFile, string(ca.pem))
	waitUntil(t, "the CA bundle created after the config is trusted", func() bool {
		resp, err := c.Get(srv.URL)
		if err != nil {
			return false // the old transport does not trust the test CA
		}
		resp.Body.Close()
		return true
	})
}

// editingSource is a Source whose first Read after it is armed runs edit:
// the edit happens while a load is reading its inputs, after the config
// file was read.
type editingSource struct {
	mu    sync.Mutex
	armed bool
	edit  func() error
	err   error
}

func (s *editingSource) Name() string { return "editing" }

func (s *editingSource) Read() (map[string]any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.armed {
		s.armed = false
		s.err = s.edit()
	}
	return map[string]any{}, nil
}

func TestConfigEditedWhileOpenReadsItIsApplied(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clients.yaml")
	atomicfile.Write(t, path, editYAML("read"))
	src := &editingSource{armed: true, edit: func() error { return replaceFile(path, editYAML("edited during Open")) }}
	w := openWatched(t, path, factory.Options{Sources: []config.Source{src}})
	if src.err != nil {
		t.Fatal(src.err)
	}
	waitUntil(t, "the edit made while Open read its inputs serves", func() bool { return w.edit(t) == "edited during Open" })
}

// rotatingHooks returns a HooksFor that, while armed, rewrites the file at
// path to content the first time a pipeline of billing is built: after the
// build's read of the file, before the generation serves.
func rotatingHooks(path, content string, armed *atomic.Bool, errs chan<- error) func(string) factory.Hooks {
	return func(name string) factory.Hooks {
		if name == "billing" && armed.CompareAndSwap(true, false) {
			errs <- replaceFile(path, content)
		}
		return factory.Hooks{}
	}
}

func TestTokenRotatedWhileOpenReadsItIsApplied(t *testing.T) {
	srv := newAuthServer(t, nil)
	token := filepath.Join(t.TempDir(), "token")
	atomicfile.Write(t, token, "read-token\n")
	var armed atomic.Bool
	armed.Store(true)
	errs := make(chan error, 1)
	r, _ := openFile(t, authYAML(srv, token), factory.Options{
		Debounce: testDebounce, Logger: discard(), HooksFor: rotatingHooks(token, "rotated-token\n", &armed, errs),
	})
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the token rotated while Open read it is sent", sawBearer(t, srv, r.Get("billing"), "Bearer rotated-token"))
}

func TestTokenRotatedWhileAReloadReadsItIsApplied(t *testing.T) {
	srv := newAuthServer(t, nil)
	dir := t.TempDir()
	first, second := filepath.Join(dir, "first"), filepath.Join(dir, "second")
	atomicfile.Write(t, first, "first-token\n")
	atomicfile.Write(t, second, "read-token\n")
	var armed atomic.Bool
	errs := make(chan error, 1)
	events := newReloads()
	r, path := openFile(t, authYAML(srv, first), factory.Options{
		Debounce: testDebounce, Logger: discard(), OnReload: events.on,
		HooksFor: rotatingHooks(second, "rotated-token\n", &armed, errs),
	})
	c := r.Get("billing")

	// The edit names a file the watcher did not watch yet; it is rotated
	// after the reload read it, before the reload's generation serves.
	armed.Store(true)
	atomicfile.Write(t, path, authYAML(srv, second))
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the token rotated while a reload read it is sent", sawBearer(t, srv, c, "Bearer rotated-token"))
}

// A config that comes from a Source alone, with no file, names files too:
// they are watched like the file's.
func TestTokenFileNamedByASourceIsWatched(t *testing.T) {
	srv := newAuthServer(t, nil)
	token := filepath.Join(t.TempDir(), "token")
	atomicfile.Write(t, token, "first-token\n")
	src := &memSource{name: "mem", tree: map[string]any{"clients": map[string]any{"billing": map[string]any{
		"retry": map[string]any{"max_retries": 0},
		"auth":  map[string]any{"host": hostOf(srv.Server), "bearer_token_file": token},
	}}}}
	r, err := factory.Open(context.Background(), factory.Options{Sources: []config.Source{src}, Debounce: testDebounce, Logger: discard()})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	c := r.Get("billing")
	get(t, c, srv.URL)
	atomicfile.Write(t, token, "second-token\n")
	waitUntil(t, "the rotated token is sent", sawBearer(t, srv, c, "Bearer second-token"))
}
