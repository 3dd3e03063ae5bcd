package main

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// jsonNames returns the JSON member names of struct type t.
func jsonNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// TestValidateJSONSchemaMatchesOutput keeps validate.schema.json in step
// with the Go types of the --json output: the same members, no more, no
// fewer. The schematest module validates real outputs against the schema.
func TestValidateJSONSchemaMatchesOutput(t *testing.T) {
	var schema struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
		Defs       struct {
			Error struct {
				Required   []string                   `json:"required"`
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"error"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(validateSchema, &schema); err != nil {
		t.Fatalf("validate.schema.json: %v", err)
	}
	keys := func(m map[string]json.RawMessage) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	if got, want := keys(schema.Properties), jsonNames(reflect.TypeFor[validateResult]()); !slices.Equal(got, want) {
		t.Errorf("schema properties: got %v, want validateResult's %v", got, want)
	}
	if got, want := keys(schema.Defs.Error.Properties), jsonNames(reflect.TypeFor[jsonError]()); !slices.Equal(got, want) {
		t.Errorf("schema error properties: got %v, want jsonError's %v", got, want)
	}
	// Members without omitempty are always present: the schema requires them.
	for _, typ := range []reflect.Type{reflect.TypeFor[validateResult](), reflect.TypeFor[jsonError]()} {
		req := schema.Required
		if typ == reflect.TypeFor[jsonError]() {
			req = schema.Defs.Error.Required
		}
		for i := range typ.NumField() {
			name, opts, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if always := opts != "omitempty"; always != slices.Contains(req, name) {
				t.Errorf("%s.%s: always present %v, required by the schema %v", typ.Name(), name, always, slices.Contains(req, name))
			}
		}
	}
}
