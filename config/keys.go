package config

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"
)

// The key table describes every key of a `defaults` or `clients.<name>`
// section once, derived by one reflection walk over ClientConfig's struct
// tags: koanf gives the key's name, secret says how its value is redacted
// (secret:"true" a secret, "headers" a header map, "url" a URL), and
// enum, minimum, exclusiveMinimum, maximum and exclusiveMaximum its
// constraints; keyDocs gives its description. Everything else reads the
// table: the loader's checks and path resolution (file, Source, env,
// flags), Hash, Equal, Settings, ChangedKeys, Keys, Reference, the JSON
// Schema, Provenance and single-field validation. A key added to the
// settings structs is one field with its tags and one line in keyDocs.

// kind is what a key of the file format holds.
type kind uint8

const (
	kindSection    kind = iota // a block of further keys
	kindDuration               // a Go duration string ("500ms")
	kindInt                    // an integer
	kindFloat                  // a number; integers are accepted
	kindBool                   // true or false
	kindString                 // a string
	kindIntList                // a list of integers
	kindStringList             // a list of strings
	kindStringMap              // a free map of string to string (headers)
)

// field is one node of the client section's key tree: a section, or a leaf
// (one row of the key table). Fields are built once and never changed, so
// they are safe for concurrent use.
type field struct {
	kind  kind
	path  string            // the dotted path within a client section: "retry.max_retries"
	index []int             // the struct field path of the key in ClientConfig
	tag   reflect.StructTag // the key's tags: constraints and secret
	doc   string            // the key's description (keyDocs)
	// pattern and format are a string key's syntax beyond its type and
	// tags (keyFormats): the JSON Schema's pattern, the reference's words.
	pattern, format string
	def             any  // a leaf's built-in value, in toTree's canonical form
	file            bool // a leaf that names a file the config reads (a *_file key)
	// redact is how the leaf's value is hidden when shown (its secret tag,
	// see redaction): the one column every printer of a value reads.
	redact redaction
	// holdsSecret is true for a leaf whose value may bear a secret (redact
	// is not redactNone: a secret, a headers map, a proxy URL) and a
	// section with such a key anywhere below it: an error about a value at
	// such a path never quotes the value, whatever its shape.
	holdsSecret bool
	children    map[string]*field // kindSection only
	names       []string          // kindSection only: sorted child names
}

// clientSchema is the root of the key tree: a `defaults` or
// `clients.<name>` section. keyTable lists its leaves in the order of the
// file format (the declaration order of the structs, as docs/reference.md
// lists them), headers included. Neither is ever changed.
var clientSchema, keyTable = func() (*field, []*field) {
	var table []*field
	root := buildSchema(reflect.TypeFor[ClientConfig](), "", nil, &table)
	def := reflect.ValueOf(Default())
	for _, l := range table {
		l.def = treeValue(l.kind, l.valueOf(def))
	}
	return root, table
}()

// sortedKeys is keyTable in the order of sorted paths, section by section
// (the order Hash has always written them in); never changed.
var sortedKeys = func() []*field {
	out := slices.Clone(keyTable)
	slices.SortFunc(out, func(a, b *field) int {
		return slices.Compare(strings.Split(a.path, "."), strings.Split(b.path, "."))
	})
	return out
}()

// headerValue is the schema of one entry of a `headers` map.
var headerValue = &field{kind: kindString, redact: redactSecret, holdsSecret: true}

var durationType = reflect.TypeFor[time.Duration]()

// buildSchema builds the section of struct type t at path, whose struct
// field path in ClientConfig is index, appending its leaves to table in
// declaration order: the one walk over the types.
func buildSchema(t reflect.Type, path string, index []int, table *[]*field) *field {
	f := &field{kind: kindSection, path: path, index: index, children: map[string]*field{}}
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("koanf"), ",")
		if name == "" || name == "-" || !sf.IsExported() {
			continue
		}
		p, idx := joinPath(path, name), append(slices.Clip(index), i)
		var c *field
		if sf.Type.Kind() == reflect.Struct && sf.Type != durationType {
			c = buildSchema(sf.Type, p, idx, table)
		} else {
			c = &field{kind: kindOf(sf.Type), path: p, index: idx}
			*table = append(*table, c)
		}
		c.tag = sf.Tag
		c.doc = keyDocs[p]
		c.pattern, c.format = keyFormats[p].pattern, keyFormats[p].allowed
		c.file = c.kind == kindString && strings.HasSuffix(name, "_file")
		c.redact = redactionOf(sf.Tag.Get("secret"))
		c.holdsSecret = c.holdsSecret || c.redact != redactNone
		f.holdsSecret = f.holdsSecret || c.holdsSecret
		f.children[name] = c
		f.names = append(f.names, name)
	}
	slices.Sort(f.names)
	return f
}

