package etcdsource_test

import (
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/knadh/koanf/parsers/yaml"
	koanfetcd "github.com/knadh/koanf/providers/etcd/v2"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/switchboard-http/switchboard/config"
)

// koanfProvider returns koanf's etcd provider for cfg. The provider has no
// Close and never closes the client it makes, whose goroutines would fail
// this module's leak check; the cleanup closes that client through
// reflection, which no application should need to do (use this module's
// Source instead).
func koanfProvider(t *testing.T, cfg koanfetcd.Config) *koanfetcd.Etcd {
	t.Helper()
	p, err := koanfetcd.Provider(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f := reflect.ValueOf(p).Elem().FieldByName("client")
		cli := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(*clientv3.Client)
		cli.Close()
	})
	return p
}

// koanf's own etcd provider works through config.KoanfSource, for one key
// holding YAML and for flat keys under a prefix. (Its DialTimeout is also
// its read timeout, so it must not be 0.)
func TestKoanfEtcdProviderThroughKoanfSource(t *testing.T) {
	srv := startEtcd(t)
	cli := newClient(t, srv)
	put(t, cli, "/switchboard/clients.yaml", doc)
	put(t, cli, "switchboard.clients.billing.retry.max_retries", "7")
	put(t, cli, "switchboard.clients.search.timeout", "4s")

	one := config.KoanfSource("etcd:/switchboard/clients.yaml", koanfProvider(t, koanfetcd.Config{
		Endpoints: []string{srv.Endpoint()}, DialTimeout: 5 * time.Second, Key: "/switchboard/clients.yaml",
	}), yaml.Parser())
	cfg := load(t, one)
	if billing, _ := cfg.Client("billing"); billing.Retry.MaxRetries != 5 || billing.Timeout != 10*time.Second {
		t.Fatalf("one key: got billing retry %+v, timeout %v; want the document's", billing.Retry, billing.Timeout)
	}
	if _, ok := one.(config.Watchable); !ok {
		t.Fatal("koanf's etcd provider has Watch, yet the Source is not Watchable")
	}

	flat := config.KoanfSourceWith("etcd:switchboard.", koanfProvider(t, koanfetcd.Config{
		Endpoints: []string{srv.Endpoint()}, DialTimeout: 5 * time.Second, Key: "switchboard.", Prefix: true,
	}), nil, config.KoanfOptions{Path: "switchboard"})
	cfg = load(t, flat)
	billing, _ := cfg.Client("billing")
	search, _ := cfg.Client("search")
	if billing.Retry.MaxRetries != 7 || search.Timeout != 4*time.Second {
		t.Fatalf("prefix: got billing max_retries %d, search timeout %v; want 7 and 4s", billing.Retry.MaxRetries, search.Timeout)
	}
	if o, _ := cfg.Provenance.Of("billing", "retry.max_retries"); o.Name != "etcd:switchboard." || o.Layer != config.LayerSource {
		t.Fatalf("provenance: got %+v", o)
	}

	// Its Watch calls back on a put.
	c := newCounter()
	stop, err := flat.(config.Watchable).Watch(c.notify)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	deadline := time.Now().Add(10 * time.Second)
	for c.count() == 0 { // its watch starts asynchronously, from the current revision
		if time.Now().After(deadline) {
			t.Fatal("no notification within 10s of puts")
		}
		put(t, cli, "switchboard.clients.billing.retry.max_retries", "8")
		select {
		case <-c.ch:
		case <-time.After(200 * time.Millisecond):
		}
	}
}
