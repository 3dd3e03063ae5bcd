package config_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/rawbytes"

	"github.com/switchboard-http/switchboard/config"
)

// kvProvider is a koanf provider shaped like koanf's etcd and Consul
// providers: Read returns the store's keys as they are, ReadBytes fails,
// and Watch, when watch is set, calls back on every change.
type kvProvider struct {
	mu      sync.Mutex
	kv      map[string]any
	err     error
	watch   bool
	cb      func(event any, err error)
	unwatch int
}

func (p *kvProvider) ReadBytes() ([]byte, error) {
	return nil, errors.New("kv provider does not support this method")
}

func (p *kvProvider) Read() (map[string]any, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return nil, p.err
	}
	out := make(map[string]any, len(p.kv))
	for k, v := range p.kv {
		out[k] = v
	}
	return out, nil
}

func (p *kvProvider) set(key string, v any) {
	p.mu.Lock()
	p.kv[key] = v
	cb := p.cb
	p.mu.Unlock()
	if cb != nil {
		cb(key, nil)
	}
}

// watchingKV is a kvProvider with koanf's Watch and Unwatch methods.
type watchingKV struct{ *kvProvider }

func (p watchingKV) Watch(cb func(event any, err error)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cb = cb
	return nil
}

func (p watchingKV) Unwatch() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.unwatch++
	p.cb = nil
	return nil
}

func TestKoanfSourceNestsFlatKeys(t *testing.T) {
	tests := []struct {
		name string
		kv   map[string]any
		opts config.KoanfOptions
	}{
		{"flat dotted keys, as koanf's etcd provider returns them", map[string]any{
			"clients.billing.retry.max_retries": "6",
			"clients.billing.timeout":           "3s",
		}, config.KoanfOptions{}},
		{"flat keys inside a nested section", map[string]any{
			"clients": map[string]any{"billing.retry.max_retries": 6, "billing": map[string]any{"timeout": "3s"}},
		}, config.KoanfOptions{}},
		{"keys under a prefix the provider keeps", map[string]any{
			"switchboard.clients.billing.retry.max_retries": "6",
			"switchboard.clients.billing.timeout":           "3s",
			"other-app.clients.x":                           "ignored",
		}, config.KoanfOptions{Path: "switchboard"}},
		{"slash-separated etcd keys", map[string]any{
			"/switchboard/clients/billing/retry/max_retries": "6",
			"/switchboard/clients/billing/timeout":           "3s",
		}, config.KoanfOptions{Delim: "/", Path: "/switchboard"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &kvProvider{kv: tt.kv}
			src := config.KoanfSourceWith("kv", p, nil, tt.opts)
			cfg := mustLoad(t, config.Loader{Sources: []config.Source{src}})
			billing := client(t, cfg, "billing")
			if billing.Retry.MaxRetries != 6 || billing.Timeout.String() != "3s" {
				t.Fatalf("billing: got max_retries %d, timeout %v; want 6 and 3s", billing.Retry.MaxRetries, billing.Timeout)
			}
			if len(cfg.Clients) != 1 {
				t.Fatalf("clients: got %v, want [billing]", keys(cfg.Clients))
			}
			if _, ok := src.(config.Watchable); ok {
				t.Fatal("a provider without Watch gave a Watchable Source")
			}
		})
	}
}

func TestKoanfSourceReadsADocumentThroughRead(t *testing.T) {
	p := &kvProvider{kv: map[string]any{
		"/switchboard/clients.yaml": "clients:\n  billing:\n    retry: {max_retries: 4}\n",
	}}
	src := config.KoanfSource("etcd:/switchboard/clients.yaml", p, yaml.Parser())
	cfg := mustLoad(t, config.Loader{Sources: []config.Source{src}})
	if got := client(t, cfg, "billing").Retry.MaxRetries; got != 4 {
		t.Fatalf("max_retries: got %d, want 4", got)
	}
	o, _ := cfg.Provenance.Of("billing", "retry.max_retries")
	if o.Layer != config.LayerSource || o.Name != "etcd:/switchboard/clients.yaml" {
		t.Fatalf("provenance: got %+v, want source etcd:/switchboard/clients.yaml", o)
	}

	// Once Read served the document, a failing Read is reported as it is.
	p.err = errors.New("context deadline exceeded")
	mustFail(t, config.Loader{Sources: []config.Source{src}}, "config source etcd:/switchboard/clients.yaml: context deadline exceeded")

	// Bad YAML names the key it came from.
	p.err = nil
	p.kv["/switchboard/clients.yaml"] = "clients: [unclosed"
	err := mustFail(t, config.Loader{Sources: []config.Source{src}}, "key /switchboard/clients.yaml: ")
	if !errors.Is(err, config.ErrSourceContent) {
		t.Fatalf("bad YAML: got %v, want an error matching ErrSourceContent", err)
	}

	// An empty document is rejected like an empty file (a put of "" would
	// silently drop the shared tuning), naming the key.
	p.kv["/switchboard/clients.yaml"] = "  \n"
	if err := mustFail(t, config.Loader{Sources: []config.Source{src}}, "key /switchboard/clients.yaml is empty"); !errors.Is(err, config.ErrSourceContent) {
		t.Fatalf("empty document: got %v, want an error matching ErrSourceContent", err)
	}
}

