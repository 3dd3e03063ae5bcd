package schematest_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

const cmdDir = "../cmd/switchboard"

// TestValidateJSONOutputMatchesItsSchema validates every recorded
// 'switchboard validate --json' output (the golden files, which
// cmd/switchboard's tests compare with real runs) against the schema the
// command prints with --json-schema, and checks that the schema rejects
// what the command never prints.
func TestValidateJSONOutputMatchesItsSchema(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(cmdDir, "validate.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("validate.schema.json is not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	const id = "https://github.com/switchboard-http/switchboard/cmd/switchboard/validate.schema.json"
	if err := c.AddResource(id, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(id)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}

	goldens, err := filepath.Glob(filepath.Join(cmdDir, "testdata", "golden", "validate_json_*.golden"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, path := range goldens {
		if strings.HasSuffix(path, "validate_json_schema.golden") {
			continue // the schema itself
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// A golden file is "exit N\n-- stdout --\n<output>".
		_, out, ok := strings.Cut(string(b), "-- stdout --\n")
		if !ok {
			t.Fatalf("%s: no stdout section", path)
		}
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
		if err != nil {
			t.Fatalf("%s: output is not JSON: %v", path, err)
		}
		if err := s.Validate(v); err != nil {
			t.Errorf("%s: output does not match the schema: %v", path, err)
		}
		n++
	}
	if n < 2 {
		t.Fatalf("got %d recorded outputs, want at least validate_json_ok and validate_json_errors", n)
	}

	for name, bad := range map[string]string{
		"valid with errors":     `{"file": "a.yaml", "valid": true, "clients": [], "errors": [{"message": "m", "text": "t"}]}`,
		"invalid without error": `{"file": "a.yaml", "valid": false, "clients": []}`,
		"unknown member":        `{"file": "a.yaml", "valid": true, "clients": [], "ok": true}`,
		"line 0":                `{"file": "a.yaml", "valid": false, "clients": [], "errors": [{"line": 0, "message": "m", "text": "t"}]}`,
	} {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(bad))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(v); err == nil {
			t.Errorf("%s: the schema accepts %s", name, bad)
		}
	}
}
