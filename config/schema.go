package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
)

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

// field is one key of the client section's schema, derived by reflection
// from the koanf tags of ClientConfig. Schemas are built once and never
// changed, so they are safe for concurrent use.
type field struct {
	kind   kind
	secret bool // tagged secret:"true": its value never appears in errors
	// holdsSecret is true for a secret leaf, a headers map (its values may
	// be credentials) and a section with such a key anywhere below it: an
	// error about a value at such a path never quotes the value, whatever
	// its shape.
	holdsSecret bool
	index       int               // index of the struct field in its parent struct
	children    map[string]*field // kindSection only
	names       []string          // kindSection only: sorted child names
}

// clientSchema describes the keys of a `defaults` or `clients.<name>` section.
var clientSchema = buildSchema(reflect.TypeFor[ClientConfig]())

// headerValue is the schema of one entry of a `headers` map.
var headerValue = &field{kind: kindString, secret: true, holdsSecret: true}

var durationType = reflect.TypeFor[time.Duration]()

// buildSchema builds the section schema of struct type t.
func buildSchema(t reflect.Type) *field {
	f := &field{kind: kindSection, children: map[string]*field{}}
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("koanf"), ",")
		if name == "" || name == "-" || !sf.IsExported() {
			continue
		}
		c := leafOf(sf.Type)
		c.index = i
		c.secret = sf.Tag.Get("secret") == "true"
		c.holdsSecret = c.holdsSecret || c.secret || c.kind == kindStringMap
		f.holdsSecret = f.holdsSecret || c.holdsSecret
		f.children[name] = c
		f.names = append(f.names, name)
	}
	slices.Sort(f.names)
	return f
}

// leafOf returns the schema of a field of type t.
func leafOf(t reflect.Type) *field {
	if t == durationType {
		return &field{kind: kindDuration}
	}
	switch t.Kind() {
	case reflect.Struct:
		return buildSchema(t)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return &field{kind: kindInt}
	case reflect.Float32, reflect.Float64:
		return &field{kind: kindFloat}
	case reflect.Bool:
		return &field{kind: kindBool}
	case reflect.String:
		return &field{kind: kindString}
	case reflect.Slice:
		switch t.Elem().Kind() {
		case reflect.Int:
			return &field{kind: kindIntList}
		case reflect.String:
			return &field{kind: kindStringList}
		}
	case reflect.Map:
		if t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.String {
			return &field{kind: kindStringMap}
		}
	}
	panic(fmt.Sprintf("config: no schema kind for %v", t))
}

// lookup returns the field at the dotted path rel under the client section
// (a header path "headers.X-Name" yields the headers map's field), or nil.
func lookup(rel string) *field {
	f := clientSchema
	for seg := range strings.SplitSeq(rel, ".") {
		if f.kind == kindStringMap {
			return f
		}
		if f.kind != kindSection {
			return nil
		}
		if f = f.children[seg]; f == nil {
			return nil
		}
	}
	return f
}

// walkLeaves calls fn for every leaf of section f with its dotted path
// under prefix; kindStringMap counts as a leaf here.
func (f *field) walkLeaves(prefix string, fn func(path string, leaf *field)) {
	for _, name := range f.names {
		c := f.children[name]
		p := joinPath(prefix, name)
		if c.kind == kindSection {
			c.walkLeaves(p, fn)
			continue
		}
		fn(p, c)
	}
}

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
	return sectionTree(clientSchema, reflect.ValueOf(c))
}

func sectionTree(f *field, v reflect.Value) map[string]any {
	m := make(map[string]any, len(f.names))
	for _, name := range f.names {
		c := f.children[name]
		fv := v.Field(c.index)
		switch c.kind {
		case kindSection:
			m[name] = sectionTree(c, fv)
		case kindDuration:
			m[name] = time.Duration(fv.Int())
		case kindInt:
			m[name] = int(fv.Int())
		case kindFloat:
			m[name] = fv.Float()
		case kindBool:
			m[name] = fv.Bool()
		case kindString:
			m[name] = fv.String()
		case kindIntList:
			l := make([]int, fv.Len())
			for i := range l {
				l[i] = int(fv.Index(i).Int())
			}
			m[name] = l
		case kindStringList:
			l := make([]string, fv.Len())
			for i := range l {
				l[i] = fv.Index(i).String()
			}
			m[name] = l
		case kindStringMap:
			h := make(map[string]any, fv.Len())
			iter := fv.MapRange()
			for iter.Next() {
				h[iter.Key().String()] = iter.Value().String()
			}
			m[name] = h
		}
	}
	return m
}