// A document's keys are the file's: a route pattern or header name that
// holds the delimiter is not split, through a parser as in the file.
func TestKoanfSourceKeepsDotsInADocument(t *testing.T) {
	doc := "clients:\n  billing:\n    headers: {X-Api.Version: \"2\"}\n    routes:\n      \"GET /v1/report.csv\": {timeout: 5s}\n"
	src := config.KoanfSource("s3", rawbytes.Provider([]byte(doc)), yaml.Parser())
	cfg := mustLoad(t, config.Loader{Sources: []config.Source{src}})
	c := client(t, cfg, "billing")
	if c.Headers["X-Api.version"] != "2" { // canonicalised as the file's, not split
		t.Fatalf("header: got %v, want X-Api.version: 2", c.Headers)
	}
	if r, ok := c.Routes["GET /v1/report.csv"]; !ok || r.Timeout != 5*time.Second {
		t.Fatalf("routes: got %v, want GET /v1/report.csv with timeout 5s", c.Routes)
	}
}

func TestKoanfSourceReportsBothReadErrors(t *testing.T) {
	p := &kvProvider{err: errors.New("connection refused")}
	src := config.KoanfSource("kv", p, yaml.Parser())
	err := mustFail(t, config.Loader{Sources: []config.Source{src}},
		"config source kv: kv provider does not support this method; through Read: connection refused")
	if errors.Is(err, config.ErrSourceContent) {
		t.Fatalf("unreachable store: got %v matching ErrSourceContent, want not", err)
	}
	// A key that is missing is no document.
	p.err = nil
	p.kv = map[string]any{}
	mustFail(t, config.Loader{Sources: []config.Source{src}}, "provider returned no key to parse")
}

func TestKoanfSourceBytesProvider(t *testing.T) {
	src := config.KoanfSource("s3", rawbytes.Provider([]byte("clients:\n  billing:\n    timeout: 7s\n")), yaml.Parser())
	cfg := mustLoad(t, config.Loader{Sources: []config.Source{src}})
	if got := client(t, cfg, "billing").Timeout.String(); got != "7s" {
		t.Fatalf("timeout: got %s, want 7s", got)
	}
}

func TestKoanfSourceFlatUnknownKeyIsNamed(t *testing.T) {
	src := config.KoanfSource("kv", confmap.Provider(map[string]any{
		"clients.billing.retry.max_retires": "2",
	}, ""), nil)
	mustFail(t, config.Loader{Sources: []config.Source{src}},
		"source kv: clients.billing.retry.max_retires: unknown key; did you mean max_retries?")
}

func TestKoanfSourceWatchesAProviderWithWatch(t *testing.T) {
	p := watchingKV{&kvProvider{kv: map[string]any{"clients.billing.timeout": "1s"}}}
	src := config.KoanfSource("kv", p, nil)
	w, ok := src.(config.Watchable)
	if !ok {
		t.Fatal("a provider with Watch gave a Source that is not Watchable")
	}
	var mu sync.Mutex
	n := 0
	stop, err := w.Watch(func() { mu.Lock(); n++; mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	p.set("clients.billing.timeout", "2s")
	mu.Lock()
	got := n
	mu.Unlock()
	if got != 1 {
		t.Fatalf("notifications after one set: got %d, want 1", got)
	}
	stop()
	if p.unwatch != 1 {
		t.Fatalf("Unwatch calls after stop: got %d, want 1", p.unwatch)
	}
	cfg := mustLoad(t, config.Loader{Sources: []config.Source{src}})
	if got := client(t, cfg, "billing").Timeout.String(); got != "2s" {
		t.Fatalf("timeout: got %s, want 2s", got)
	}
}
