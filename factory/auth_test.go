package factory_test

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/atomicfile"
	"github.com/switchboard-http/switchboard/internal/logcapture"
)

// authServer records the Authorization header of every request.
type authServer struct {
	*server
	mu   sync.Mutex
	seen []string
}

func newAuthServer(t *testing.T, then http.HandlerFunc) *authServer {
	t.Helper()
	s := &authServer{}
	s.server = newServer(t, func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.Header.Get("Authorization"))
		s.mu.Unlock()
		if then != nil {
			then(w, r)
		}
	})
	return s
}

func (s *authServer) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

func hostOf(srv *httptest.Server) string { return strings.TrimPrefix(srv.URL, "http://") }

func TestRedirectToOtherHostCarriesTokenOnFirstHopOnly(t *testing.T) {
	other := newAuthServer(t, nil)
	pinned := newAuthServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/landing", http.StatusFound)
	})
	logger, logs := logcapture.New()
	r, _ := openFile(t, "clients:\n  billing:\n    auth: {host: \""+hostOf(pinned.Server)+"\", bearer_token: tok-secret}\n",
		factory.Options{NoWatch: true, Logger: logger})
	for range 2 {
		get(t, r.Get("billing"), pinned.URL+"/start")
	}
	if got := pinned.got(); len(got) != 2 || got[0] != "Bearer tok-secret" || got[1] != "Bearer tok-secret" {
		t.Fatalf("pinned host got %q, want the token on both first hops", got)
	}
	if got := other.got(); len(got) != 2 || got[0] != "" || got[1] != "" {
		t.Fatalf("redirect target got %q, want no credential", got)
	}
	var warns []map[string]any
	for _, rec := range logs.Records(t, "") {
		if rec["level"] == "WARN" {
			warns = append(warns, rec)
		}
	}
	if len(warns) != 1 || warns[0]["auth_host"] != hostOf(pinned.Server) || warns[0]["host"] != hostOf(other.Server) || warns[0]["client"] != "billing" {
		t.Fatalf("got WARNs %v, want one naming both hosts", warns)
	}
	if strings.Contains(logs.String(), "tok-secret") {
		t.Fatal("the log holds the token")
	}
}

func TestTokenFileRewrittenIsUsedAfterReload(t *testing.T) {
	srv := newAuthServer(t, nil)
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	atomicfile.Write(t, token, "  first-token\n")
	r, _ := openFile(t, "clients:\n  billing:\n    circuit_breaker: {enabled: true}\n    auth: {host: \""+hostOf(srv.Server)+"\", bearer_token_file: "+token+"}\n",
		factory.Options{NoWatch: true, Logger: discard()})
	c := r.Get("billing")
	get(t, c, srv.URL)

	atomicfile.Write(t, token, "second-token\n")
	if err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	get(t, c, srv.URL)
	if got := srv.got(); len(got) != 2 || got[0] != "Bearer first-token" || got[1] != "Bearer second-token" {
		t.Fatalf("got %q, want the first token, then the rewritten one (trimmed)", got)
	}
	st := r.Status()
	if st.Generation != 2 || st.Clients[0].Generation != 2 {
		t.Fatalf("got generation %d (client %d), want 2: the client was rebuilt", st.Generation, st.Clients[0].Generation)
	}
	// A token rotation keeps the base transport and its warm connection.
	if n := srv.newConns.Load(); n != 1 {
		t.Fatalf("got %d connections, want 1: the base transport is kept", n)
	}
	// The same content again is no change.
	atomicfile.Write(t, token, "second-token\n")
	if err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	if g := r.Status().Generation; g != 2 {
		t.Fatalf("unchanged token file: got generation %d, want 2 (reload skipped)", g)
	}
}

func TestWatchedTokenFileRotation(t *testing.T) {
	srv := newAuthServer(t, nil)
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	atomicfile.Write(t, token, "first-token\n")
	reloaded := make(chan factory.ReloadEvent, 10)
	r, _ := openFile(t, "clients:\n  billing:\n    auth: {host: \""+hostOf(srv.Server)+"\", bearer_token_file: "+token+"}\n",
		factory.Options{Debounce: 5 * time.Millisecond, Logger: discard(), OnReload: func(e factory.ReloadEvent) { reloaded <- e }})
	get(t, r.Get("billing"), srv.URL)

	atomicfile.Write(t, token, "second-token\n")
	deadline := time.After(10 * time.Second)
	for {
		var e factory.ReloadEvent
		select {
		case e = <-reloaded:
		case <-deadline:
			t.Fatal("no reload within 10s of rewriting the token file")
		}
		if e.Err != nil {
			t.Fatalf("reload: %v", e.Err)
		}
		if len(e.Changed) == 1 && e.Changed[0] == "billing" {
			break
		}
	}
	get(t, r.Get("billing"), srv.URL)
	if got := srv.got(); len(got) != 2 || got[1] != "Bearer second-token" {
		t.Fatalf("got %q, want the rewritten token on the request after the reload", got)
	}
}
