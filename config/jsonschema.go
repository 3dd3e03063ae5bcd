package config

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// SchemaID is the $id of the JSON Schema that JSONSchema returns.
const SchemaID = "https://github.com/switchboard-http/switchboard/clients.schema.json"

// JSONSchema returns a JSON Schema (draft 2020-12) of the YAML file format,
// indented, ending in a newline. It is generated from the same reflection
// schema that Load checks files against: the koanf tags give the keys, the
// field types give the JSON types, Default() gives the defaults, and the
// struct tags enum, minimum, exclusiveMinimum and maximum give the allowed
// values; descriptions come from the table docs/reference.md is made
// from. Every section has additionalProperties false, durations are strings
// with a pattern (or the number 0), and client names are the
// patternProperties ^[A-Za-z0-9_-]+$.
//
// The schema catches what one file can show on its own: unknown keys, wrong
// types, enumerations, ranges, duration syntax, client names. It cannot see
// checks that span keys or sections after `defaults` is merged (attempt_timeout
// < timeout, a credential without auth.host, cert_file without key_file), nor
// env vars, flags or files on disk; `switchboard validate` sees them all.
//
// Every call returns a fresh slice with the same content. It is safe for
// concurrent use.
func JSONSchema() []byte { return JSONSchemaSection("") }

// JSONSchemaSection is JSONSchema for a config kept under the key path
// section of an application's file (Loader.Section): the client config's
// schema sits at that path, every other key of the file is allowed and
// unchecked. JSONSchemaSection("") is JSONSchema().
func JSONSchemaSection(section string) []byte {
	client := clientSectionSchema()
	client["type"] = []string{"object", "null"}
	client["properties"].(map[string]any)["routes"] = routesSchema(client["properties"].(map[string]any))
	client["description"] = "A client section: every key is optional; a key left out inherits from `defaults`, which inherits the built-in defaults."
	s := map[string]any{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"$id":                  SchemaID,
		"title":                "switchboard clients.yaml",
		"description":          "Named, resilient HTTP clients for Go (github.com/switchboard-http/switchboard). Check a file fully with `switchboard validate FILE`.",
		"type":                 "object",
		"additionalProperties": false,
		"properties": map[string]any{
			"defaults": map[string]any{
				"$ref":        "#/$defs/client",
				"description": "Settings under every client; a client section overrides them key by key. Maps merge, lists replace.",
			},
			"clients": map[string]any{
				"type":        []string{"object", "null"},
				"description": "The named clients; code gets each with Registry.Get(name).",
				"patternProperties": map[string]any{
					clientNameRE.String(): map[string]any{"$ref": "#/$defs/client"},
				},
				"additionalProperties": false,
			},
		},
		"$defs": map[string]any{"client": client},
	}
	if section != "" {
		segs := strings.Split(section, ".")
		inner := map[string]any{"type": "object", "additionalProperties": false, "properties": s["properties"],
			"description": "The client config (Options.Section " + strconv.Quote(section) + ")."}
		for i := len(segs) - 1; i > 0; i-- {
			inner = map[string]any{"type": "object", "properties": map[string]any{segs[i]: inner}, "required": []string{segs[i]}}
		}
		s["properties"] = map[string]any{segs[0]: inner}
		s["required"] = []string{segs[0]}
		s["additionalProperties"] = true
		s["description"] = s["description"].(string) + " The client config is under " + section + "; the application's other keys are not checked."
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		panic("config: encode JSON Schema: " + err.Error()) // only maps, strings and numbers: cannot fail
	}
	return buf.Bytes()
}

// routesSchema returns the schema of a client's `routes`, made of the
// schemas of the client keys a route may set (props): timeout, headers,
// retry without its budget, and hedge. A pattern's syntax is Validate's
// to check (it is http.ServeMux's).
func routesSchema(props map[string]any) map[string]any {
	retry := maps.Clone(props["retry"].(map[string]any))
	rprops := maps.Clone(retry["properties"].(map[string]any))
	delete(rprops, "budget")
	retry["properties"] = rprops
	route := map[string]any{
		"type":                 []string{"object", "null"},
		"additionalProperties": false,
		"properties": map[string]any{
			"timeout": props["timeout"],
			"headers": props["headers"],
			"retry":   retry,
			"hedge":   props["hedge"],
		},
	}
	return map[string]any{
		"type":                 []string{"object", "null"},
		"description":          routesDoc,
		"additionalProperties": route,
	}
}

