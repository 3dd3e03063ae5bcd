package config

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strings"
)

// The types of the file format that can hold a secret print it as
// Redacted, whatever prints them: the secret fields are middleware.Secret,
// a headers map is a Headers and the `transport` block (proxy_url) is a
// TransportConfig, each with Format (every fmt verb and flag), GoString,
// LogValue (slog) and MarshalJSON (encoding/json) writing a copy redacted
// as the key table's redaction column says (redactValue). ClientConfig,
// RouteConfig and Config print through their fields, so they print
// redacted too. The decoders (YAML, env, flags through koanf and
// mapstructure; encoding/json) fill these types as the plain types they
// are: there is no Unmarshal method.

// Headers maps header names to values: the `headers` key of a client or
// route section. It is a map[string]string (one assigns to it, and it
// passes as one) that prints redacted: every fmt verb, GoString, LogValue
// and MarshalJSON show the value of each sensitive header
// (middleware.IsSensitiveHeader: Authorization, Cookie, X-Api-Key, …) as
// Redacted; an empty value stays empty. Index it to read a value. Nil
// means no headers. Safe for concurrent reads; do not change one that was
// handed out.
type Headers map[string]string

// shown returns h as it prints: a redacted copy, as a plain map.
func (h Headers) shown() map[string]string {
	if h == nil {
		return nil
	}
	out := make(map[string]string, len(h))
	for name, v := range h {
		out[name] = redactValue(redactHeaders, name, v)
	}
	return out
}

// Format implements fmt.Formatter: every verb prints the redacted copy as
// it would print a map[string]string, and %#v writes GoString.
func (h Headers) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = io.WriteString(f, h.GoString())
		return
	}
	_, _ = fmt.Fprintf(f, fmt.FormatString(f, verb), h.shown())
}

// GoString returns the redacted copy as a Go literal:
// config.Headers{"Authorization":"REDACTED"}.
func (h Headers) GoString() string {
	if h == nil {
		return "config.Headers(nil)"
	}
	return "config.Headers" + strings.TrimPrefix(fmt.Sprintf("%#v", h.shown()), "map[string]string")
}

// LogValue implements slog.LogValuer: the redacted copy.
func (h Headers) LogValue() slog.Value { return slog.AnyValue(h.shown()) }

// MarshalJSON encodes the redacted copy as a JSON object (null for nil).
func (h Headers) MarshalJSON() ([]byte, error) { return json.Marshal(h.shown()) }

// transportFields is TransportConfig without its methods, so that fmt and
// encoding/json print a redacted copy field by field.
type transportFields TransportConfig

// transportSection is the key table's node of the `transport` block.
var transportSection = clientSchema.children["transport"]

// shown returns t as it prints: a copy with every leaf the key table
// marks redacted (proxy_url's userinfo and sensitive query values).
func (t TransportConfig) shown() transportFields {
	v := reflect.ValueOf(&t).Elem()
	for _, l := range transportSection.children {
		l.redactField(v.FieldByIndex(l.index[len(transportSection.index):]))
	}
	return transportFields(t)
}

// Format implements fmt.Formatter: every verb prints the redacted copy as
// it would print the struct, and %#v writes GoString.
func (t TransportConfig) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = io.WriteString(f, t.GoString())
		return
	}
	_, _ = fmt.Fprintf(f, fmt.FormatString(f, verb), t.shown())
}

// GoString returns the redacted copy as a Go literal:
// config.TransportConfig{…, ProxyURL:"http://REDACTED@proxy:3128", …}.
func (t TransportConfig) GoString() string {
	return "config.TransportConfig" + strings.TrimPrefix(fmt.Sprintf("%#v", t.shown()), "config.transportFields")
}

// LogValue implements slog.LogValuer: the redacted copy.
func (t TransportConfig) LogValue() slog.Value { return slog.AnyValue(t.shown()) }

// MarshalJSON encodes the redacted copy with the block's json keys.
func (t TransportConfig) MarshalJSON() ([]byte, error) { return json.Marshal(t.shown()) }