// kindOf returns the kind of a leaf of type t.
func kindOf(t reflect.Type) kind {
	if t == durationType {
		return kindDuration
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return kindInt
	case reflect.Float32, reflect.Float64:
		return kindFloat
	case reflect.Bool:
		return kindBool
	case reflect.String:
		return kindString
	case reflect.Slice:
		switch t.Elem().Kind() {
		case reflect.Int:
			return kindIntList
		case reflect.String:
			return kindStringList
		}
	case reflect.Map:
		if t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.String {
			return kindStringMap
		}
	}
	panic(fmt.Sprintf("config: no schema kind for %v", t))
}

// relResult is how resolveRel ended.
type relResult uint8

const (
	relLeaf    relResult = iota // the parts name a leaf (or one header)
	relUnknown                  // they name no key
	relSection                  // they name a section, not a key
)

// resolveRel resolves the parts of a key path within a client section,
// as an env variable or a flag spells them, to the canonical segments and
// the leaf they name: the one path resolver of the key tree. An env
// variable's parts (env) match key names case-insensitively and name a
// header in one part with "_" standing for "-"; a flag's parts match
// exactly, and a header name is everything after "headers" (it may hold
// dots). Header names are put in canonical form. On relUnknown, hint is
// the nearest key name, or "".
func resolveRel(parts []string, env bool) (segs []string, f *field, hint string, res relResult) {
	f = clientSchema
	for i, p := range parts {
		if f.kind == kindStringMap {
			name := strings.Join(parts[i:], ".")
			if env {
				if i != len(parts)-1 {
					name = ""
				}
				name = strings.ReplaceAll(name, "_", "-")
			}
			if name == "" {
				return nil, nil, "", relUnknown
			}
			return append(segs, canonicalHeader(name)), headerValue, "", relLeaf
		}
		if f.kind != kindSection {
			return nil, nil, "", relUnknown
		}
		if env {
			p = strings.ToLower(p)
		}
		c := f.children[p]
		if c == nil {
			return nil, nil, suggest(p, f.names), relUnknown
		}
		segs = append(segs, p)
		f = c
	}
	if f.kind == kindSection {
		return nil, nil, "", relSection
	}
	return segs, f, "", relLeaf
}

// secret reports whether the whole value of l is a secret (secret:"true").
func (l *field) secret() bool { return l.redact == redactSecret }

// stringMapType is the type of a plain string map; Headers converts to it.
var stringMapType = reflect.TypeFor[map[string]string]()

// stringMapOf returns v, a map of string to string of any named type
// (Headers), as a plain map, without copying it.
func stringMapOf(v reflect.Value) map[string]string {
	return v.Convert(stringMapType).Interface().(map[string]string)
}

// valueOf returns the value of leaf l in c (c must be addressable or a
// plain value; the result is read-only).
func (l *field) valueOf(c reflect.Value) reflect.Value { return c.FieldByIndex(l.index) }

// joinPath joins two dotted key paths.
func joinPath(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

// toTree converts c into the canonical nested map that the loader merges:
// sections are map[string]any and leaves hold time.Duration, int, float64,
// bool, string, []int, []string or (headers) map[string]any of strings.
func toTree(c ClientConfig) map[string]any {
	v := reflect.ValueOf(c)
	tree := make(map[string]any, len(clientSchema.names))
	for _, l := range keyTable {
		setPath(tree, strings.Split(l.path, "."), treeValue(l.kind, l.valueOf(v)))
	}
	return tree
}

// treeValue returns the canonical tree value of a leaf of kind k.
func treeValue(k kind, fv reflect.Value) any {
	switch k {
	case kindDuration:
		return time.Duration(fv.Int())
	case kindInt:
		return int(fv.Int())
	case kindFloat:
		return fv.Float()
	case kindBool:
		return fv.Bool()
	case kindString:
		return fv.String()
	case kindIntList:
		l := make([]int, fv.Len())
		for i := range l {
			l[i] = int(fv.Index(i).Int())
		}
		return l
	case kindStringList:
		l := make([]string, fv.Len())
		for i := range l {
			l[i] = fv.Index(i).String()
		}
		return l
	case kindStringMap:
		h := make(map[string]any, fv.Len())
		for iter := fv.MapRange(); iter.Next(); {
			h[iter.Key().String()] = iter.Value().String()
		}
		return h
	}
	panic(fmt.Sprintf("config: no tree value for schema kind %d", k))
}

// leafEqual reports whether two values of a leaf of kind k are the same
// setting: floats compare as numbers, a nil and an empty map or list are
// alike. It reads through reflect without allocating.
func leafEqual(k kind, a, b reflect.Value) bool {
	switch k {
	case kindDuration, kindInt:
		return a.Int() == b.Int()
	case kindFloat:
		return a.Float() == b.Float()
	case kindBool:
		return a.Bool() == b.Bool()
	case kindString:
		return a.String() == b.String()
	case kindIntList, kindStringList:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			x, y := a.Index(i), b.Index(i)
			if k == kindIntList && x.Int() != y.Int() || k == kindStringList && x.String() != y.String() {
				return false
			}
		}
		return true
	case kindStringMap:
		return maps.Equal(stringMapOf(a), stringMapOf(b))
	}
	panic(fmt.Sprintf("config: no equality for schema kind %d", k))
}
