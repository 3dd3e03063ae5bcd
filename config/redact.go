package config

import (
	"fmt"
	"reflect"

	"github.com/switchboard-http/switchboard/middleware"
)

// redaction is the key table's column saying how a key's value is hidden
// wherever it is shown (Settings, ChangedKeys, Redacted, the group
// conflict messages) and whether an error may quote it (field.holdsSecret).
// It is read from the field's secret tag: secret:"true", "headers" or "url".
type redaction uint8

const (
	redactNone    redaction = iota // shown as it is
	redactSecret                   // secret:"true": the whole value is Redacted
	redactHeaders                  // secret:"headers": a header map, each sensitive header's value Redacted
	redactURL                      // secret:"url": a URL's userinfo and sensitive query values Redacted
)

// redactionOf returns the redaction a secret tag names.
func redactionOf(tag string) redaction {
	switch tag {
	case "":
		return redactNone
	case "true":
		return redactSecret
	case "headers":
		return redactHeaders
	case "url":
		return redactURL
	}
	panic(fmt.Sprintf("config: unknown secret tag %q", tag))
}

// redactValue returns s, a value of a key redacted by how (for
// redactHeaders, the value of header name), as output shows it: the one
// decision of what of a value may be shown. An empty value stays empty, so
// that "none set" shows.
func redactValue(how redaction, name, s string) string {
	if s == "" {
		return s
	}
	switch how {
	case redactSecret:
		return Redacted
	case redactHeaders:
		if middleware.IsSensitiveHeader(name) {
			return Redacted
		}
	case redactURL:
		// The userinfo reads REDACTED@: a configured credential shows.
		return middleware.RedactProxyURL(s)
	}
	return s
}

// redactField replaces fv, the value of leaf l, as redactValue says; a
// map is replaced by a redacted copy, never changed.
func (l *field) redactField(fv reflect.Value) {
	switch {
	case l.redact == redactNone:
	case l.kind == kindStringMap:
		fv.Set(reflect.ValueOf(Headers(stringMapOf(fv)).shown()).Convert(fv.Type())) // the one map: headers
	default:
		fv.SetString(redactValue(l.redact, "", fv.String()))
	}
}

// Redacted returns a copy of c as output shows it: every value of a key
// the key table marks as secret-bearing replaced, in c's routes too — the
// secret fields (auth.bearer_token, auth.basic.password) by Redacted, the
// values of sensitive headers (middleware.IsSensitiveHeader) by Redacted,
// and transport.proxy_url's userinfo and sensitive query values
// (middleware.RedactProxyURL). An empty value stays empty. Its maps are
// its own; c is not changed. Use it for display only: its secrets read
// "REDACTED". It is safe for concurrent use.
func (c ClientConfig) Redacted() ClientConfig {
	v := reflect.ValueOf(&c).Elem()
	for _, l := range keyTable {
		l.redactField(l.valueOf(v))
	}
	if c.Routes != nil {
		routes := make(map[string]RouteConfig, len(c.Routes))
		for p, r := range c.Routes {
			routes[p] = routeOf(r.Client(ClientConfig{}).Redacted())
		}
		c.Routes = routes
	}
	return c
}

// Redacted returns a copy of c with its defaults and every client
// redacted as ClientConfig.Redacted does; Provenance, Files and InputHash
// are shared. It is safe for concurrent use.
func (c Config) Redacted() Config {
	c.Defaults = c.Defaults.Redacted()
	if c.Clients != nil {
		clients := make(map[string]ClientConfig, len(c.Clients))
		for name, cc := range c.Clients {
			clients[name] = cc.Redacted()
		}
		c.Clients = clients
	}
	return c
}
