package etcdsource_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/config"
	etcdsource "github.com/switchboard-http/switchboard/sources/etcd"
)

const doc = `defaults:
  timeout: 10s
clients:
  billing:
    retry: {max_retries: 5, retryable_status: [502, 503]}
`

func load(t *testing.T, srcs ...config.Source) config.Config {
	t.Helper()
	cfg, err := config.Loader{Sources: srcs}.Load()
	if err != nil {
		t.Fatalf("Load: got %v, want nil", err)
	}
	return cfg
}

func loadErr(t *testing.T, src config.Source, wants ...string) {
	t.Helper()
	_, err := config.Loader{Sources: []config.Source{src}}.Load()
	if err == nil {
		t.Fatalf("Load: got nil error, want one containing %q", wants)
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Load error %q: got no %q, want it", err, w)
		}
	}
}

func TestKeyReadsOneYAMLDocument(t *testing.T) {
	srv := startEtcd(t)
	cli := newClient(t, srv)
	put(t, cli, "/switchboard/clients.yaml", doc)

	src := etcdsource.Key(cli, "/switchboard/clients.yaml", etcdsource.Options{})
	if got, want := src.Name(), "etcd:/switchboard/clients.yaml"; got != want {
		t.Fatalf("Name: got %q, want %q", got, want)
	}
	cfg := load(t, src)
	billing, _ := cfg.Client("billing")
	if billing.Retry.MaxRetries != 5 || billing.Timeout != 10*time.Second || len(billing.Retry.RetryableStatus) != 2 {
		t.Fatalf("billing: got retry %+v, timeout %v; want the document's", billing.Retry, billing.Timeout)
	}
	want := config.Origin{Layer: config.LayerSource, Name: "etcd:/switchboard/clients.yaml", Path: "clients.billing.retry.max_retries"}
	if got, _ := cfg.Provenance.Of("billing", "retry.max_retries"); got != want {
		t.Fatalf("provenance: got %+v, want %+v", got, want)
	}

	put(t, cli, "/switchboard/clients.yaml", "clients:\n  billing:\n    retry: {max_retries: -1}\n")
	loadErr(t, src, "source etcd:/switchboard/clients.yaml: clients.billing.retry.max_retries: must be >= 0, got -1")
	put(t, cli, "/switchboard/clients.yaml", "clients:\n  billing:\n    retry: {max_retries: [\n")
	loadErr(t, src, "config source etcd:/switchboard/clients.yaml: etcd key /switchboard/clients.yaml (revision ")
	if _, err := src.Read(); !errors.Is(err, config.ErrSourceContent) {
		t.Fatalf("Read of bad YAML: got %v, want an error matching config.ErrSourceContent", err)
	}
	put(t, cli, "/switchboard/clients.yaml", "clients:\n  billing:\n    retry: {max_retires: 2}\n")
	loadErr(t, src, "source etcd:/switchboard/clients.yaml: clients.billing.retry.max_retires: unknown key; did you mean max_retries?")
	put(t, cli, "/switchboard/clients.yaml", "# nothing shared yet\n")
	load(t, src)
	// An empty value is rejected like an empty file, naming the key: a put
	// of "$(cat missing-file)" must not drop the shared tuning.
	put(t, cli, "/switchboard/clients.yaml", "")
	loadErr(t, src, "etcd key /switchboard/clients.yaml (revision ")
	if _, err := src.Read(); !errors.Is(err, config.ErrSourceContent) {
		t.Fatalf("Read of an empty value: got %v, want an error matching config.ErrSourceContent", err)
	}
}

func TestKeyMissing(t *testing.T) {
	srv := startEtcd(t)
	cli := newClient(t, srv)
	loadErr(t, etcdsource.Key(cli, "/switchboard/typo.yaml", etcdsource.Options{}),
		"config source etcd:/switchboard/typo.yaml: etcd key /switchboard/typo.yaml: not found")
	loadErr(t, etcdsource.Prefix(cli, "/nothing/", etcdsource.Options{}), "etcd prefix /nothing/: no key under it")
	cfg := load(t, etcdsource.Key(cli, "/switchboard/typo.yaml", etcdsource.Options{AllowMissing: true, Name: "shared"}))
	if len(cfg.Clients) != 0 {
		t.Fatalf("clients: got %d, want none from a missing key", len(cfg.Clients))
	}
}

