package middleware

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
)

// Secret is a string that never prints itself: a credential in a settings
// struct (AuthSettings.BearerToken, BasicAuth.Password, and any later
// secret field). It is a named string type, so a string literal assigns to
// it (AuthSettings{BearerToken: "abc"}) and the config decoders (YAML, env,
// flags through koanf and mapstructure) fill it like any string.
//
// Every way of printing it shows Redacted instead of the value: String,
// GoString, Format (every fmt verb and flag: %v, %+v, %#v, %s, %q, %x, %d
// …; a plain string type would print %x as the secret in hex), LogValue
// (slog), MarshalJSON and MarshalText (encoding/json, YAML and other
// TextMarshaler encoders). The struct that holds it prints redacted too,
// as long as the field is exported, as every settings field is. Reveal is
// the one way to read the value. == compares values, so Equal and Hash see
// a changed secret without printing it.
//
// The zero value "" is no secret, and prints as "" (`%q` as `""`), so that
// explain and logs can show that none is set; only the emptiness of a
// secret is ever shown, never any part of a non-empty one. A Secret is a
// plain value, safe for concurrent use.
type Secret string

// Reveal returns the secret value itself. It is the one method that does:
// call it only where the value is used (to build an Authorization header,
// say), never to print or log it.
func (s Secret) Reveal() string { return string(s) }

// String returns Redacted, or "" for the zero Secret.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return Redacted
}

// GoString returns String quoted, a Go string literal: "REDACTED" or "".
// %#v of a struct holding the Secret prints it this way.
func (s Secret) GoString() string { return strconv.Quote(s.String()) }

// Format implements fmt.Formatter: %q (with its flags) quotes String, %#v
// writes GoString, and every other verb writes String, with the width,
// precision and flags of a %s. No verb writes the value or its bytes.
func (s Secret) Format(f fmt.State, verb rune) {
	switch {
	case verb == 'v' && f.Flag('#'):
		_, _ = fmt.Fprint(f, s.GoString())
	case verb == 'q':
		_, _ = fmt.Fprintf(f, fmt.FormatString(f, 'q'), s.String())
	default:
		_, _ = fmt.Fprintf(f, fmt.FormatString(f, 's'), s.String())
	}
}

// LogValue implements slog.LogValuer: the string value String.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalJSON encodes String as a JSON string: "REDACTED" or "".
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// MarshalText returns String, for encoders that take an
// encoding.TextMarshaler (YAML, XML, map keys). There is no UnmarshalText:
// decoders read a Secret as the plain string it is.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }
