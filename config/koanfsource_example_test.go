package config_test

import (
	"errors"
	"fmt"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/rawbytes"

	"github.com/switchboard-http/switchboard/config"
)

// show loads src alone and prints billing's max_retries and where it came
// from.
func show(src config.Source) {
	cfg, err := config.Loader{Sources: []config.Source{src}}.Load()
	if err != nil {
		fmt.Println(err)
		return
	}
	c, _ := cfg.Client("billing")
	o, _ := cfg.Provenance.Of("billing", "retry.max_retries")
	fmt.Printf("max_retries %d from %s %s\n", c.Retry.MaxRetries, o.Layer, o.Name)
}

// A bytes provider with a parser: a clients.yaml kept as one object or key
// (S3, a Consul key, here koanf's rawbytes).
func ExampleKoanfSource_bytes() {
	doc := []byte("clients:\n  billing:\n    retry: {max_retries: 5}\n")
	show(config.KoanfSource("s3:configs/clients.yaml", rawbytes.Provider(doc), yaml.Parser()))
	// Output:
	// max_retries 5 from source s3:configs/clients.yaml
}

// A tree provider with flat keys, one per setting, as koanf's etcd and
// Consul providers return them (here koanf's confmap, which with delimiter
// "" keeps its keys flat): they are nested on ".".
func ExampleKoanfSource_flatKeys() {
	kv := confmap.Provider(map[string]any{
		"clients.billing.retry.max_retries": "4", // text, as stores hold it
		"clients.billing.timeout":           "2s",
	}, "")
	show(config.KoanfSource("consul:switchboard", kv, nil))
	// Output:
	// max_retries 4 from source consul:switchboard
}

// Keys under a prefix that the provider keeps in what it returns: Path
// selects the section, Delim splits the keys.
func ExampleKoanfSourceWith() {
	kv := confmap.Provider(map[string]any{
		"/switchboard/clients/billing/retry/max_retries": "3",
		"/other-app/feature":                             "on",
	}, "")
	show(config.KoanfSourceWith("etcd:/switchboard/", kv, nil, config.KoanfOptions{Delim: "/", Path: "/switchboard"}))
	// Output:
	// max_retries 3 from source etcd:/switchboard/
}

// oneKey is shaped like koanf's etcd provider reading one key: ReadBytes
// fails, Read returns {key: value}.
type oneKey struct{ key, value string }

func (p oneKey) ReadBytes() ([]byte, error)    { return nil, errors.New("not supported") }
func (p oneKey) Read() (map[string]any, error) { return map[string]any{p.key: p.value}, nil }

// A tree provider holding one document, with a parser: read through Read,
// the key's value is the YAML the parser reads.
func ExampleKoanfSource_documentThroughRead() {
	p := oneKey{"/switchboard/clients.yaml", "clients:\n  billing:\n    retry: {max_retries: 2}\n"}
	show(config.KoanfSource("etcd:/switchboard/clients.yaml", p, yaml.Parser()))
	// Output:
	// max_retries 2 from source etcd:/switchboard/clients.yaml
}

// watching is a provider with koanf's Watch method; change calls back as a
// store's watch would.
type watching struct {
	oneKey
	cb func(event any, err error)
}

func (p *watching) Watch(cb func(event any, err error)) error { p.cb = cb; return nil }

// A provider with a Watch method gives a Watchable Source: factory.Open
// watches it and reloads on every event.
func ExampleKoanfSource_watch() {
	p := &watching{oneKey: oneKey{"clients.yaml", "clients: {billing: {}}\n"}}
	src := config.KoanfSource("kv", p, yaml.Parser())
	w := src.(config.Watchable)
	stop, _ := w.Watch(func() { fmt.Println("reload due") })
	p.cb("put clients.yaml", nil)
	stop()
	p.cb("put clients.yaml", nil) // after stop: no notification
	// Output:
	// reload due
}