func TestPrefixReadsOneKeyPerSetting(t *testing.T) {
	srv := startEtcd(t)
	cli := newClient(t, srv)
	put(t, cli, "/switchboard/clients/billing/retry/max_retries", "4")
	put(t, cli, "/switchboard/clients/billing/retry/retryable_status", "502,503")
	put(t, cli, "/switchboard/clients.search.timeout", "3s") // dotted works too
	put(t, cli, "/switchboard/defaults/timeout", "20s")
	put(t, cli, "/switchboard-old/clients/billing/retry/max_retries", "9") // not under "/switchboard/"

	src := etcdsource.Prefix(cli, "/switchboard/", etcdsource.Options{})
	if got, want := src.Name(), "etcd:/switchboard/"; got != want {
		t.Fatalf("Name: got %q, want %q", got, want)
	}
	cfg := load(t, src)
	billing, _ := cfg.Client("billing")
	search, _ := cfg.Client("search")
	if billing.Retry.MaxRetries != 4 || len(billing.Retry.RetryableStatus) != 2 || billing.Timeout != 20*time.Second {
		t.Fatalf("billing: got retry %+v, timeout %v", billing.Retry, billing.Timeout)
	}
	if search.Timeout != 3*time.Second {
		t.Fatalf("search timeout: got %v, want 3s", search.Timeout)
	}
	if o, _ := cfg.Provenance.Of("billing", "retry.max_retries"); o.Name != "etcd:/switchboard/" {
		t.Fatalf("provenance: got %+v, want source etcd:/switchboard/", o)
	}

	put(t, cli, "/switchboard/clients/billing/retry/max_retries", "lots")
	loadErr(t, src, "clients.billing.retry.max_retries", "source etcd:/switchboard/")
	put(t, cli, "/switchboard/clients/billing/retry/max_retries", "4")
	put(t, cli, "/switchboard/clients/billing/retry", "on")
	loadErr(t, src, "etcd prefix /switchboard/: key /switchboard/clients/billing/retry holds a value, so key /switchboard/clients/billing/retry/")
	if _, err := cli.Delete(context.Background(), "/switchboard/clients/billing/retry"); err != nil {
		t.Fatal(err)
	}
	put(t, cli, "/switchboard/clients//timeout", "1s")
	loadErr(t, src, "key /switchboard/clients//timeout: want a setting path after the prefix")
}

func TestReadIsBoundedByContextAndTimeout(t *testing.T) {
	srv := startEtcd(t)
	cli := newClient(t, srv)
	put(t, cli, "/switchboard/clients.yaml", doc)
	srv.Stop()

	src := etcdsource.Key(cli, "/switchboard/clients.yaml", etcdsource.Options{ReadTimeout: 200 * time.Millisecond})
	start := time.Now()
	_, err := src.Read()
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "etcd key /switchboard/clients.yaml: no answer within 200ms") {
		t.Fatalf("Read with etcd down: got %v, want a DeadlineExceeded naming the key and the timeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Read with etcd down took %v, want about the 200ms ReadTimeout", d)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	long := etcdsource.Key(cli, "/switchboard/clients.yaml", etcdsource.Options{ReadTimeout: time.Hour})
	if _, err := long.ReadContext(ctx); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "etcd key /switchboard/clients.yaml") {
		t.Fatalf("ReadContext past ctx's deadline: got %v, want DeadlineExceeded naming the key", err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := config.ReadSource(ctx2, long); !errors.Is(err, context.Canceled) {
		t.Fatalf("ReadSource with a cancelled ctx: got %v, want context.Canceled", err)
	}

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if _, err := long.ReadContext(context.Background()); err != nil {
		t.Fatalf("Read after restart: got %v, want nil", err)
	}
}
