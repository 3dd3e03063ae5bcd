// Package stores holds, as compiled examples, docs/reload.md's snippets that
// layer switchboard over Consul and S3 through config.KoanfSource and
// koanf's own providers. It is a module of its own, so that the main
// module does not depend on those providers. The snippets are compiled
// (go vet, go test) but not run: no Consul or S3 server is started here.
package stores
