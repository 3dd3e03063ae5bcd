package schematest_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/switchboard-http/switchboard/config"
)

const testdata = "../testdata"

// outOfReach lists the invalid files whose error no JSON Schema of one file
// can see, and why. Every other invalid file must be rejected by the schema.
var outOfReach = map[string]string{
	// Cross-field checks after `defaults` is merged under each client: the
	// offending values may sit in different sections (attempt_timeout in
	// defaults, timeout in the client), so a schema rule on one section
	// would reject valid files too.
	"attempt_timeout_inherited.yaml": "attempt_timeout < timeout spans defaults and the client",
	"attempt_timeout_not_less.yaml":  "attempt_timeout < timeout compares two values",
	"header_name_collision.yaml":     "header names compared with each other, ignoring case",
	"cert_without_key.yaml":          "key_file may come from defaults",
	"credential_without_host.yaml":   "auth.host may come from defaults",
	// The file system.
	"unreadable_token_file.yaml": "whether a file can be read is not in the YAML",
	// Not YAML at all: the parser fails before any schema applies.
	"bad_yaml.yaml": "malformed YAML",
}

// schema compiles config.JSONSchema with the validator.
func schema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(config.JSONSchema()))
	if err != nil {
		t.Fatalf("JSONSchema is not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(config.SchemaID, doc); err != nil {
		t.Fatalf("add schema: %v", err)
	}
	s, err := c.Compile(config.SchemaID)
	if err != nil {
		t.Fatalf("compile schema: %v", err)
	}
	return s
}

// instance reads a YAML file as a JSON value, as a YAML language server
// sees it. ok is false when the file is not YAML.
func instance(t *testing.T, path string) (v any, ok bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var y any
	if err := yaml.Unmarshal(b, &y); err != nil {
		return nil, false
	}
	j, err := json.Marshal(y)
	if err != nil {
		t.Fatalf("%s: YAML to JSON: %v", path, err)
	}
	v, err = jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatalf("%s: read JSON: %v", path, err)
	}
	return v, true
}

func files(t *testing.T, dir string) []string {
	t.Helper()
	fs, err := filepath.Glob(filepath.Join(testdata, dir, "*.yaml"))
	if err != nil || len(fs) == 0 {
		t.Fatalf("glob testdata/%s: got %d files, err %v; want some", dir, len(fs), err)
	}
	return fs
}

func TestSchemaAcceptsValidFiles(t *testing.T) {
	s := schema(t)
	for _, path := range files(t, "valid") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			v, ok := instance(t, path)
			if !ok {
				t.Fatalf("not YAML")
			}
			if err := s.Validate(v); err != nil {
				t.Errorf("schema rejects a valid file: %v", err)
			}
		})
	}
}

func TestSchemaRejectsInvalidFiles(t *testing.T) {
	s := schema(t)
	seen := map[string]bool{}
	for _, path := range files(t, "invalid") {
		name := filepath.Base(path)
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			v, ok := instance(t, path)
			err := error(nil)
			if ok {
				err = s.Validate(v)
			}
			if why, out := outOfReach[name]; out {
				if ok && err != nil {
					t.Errorf("listed as out of the schema's reach (%s), but the schema rejects it: %v; remove it from outOfReach", why, err)
				}
				return
			}
			if !ok {
				t.Fatalf("not YAML; list it in outOfReach")
			}
			if err == nil {
				t.Errorf("schema accepts an invalid file; tighten the schema or list it in outOfReach with the reason")
			}
		})
	}
	for name := range outOfReach {
		if !seen[name] {
			t.Errorf("outOfReach names %s, which is not in testdata/invalid", name)
		}
	}
}

// TestSchemaEdgeCases pins schema decisions the testdata files do not show.
func TestSchemaEdgeCases(t *testing.T) {
	s := schema(t)
	tests := []struct {
		name, yaml string
		valid      bool
	}{
		{"zero duration as number", "defaults: {timeout: 0}", true},
		{"duration with units", "defaults: {timeout: 1m30s, retry: {initial_backoff: .5s}}", true},
		{"negative duration", "defaults: {timeout: -1s}", false},
		{"bare number duration", "defaults: {timeout: 30}", false},
		{"zero breaker window", "defaults: {circuit_breaker: {window: 0s}}", false},
		{"numeric min_version", "defaults: {tls: {min_version: 1.3}}", true},
		{"string min_version", `defaults: {tls: {min_version: "1.0"}}`, true},
		{"numeric header value", "defaults: {headers: {X-Version: 2}}", true},
		{"bad header name", `defaults: {headers: {"X Bad": a}}`, false},
		{"null section", "clients: {billing: }", true},
		{"null scalar", "defaults: {timeout: }", false},
		{"method token", "defaults: {retry: {retryable_methods: [GET, POST]}}", true},
		{"bad method", `defaults: {retry: {retryable_methods: ["GE T"]}}`, false},
		{"proxy with scheme", "defaults: {transport: {proxy_url: 'http://proxy:3128'}}", true},
		{"empty secrets both set", `defaults: {auth: {bearer_token: "", bearer_token_file: ""}}`, true},
		{"password and file", `clients: {a: {auth: {host: h, basic: {password: p, password_file: /f}}}}`, false},
		{"auth host with scheme", "clients: {a: {auth: {host: 'https://h'}}}", false},
		{"rate above one", "defaults: {circuit_breaker: {failure_rate_threshold: 1.01}}", false},
		{"client name with dot", "clients: {a.b: {}}", false},
		{"empty document", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			v, ok := instance(t, path)
			if !ok {
				t.Fatalf("not YAML: %q", tt.yaml)
			}
			err := s.Validate(v)
			if (err == nil) != tt.valid {
				t.Errorf("%q: got error %v, want valid %v", tt.yaml, err, tt.valid)
			}
		})
	}
}

// TestSchemaDescribesEveryKey checks that editors get a description and a
// default for every key.
func TestSchemaDescribesEveryKey(t *testing.T) {
	var s map[string]any
	if err := json.Unmarshal(config.JSONSchema(), &s); err != nil {
		t.Fatal(err)
	}
	client := s["$defs"].(map[string]any)["client"].(map[string]any)
	for _, k := range config.Keys() {
		node := client
		for _, seg := range strings.Split(k.Path, ".") {
			node = node["properties"].(map[string]any)[seg].(map[string]any)
		}
		if node["description"] == nil || node["default"] == nil {
			t.Errorf("%s: got description %v, default %v; want both", k.Path, node["description"], node["default"])
		}
	}
}
