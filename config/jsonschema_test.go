package config_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/switchboard-http/switchboard/config"
)

var updateReference = flag.Bool("update", false, "rewrite the reference block of ../docs/reference.md")

const (
	referencePath  = "../docs/reference.md"
	referenceStart = "<!-- reference:start -->"
	referenceEnd   = "<!-- reference:end -->"
)

// TestReferenceInDocs fails when docs/reference.md's key reference differs
// from config.Reference(). go test ./config -run Reference -update refreshes it.
func TestReferenceInDocs(t *testing.T) {
	b, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, referenceStart)
	end := strings.Index(doc, referenceEnd)
	if start < 0 || end < start {
		t.Fatalf("docs/reference.md: got no %s … %s block, want one", referenceStart, referenceEnd)
	}
	want := referenceStart + "\n" + config.Reference() + referenceEnd
	got := doc[start : end+len(referenceEnd)]
	if got == want {
		return
	}
	if *updateReference {
		if err := os.WriteFile(referencePath, []byte(doc[:start]+want+doc[end+len(referenceEnd):]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/reference.md's reference block differs from config.Reference(); run: go test ./config -run Reference -update\ngot:\n%s\nwant:\n%s", got, want)
}

func TestKeysDocumented(t *testing.T) {
	keys := config.Keys()
	if len(keys) < 50 {
		t.Fatalf("Keys: got %d, want every key of the format (50+)", len(keys))
	}
	for _, k := range keys {
		if k.Doc == "" || k.Type == "" || k.Default == "" {
			t.Errorf("key %s: got doc %q, type %q, default %q; want all set", k.Path, k.Doc, k.Type, k.Default)
		}
	}
}

// TestKeysAllowedAgreesWithValidate sets each key, through the flag layer,
// to the edge values its Allowed text names and checks that Load accepts
// the ones inside and rejects the ones outside, on that key's path: the
// schema's tags and Validate cannot drift apart.
func TestKeysAllowedAgreesWithValidate(t *testing.T) {
	for _, k := range config.Keys() {
		switch k.Path {
		case "retry.retryable_methods", "retry.idempotency_key.methods", "transport.proxy_url", "auth.host", "headers", "base_url", "coalesce.methods", "coalesce.vary_headers":
			continue // syntax, not a range: covered by the schema tests and validate_test.go
		}
		if k.Allowed == "" {
			continue
		}
		good, bad := edges(t, k)
		path := "defaults." + k.Path
		for _, v := range good {
			t.Run(k.Path+"="+v, func(t *testing.T) {
				// Another key may object (initial_backoff > max_backoff); this one may not.
				_, err := (config.Loader{Flags: flagSet(t, nil, "--set", path+"="+v)}).Load()
				if err != nil && strings.Contains(err.Error(), path+":") {
					t.Errorf("Load: got %v, want no error on %s (Allowed %q)", err, path, k.Allowed)
				}
			})
		}
		for _, v := range bad {
			t.Run(k.Path+"="+v, func(t *testing.T) {
				_, err := (config.Loader{Flags: flagSet(t, nil, "--set", path+"="+v)}).Load()
				if err == nil || !strings.Contains(err.Error(), path) {
					t.Errorf("Load: got %v, want an error on %s (Allowed %q)", err, path, k.Allowed)
				}
			})
		}
	}
}

// edges returns values inside and outside k's Allowed range or enumeration.
func edges(t *testing.T, k config.Key) (good, bad []string) {
	t.Helper()
	a := k.Allowed
	switch {
	case strings.Contains(a, " | "):
		good := strings.Split(a, " | ")
		for i, v := range good {
			if v == `""` { // the empty value, as --set writes it
				good[i] = ""
			}
		}
		return good, []string{"bogus"}
	case k.Type == "duration" && a == ">= 0":
		return []string{"0s", "1ms"}, []string{"-1ms"}
	case k.Type == "duration" && a == "> 0":
		return []string{"1ms"}, []string{"0s", "-1ms"}
	case strings.HasPrefix(a, ">= "):
		n := strings.TrimPrefix(a, ">= ")
		var lo int
		fmt.Sscan(n, &lo)
		return []string{n}, []string{fmt.Sprint(lo - 1)}
	case a == "[0, 1)":
		return []string{"0", "0.99"}, []string{"1", "-0.1"}
	case a == "0 or >= 1":
		return []string{"0", "1", "2.5"}, []string{"0.5", "-1"}
	case a == "(0, 1]":
		return []string{"0.01", "1"}, []string{"0", "1.01"}
	case a == "100..599" && k.Type == "list of integers":
		return []string{"100,599"}, []string{"99", "600"}
	case a == "100..599":
		return []string{"100", "599"}, []string{"99", "600"}
	case a == "200..599":
		return []string{"200", "599"}, []string{"199", "600"}
	case a == "0..100":
		return []string{"0", "12.5", "100"}, []string{"-1", "100.5"}
	case a == "header name":
		return []string{"", "X-Request-Timeout-Ms", "grpc-timeout"}, []string{"bad header", "X-a:b"}
	}
	t.Fatalf("key %s: no edges for Allowed %q", k.Path, a)
	return nil, nil
}

func TestJSONSchemaIsJSON(t *testing.T) {
	var s map[string]any
	if err := json.Unmarshal(config.JSONSchema(), &s); err != nil {
		t.Fatalf("JSONSchema: got invalid JSON: %v", err)
	}
	if got := s["$schema"]; got != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema: got %v, want draft 2020-12", got)
	}
	props := s["$defs"].(map[string]any)["client"].(map[string]any)["properties"].(map[string]any)
	retry := props["retry"].(map[string]any)["properties"].(map[string]any)
	if got := retry["max_retries"].(map[string]any)["default"]; got != float64(3) {
		t.Errorf("retry.max_retries default: got %v, want 3", got)
	}
}

func TestSettingsRedactSecrets(t *testing.T) {
	c := config.Default()
	c.Auth.Host = "billing.internal"
	c.Auth.BearerToken = "tok-s3cr3t"
	c.Auth.Basic.Password = "pw-s3cr3t"
	c.Headers = map[string]string{"X-Api-Key": "hdr-s3cr3t", "User-Agent": "svc/1.0"}
	c.Transport.ProxyURL = "http://user:url-s3cr3t@proxy:3128/?api_key=q-s3cr3t&zone=eu"

	got := map[string]config.Setting{}
	for _, s := range c.Settings() {
		got[s.Key] = s
		if strings.Contains(s.Text, "s3cr3t") || strings.Contains(fmt.Sprint(s.Value), "s3cr3t") {
			t.Errorf("Settings %s: got %q, want no secret", s.Key, s.Text)
		}
	}
	tests := []struct {
		key, want string
		redacted  bool
	}{
		{"auth.bearer_token", config.Redacted, true},
		{"auth.basic.password", config.Redacted, true},
		{"auth.bearer_token_file", `""`, false},
		{"headers.X-Api-Key", config.Redacted, true},
		{"headers.User-Agent", "svc/1.0", false},
		{"transport.proxy_url", "http://REDACTED@proxy:3128/?api_key=REDACTED&zone=eu", true},
		{"auth.host", "billing.internal", false},
		{"retry.retryable_status", "[429, 502, 503, 504]", false},
		{"timeout", "30s", false},
	}
	for _, tt := range tests {
		if s := got[tt.key]; s.Text != tt.want || s.Redacted != tt.redacted {
			t.Errorf("Settings %s: got %q (redacted %v), want %q (redacted %v)", tt.key, s.Text, s.Redacted, tt.want, tt.redacted)
		}
	}

	n := c
	n.Auth.BearerToken = "tok-s3cr3t-rotated"
	n.Retry.MaxRetries = 5
	n.Headers = map[string]string{"User-Agent": "svc/1.1"}
	changes := config.ChangedKeys(c, n)
	want := []config.KeyChange{
		{Key: "headers.User-Agent", Old: "svc/1.0", New: "svc/1.1"},
		{Key: "headers.X-Api-Key", Old: config.Redacted, New: "", Redacted: true},
		{Key: "retry.max_retries", Old: "3", New: "5"},
		{Key: "auth.bearer_token", Old: config.Redacted, New: config.Redacted, Redacted: true},
	}
	if fmt.Sprint(changes) != fmt.Sprint(want) {
		t.Errorf("ChangedKeys:\ngot  %v\nwant %v", changes, want)
	}
	if got := config.ChangedKeys(c, c); len(got) != 0 {
		t.Errorf("ChangedKeys of equal configs: got %v, want none", got)
	}
}
