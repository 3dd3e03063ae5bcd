package middleware_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/switchboard-http/switchboard/middleware"
)

func TestSecretPrintsRedactedInEveryForm(t *testing.T) {
	const value = "s3cr3t-value"
	s := middleware.Secret(value)
	settings := middleware.AuthSettings{Host: "api.test", BearerToken: value, Basic: middleware.BasicAuth{Username: "u", Password: value}}
	jsonOf := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	yamlOf := func(v any) string {
		b, err := yaml.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	logOf := func(h func(*bytes.Buffer) slog.Handler, args ...any) string {
		var buf bytes.Buffer
		slog.New(h(&buf)).Info("x", args...)
		return buf.String()
	}
	jsonH := func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) }
	textH := func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) }
	tests := []struct {
		name, got, want string // want "" = only: holds no secret
	}{
		{"String", s.String(), "REDACTED"},
		{"GoString", s.GoString(), `"REDACTED"`},
		{"%v", fmt.Sprintf("%v", s), "REDACTED"},
		{"%+v", fmt.Sprintf("%+v", s), "REDACTED"},
		{"%#v", fmt.Sprintf("%#v", s), `"REDACTED"`},
		{"%s", fmt.Sprintf("%s", s), "REDACTED"},
		{"%q", fmt.Sprintf("%q", s), `"REDACTED"`},
		{"%x", fmt.Sprintf("%x", s), "REDACTED"},
		{"%X", fmt.Sprintf("%X", s), "REDACTED"},
		{"% x", fmt.Sprintf("% x", s), "REDACTED"},
		{"%d", fmt.Sprintf("%d", s), "REDACTED"},
		{"%10s", fmt.Sprintf("%10s", s), "  REDACTED"},
		{"%v of pointer", fmt.Sprintf("%v", &s), ""},
		{"Sprint", fmt.Sprint(s), "REDACTED"},
		{"Sprintln", fmt.Sprintln(s), "REDACTED\n"},
		{"json", jsonOf(s), `"REDACTED"`},
		{"yaml", yamlOf(s), "REDACTED\n"},
		{"slog json", logOf(jsonH, "s", s), ""},
		{"slog text", logOf(textH, slog.Any("s", s)), ""},
		{"settings %v", fmt.Sprintf("%v", settings), "{api.test REDACTED  {u REDACTED }}"},
		{"settings %+v", fmt.Sprintf("%+v", settings), ""},
		{"settings %#v", fmt.Sprintf("%#v", settings), ""},
		{"settings %x", fmt.Sprintf("%x", settings), ""},
		{"settings json", jsonOf(settings), ""},
		{"settings yaml", yamlOf(settings), ""},
		{"settings slog json", logOf(jsonH, "a", settings), ""},
		{"settings slog text", logOf(textH, "a", settings), ""},
	}
	hex := fmt.Sprintf("%x", value)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if strings.Contains(tt.got, value) || strings.Contains(strings.ToLower(tt.got), hex) || strings.Contains(tt.got, "s3cr3t") {
				t.Fatalf("got %q, which holds the secret", tt.got)
			}
			if tt.want != "" && tt.got != tt.want {
				t.Fatalf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
}

func TestSecretZeroPrintsEmpty(t *testing.T) {
	var s middleware.Secret
	b, _ := json.Marshal(s)
	tests := []struct{ name, got, want string }{
		{"String", s.String(), ""},
		{"%v", fmt.Sprintf("%v", s), ""},
		{"%q", fmt.Sprintf("%q", s), `""`},
		{"%#v", fmt.Sprintf("%#v", s), `""`},
		{"json", string(b), `""`},
		{"Reveal", s.Reveal(), ""},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

func TestSecretRevealReturnsTheValue(t *testing.T) {
	a := middleware.AuthSettings{BearerToken: "abc"} // assignable from a literal
	if got := a.BearerToken.Reveal(); got != "abc" {
		t.Fatalf("got %q, want %q", got, "abc")
	}
	var decoded middleware.AuthSettings
	if err := json.Unmarshal([]byte(`{"bearer_token":"from-json"}`), &decoded); err != nil {
		t.Fatal(err)
	}
	if got := decoded.BearerToken.Reveal(); got != "from-json" {
		t.Fatalf("json decode: got %q, want %q", got, "from-json")
	}
}

// A Credential shows no secret through the encoders that honour
// encoding.TextMarshaler either (YAML, XML).
func TestCredentialTextMarshalsRedacted(t *testing.T) {
	c := middleware.Credential{Bearer: "tok-SEKRIT", Username: "u", Password: "pw-SEKRIT"}
	b, err := c.MarshalText()
	if err != nil || strings.Contains(string(b), "SEKRIT") {
		t.Fatalf("MarshalText: got %q, %v; want no secret", b, err)
	}
	type doc struct {
		C middleware.Credential
	}
	x, err := xml.Marshal(doc{c})
	if err != nil || strings.Contains(string(x), "SEKRIT") {
		t.Fatalf("xml.Marshal: got %q, %v; want no secret", x, err)
	}
}
