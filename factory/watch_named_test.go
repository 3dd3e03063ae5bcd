package factory_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/atomicfile"
)

// staticSource is a config.Source that is not Watchable: its tree never
// changes.
type staticSource map[string]any

func (s staticSource) Name() string                  { return "static" }
func (s staticSource) Read() (map[string]any, error) { return s, nil }

// TestTokenFileNamedWithoutAWatchedLayerIsWatched: a registry opened
// without a file or a Watchable Source (env, flags, a static Source) still
// watches the token file its config names, so a rotated token is sent.
func TestTokenFileNamedWithoutAWatchedLayerIsWatched(t *testing.T) {
	for _, layer := range []string{"env", "static source"} {
		t.Run(layer, func(t *testing.T) {
			srv := newAuthServer(t, nil)
			token := filepath.Join(t.TempDir(), "token")
			atomicfile.Write(t, token, "first-token\n")
			o := factory.Options{Debounce: testDebounce, Logger: discard()}
			switch layer {
			case "env":
				o.EnvPrefix = "SVC_"
				o.Environ = func() []string {
					return []string{
						"SVC_CLIENTS__BILLING__RETRY__MAX_RETRIES=0",
						"SVC_CLIENTS__BILLING__AUTH__HOST=" + hostOf(srv.Server),
						"SVC_CLIENTS__BILLING__AUTH__BEARER_TOKEN_FILE=" + token,
					}
				}
				o.Sources = []config.Source{staticSource{"clients": map[string]any{"billing": map[string]any{}}}}
			default:
				o.Sources = []config.Source{staticSource{"clients": map[string]any{"billing": map[string]any{
					"retry": map[string]any{"max_retries": 0},
					"auth":  map[string]any{"host": hostOf(srv.Server), "bearer_token_file": token},
				}}}}
			}
			r, err := factory.Open(context.Background(), o)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			t.Cleanup(func() { r.Close() })
			c := r.Get("billing")
			if !sawBearer(t, srv, c, "Bearer first-token")() {
				t.Fatalf("first request: got %v, want Bearer first-token", srv.got())
			}
			atomicfile.Write(t, token, "second-token\n")
			waitUntil(t, "the rotated token is sent", sawBearer(t, srv, c, "Bearer second-token"))
		})
	}
}

// TestFileNamedByAnAppliedConfigIsWatched: Apply watches the files the
// config it applies names, as a reload of the layers does: a change of
// such a file triggers a reload.
func TestFileNamedByAnAppliedConfigIsWatched(t *testing.T) {
	srv := newAuthServer(t, nil)
	events := newReloads()
	r, _ := openFile(t, authYAML(srv, ""), factory.Options{Debounce: testDebounce, Logger: discard(), OnReload: events.on})
	token := filepath.Join(t.TempDir(), "token")
	atomicfile.Write(t, token, "applied-token\n")
	cfg := r.Status() // the generation before Apply
	applied := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": config.Default()}}
	b := applied.Clients["billing"]
	b.Auth.Host, b.Auth.BearerTokenFile = hostOf(srv.Server), token
	applied.Clients["billing"] = b
	if err := r.Apply(applied); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if e := events.next(t); e.Err != nil || e.Generation != cfg.Generation+1 {
		t.Fatalf("Apply's event: %+v", e)
	}
	if !sawBearer(t, srv, r.Get("billing"), "Bearer applied-token")() {
		t.Fatalf("after Apply: got %v, want Bearer applied-token", srv.got())
	}
	// The token file changes: the watcher sees it and a reload runs (it
	// reads the layers again, as every reload does).
	atomicfile.Write(t, token, "rotated-token\n")
	if e := events.next(t); e.Err != nil || e.Generation != cfg.Generation+2 {
		t.Fatalf("the reload the token change triggers: %+v", e)
	}
}
