package stores_test

import (
	"context"
	"log"

	"github.com/hashicorp/consul/api"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/consul/v2"
	"github.com/knadh/koanf/providers/s3"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
)

// Consul, one key holding the clients.yaml: koanf's Consul provider has no
// ReadBytes, so KoanfSource reads it through Read and parses the key's
// value; its Watch makes the Source Watchable.
func Example_consulKey() {
	p, err := consul.Provider(consul.Config{Key: "switchboard/clients.yaml", Cfg: api.DefaultConfig()})
	if err != nil {
		log.Fatal(err)
	}
	src := config.KoanfSource("consul:switchboard/clients.yaml", p, yaml.Parser())
	clients, err := factory.Open(context.Background(), factory.Options{File: "clients.yaml", Sources: []config.Source{src}})
	if err != nil {
		log.Fatal(err)
	}
	defer clients.Close()
}

// Consul, one key per setting (consul kv put switchboard/clients/billing/timeout 2s):
// the provider keeps the prefix in its keys and separates levels with "/".
func Example_consulPrefix() {
	p, err := consul.Provider(consul.Config{Key: "switchboard/", Recurse: true, Cfg: api.DefaultConfig()})
	if err != nil {
		log.Fatal(err)
	}
	src := config.KoanfSourceWith("consul:switchboard/", p, nil, config.KoanfOptions{Delim: "/", Path: "switchboard"})
	clients, err := factory.Open(context.Background(), factory.Options{Sources: []config.Source{src}})
	if err != nil {
		log.Fatal(err)
	}
	defer clients.Close()
}

// S3, the clients.yaml as one object: a bytes provider with a parser. It
// cannot watch, so the object is read at each reload but triggers none:
// call Registry.Reload (on SIGHUP, or on a timer).
func Example_s3() {
	p := s3.Provider(s3.Config{Region: "eu-west-1", Bucket: "configs", ObjectKey: "switchboard/clients.yaml"})
	src := config.KoanfSource("s3:configs/switchboard/clients.yaml", p, yaml.Parser())
	clients, err := factory.Open(context.Background(), factory.Options{Sources: []config.Source{src}})
	if err != nil {
		log.Fatal(err)
	}
	defer clients.Close()
}
