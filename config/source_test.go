package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/file"

	"github.com/switchboard-http/switchboard/config"
)

// mapSource is a config.Source serving a fixed tree.
type mapSource struct {
	name string
	tree map[string]any
	err  error
}

func (s mapSource) Name() string                  { return s.name }
func (s mapSource) Read() (map[string]any, error) { return s.tree, s.err }

func TestSourceIsLayeredBetweenFileAndEnv(t *testing.T) {
	path := writeConfig(t, `defaults:
  timeout: 10s
clients:
  billing:
    retry: {max_retries: 1, max_backoff: 3s}
`)
	src := mapSource{name: "consul", tree: map[string]any{
		"defaults": map[string]any{"timeout": "20s"},
		"clients": map[string]any{
			"billing": map[string]any{"retry": map[string]any{
				"max_retries":      "4", // text, as key-value stores hold it
				"retryable_status": "502,503",
				"jitter":           "equal",
				"max_backoff":      5 * time.Second, // a Go value
			}},
			"search": map[string]any{"bulkhead": map[string]any{"max_concurrent": 8}},
		},
	}}
	cfg := mustLoad(t, config.Loader{
		File: path, Sources: []config.Source{src}, EnvPrefix: "SB_",
		Environ: environ("SB_CLIENTS__BILLING__RETRY__JITTER=none"),
	})
	billing, search := client(t, cfg, "billing"), client(t, cfg, "search")
	if billing.Retry.MaxRetries != 4 || billing.Retry.MaxBackoff != 5*time.Second ||
		len(billing.Retry.RetryableStatus) != 2 || billing.Timeout != 20*time.Second {
		t.Fatalf("billing: got %+v, timeout %v; want the source's values over the file's", billing.Retry, billing.Timeout)
	}
	if billing.Retry.Jitter != "none" {
		t.Fatalf("billing jitter: got %q, want %q (env beats the source)", billing.Retry.Jitter, "none")
	}
	if search.Bulkhead.MaxConcurrent != 8 {
		t.Fatalf("search: got bulkhead %d, want 8 (a client only the source defines)", search.Bulkhead.MaxConcurrent)
	}
	want := config.Origin{Layer: config.LayerSource, Name: "consul", Path: "clients.billing.retry.max_retries"}
	if got, _ := cfg.Provenance.Of("billing", "retry.max_retries"); got != want {
		t.Fatalf("provenance: got %+v, want %+v", got, want)
	}
	if got := config.LayerSource.String(); got != "source" {
		t.Fatalf("LayerSource.String(): got %q, want %q", got, "source")
	}

	// The source's content is an input: a change changes InputHash.
	src.tree["clients"].(map[string]any)["search"] = map[string]any{"bulkhead": map[string]any{"max_concurrent": 9}}
	again := mustLoad(t, config.Loader{File: path, Sources: []config.Source{src}})
	if again.InputHash == cfg.InputHash {
		t.Fatal("InputHash did not change with the source's content")
	}
}

func TestSourceErrors(t *testing.T) {
	tests := []struct {
		name  string
		src   mapSource
		wants []string
	}{
		{"unknown key with hint", mapSource{name: "etcd", tree: map[string]any{"clients": map[string]any{
			"billing": map[string]any{"retry": map[string]any{"max_retires": 2}}}}},
			[]string{"source etcd: clients.billing.retry.max_retires: unknown key; did you mean max_retries?"}},
		{"bad text", mapSource{name: "etcd", tree: map[string]any{"defaults": map[string]any{"timeout": "soon"}}},
			[]string{"defaults.timeout", `must be a duration string like "500ms", got "soon"`, "source etcd"}},
		{"out of range", mapSource{name: "etcd", tree: map[string]any{"defaults": map[string]any{"retry": map[string]any{"max_retries": -1}}}},
			[]string{"source etcd: defaults.retry.max_retries: must be >= 0, got -1"}},
		{"read error", mapSource{name: "vault", err: errors.New("permission denied")},
			[]string{"config source vault: permission denied"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := mustFail(t, config.Loader{Sources: []config.Source{tt.src}}, tt.wants...)
			for _, fe := range config.FieldErrors(err) {
				if fe.Path == "" {
					t.Errorf("FieldError without Path: %v", fe)
				}
			}
		})
	}
}

func TestKoanfSourceReadsTreesAndBytes(t *testing.T) {
	flat := config.KoanfSource("kv", confmap.Provider(map[string]any{
		"clients.billing.retry.max_retries": "6",
	}, "."), nil)
	if _, ok := flat.(config.Watchable); ok {
		t.Fatal("a confmap provider cannot watch, yet the Source is Watchable")
	}
	path := filepath.Join(t.TempDir(), "shared.yaml")
	writeYAML(t, path, "clients:\n  billing:\n    timeout: 3s\n")
	bytesSrc := config.KoanfSource("s3", file.Provider(path), yaml.Parser())
	cfg := mustLoad(t, config.Loader{Sources: []config.Source{bytesSrc, flat}})
	billing := client(t, cfg, "billing")
	if billing.Retry.MaxRetries != 6 || billing.Timeout != 3*time.Second {
		t.Fatalf("billing: got max_retries %d, timeout %v; want 6 and 3s", billing.Retry.MaxRetries, billing.Timeout)
	}
	if o, _ := cfg.Provenance.Of("billing", "timeout"); o.Name != "s3" || o.Layer != config.LayerSource {
		t.Fatalf("provenance of timeout: got %+v, want source s3", o)
	}
}

func TestKoanfSourceWatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.yaml")
	writeYAML(t, path, "clients:\n  billing:\n    timeout: 3s\n")
	src := config.KoanfSource("file", file.Provider(path), yaml.Parser())
	w, ok := src.(config.Watchable)
	if !ok {
		t.Fatal("a file provider can watch, yet the Source is not Watchable")
	}
	got := make(chan struct{}, 10)
	stop, err := w.Watch(func() {
		got <- struct{}{}
	})
	if err != nil {
		t.Fatal(err)
	}
	writeYAML(t, path, "clients:\n  billing:\n    timeout: 4s\n")
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("no notification within 10s of a write")
	}
	stop() // Unwatch: the provider's goroutine ends (goleak checks in TestMain)
}

// writeYAML writes content to path.
func writeYAML(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestSourceEditAddingAnEmptyListOrMapChangesInputHash(t *testing.T) {
	base := func() map[string]any {
		return map[string]any{"clients": map[string]any{
			"billing": map[string]any{"retry": map[string]any{"max_retries": 2}},
		}}
	}
	load := func(tree map[string]any) config.Config {
		t.Helper()
		return mustLoad(t, config.Loader{Sources: []config.Source{mapSource{name: "mem", tree: tree}}})
	}
	before := load(base())

	emptyList := base()
	emptyList["clients"].(map[string]any)["billing"].(map[string]any)["retry"].(map[string]any)["retryable_status"] = []any{}
	emptyClient := base()
	emptyClient["clients"].(map[string]any)["search"] = map[string]any{}

	for name, tree := range map[string]map[string]any{
		"retryable_status: []": emptyList,
		"clients.search: {}":   emptyClient,
	} {
		after := load(tree)
		if after.InputHash == before.InputHash {
			t.Errorf("%s: InputHash did not change, so a reload would skip the edit", name)
		}
	}
	// Removing them again (search: {} removed) gives the first hash back.
	if again := load(base()); again.InputHash != before.InputHash {
		t.Fatalf("the same tree hashed differently: %s vs %s", again.InputHash, before.InputHash)
	}
}