// clientSectionSchema returns the schema of a client section, built from
// the key table: each leaf's schema placed under its sections.
func clientSectionSchema() map[string]any {
	root := sectionSchema("")
	for _, l := range keyTable {
		segs := strings.Split(l.path, ".")
		s, path := root, ""
		for _, seg := range segs[:len(segs)-1] {
			path = joinPath(path, seg)
			props := s["properties"].(map[string]any)
			sub, ok := props[seg].(map[string]any)
			if !ok {
				sub = sectionSchema(path)
				props[seg] = sub
			}
			s = sub
		}
		s["properties"].(map[string]any)[segs[len(segs)-1]] = leafSchema(l.path, l, l.tag, l.def)
	}
	return root
}

// sectionSchema returns the schema of the section at path, its keys still
// to be added.
func sectionSchema(path string) map[string]any {
	s := map[string]any{
		"type":                 []string{"object", "null"},
		"additionalProperties": false,
		"properties":           map[string]any{},
	}
	if d := keyDocs[path]; d != "" && path != "" {
		s["description"] = d
	}
	if rule := sectionRules[path]; rule != nil {
		s["allOf"] = rule
	}
	return s
}

// sectionRules are the checks within one section that Validate makes and a
// schema can express without false alarms: two keys that must not both be
// non-empty in the same section.
var sectionRules = map[string][]any{
	"auth":       {notBoth("bearer_token", "bearer_token_file")},
	"auth.basic": {notBoth("password", "password_file")},
}

// notBoth is a schema that rejects an object in which keys a and b are both
// non-empty strings.
func notBoth(a, b string) map[string]any {
	nonEmpty := map[string]any{"type": "string", "minLength": 1}
	return map[string]any{"not": map[string]any{
		"required":   []string{a, b},
		"properties": map[string]any{a: nonEmpty, b: nonEmpty},
	}}
}

// leafSchema returns the schema of the leaf f at path, with struct tag tag
// and built-in value def (in toTree's canonical form).
func leafSchema(path string, f *field, tag reflect.StructTag, def any) map[string]any {
	s := map[string]any{}
	switch f.kind {
	case kindDuration:
		if tag.Get("exclusiveMinimum") == "0" {
			s["type"], s["pattern"] = "string", positiveDurationPattern
			break
		}
		s["anyOf"] = []any{
			map[string]any{"type": "string", "pattern": durationPattern},
			map[string]any{"const": 0},
		}
	case kindInt:
		s["type"] = "integer"
		addRange(s, tag)
	case kindFloat:
		s["type"] = "number"
		addRange(s, tag)
	case kindBool:
		s["type"] = "boolean"
	case kindString:
		if enum := enumOf(tag); enum != nil {
			s["enum"] = enumWithScalars(enum)
		} else {
			s["type"] = "string"
		}
		if p := f.pattern; p != "" {
			s["pattern"] = p
		}
	case kindIntList:
		item := map[string]any{"type": "integer"}
		addRange(item, tag)
		s["type"], s["items"] = "array", item
	case kindStringList:
		item := map[string]any{"type": "string"}
		if p := f.pattern; p != "" {
			item["pattern"] = p
		}
		s["type"], s["items"] = "array", item
	case kindStringMap:
		s["type"] = []string{"object", "null"}
		s["propertyNames"] = map[string]any{"pattern": headerNamePattern}
		// A number or boolean is taken as written, like any string key.
		s["additionalProperties"] = map[string]any{"type": []string{"string", "number", "boolean"}}
	}
	if f.doc != "" {
		s["description"] = f.doc
	}
	if def != nil {
		s["default"] = jsonValue(def)
	}
	return s
}

// addRange copies the minimum, exclusiveMinimum, maximum and
// exclusiveMaximum tags into s.
func addRange(s map[string]any, tag reflect.StructTag) {
	for _, k := range []string{"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"} {
		if v, ok := tag.Lookup(k); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				panic("config: bad " + k + " tag " + strconv.Quote(v))
			}
			s[k] = n
		}
	}
}

// enumOf returns the values of an enum tag, or nil.
func enumOf(tag reflect.StructTag) []string {
	v, ok := tag.Lookup("enum")
	if !ok {
		return nil
	}
	return strings.Split(v, ",")
}

// enumWithScalars returns enum plus, for each value YAML would read as a
// number (min_version: 1.2), that number: the loader takes such a scalar
// as written, so the schema must accept it too.
func enumWithScalars(enum []string) []any {
	out := make([]any, 0, 2*len(enum))
	for _, e := range enum {
		out = append(out, e)
	}
	for _, e := range enum {
		if n, err := strconv.ParseFloat(e, 64); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// jsonValue converts a canonical tree value to its JSON form: durations as
// their Go string, everything else as is.
func jsonValue(v any) any {
	switch x := v.(type) {
	case time.Duration:
		return x.String()
	case map[string]any:
		if len(x) == 0 {
			return map[string]any{}
		}
	}
	return v
}
