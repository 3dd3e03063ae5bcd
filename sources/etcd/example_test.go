package etcdsource_test

import (
	"context"
	"log"
	"time"

	"github.com/knadh/koanf/parsers/yaml"
	koanfetcd "github.com/knadh/koanf/providers/etcd/v2"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	etcdsource "github.com/switchboard-http/switchboard/sources/etcd"
)

// The whole clients.yaml under one key, layered over the local file and
// under env and flags; every process reloads on each put.
//
//	etcdctl put /switchboard/clients.yaml "$(cat shared.yaml)"
func ExampleKey() {
	ctx := context.Background()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}, DialTimeout: 5 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close() // after clients.Close, which stops the watch

	src := etcdsource.Key(cli, "/switchboard/clients.yaml", etcdsource.Options{ReadTimeout: time.Second})
	clients, err := factory.Open(ctx, factory.Options{
		File: "clients.yaml", Sources: []config.Source{src}, EnvPrefix: "SWITCHBOARD_",
	})
	if err != nil {
		log.Fatal(err) // names the key: "etcd key /switchboard/clients.yaml: …"
	}
	defer clients.Close()
	_ = clients.Get("billing")
}

// One key per setting under a prefix:
//
//	etcdctl put /switchboard/clients/billing/retry/max_retries 5
//	etcdctl put /switchboard/clients/billing/timeout 2s
func ExamplePrefix() {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}, DialTimeout: 5 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()
	src := etcdsource.Prefix(cli, "/switchboard/", etcdsource.Options{})
	clients, err := factory.Open(context.Background(), factory.Options{Sources: []config.Source{src}})
	if err != nil {
		log.Fatal(err)
	}
	defer clients.Close()
}

// koanf's own etcd provider works through config.KoanfSource too, but its
// watch cannot be stopped and it never closes its client (prefer Key or
// Prefix); its DialTimeout is also its read timeout, so set one.
func ExampleKey_koanfProvider() {
	p, err := koanfetcd.Provider(koanfetcd.Config{
		Endpoints: []string{"127.0.0.1:2379"}, DialTimeout: 2 * time.Second, Key: "/switchboard/clients.yaml",
	})
	if err != nil {
		log.Fatal(err)
	}
	src := config.KoanfSource("etcd:/switchboard/clients.yaml", p, yaml.Parser())
	clients, err := factory.Open(context.Background(), factory.Options{Sources: []config.Source{src}})
	if err != nil {
		log.Fatal(err)
	}
	defer clients.Close()
}
