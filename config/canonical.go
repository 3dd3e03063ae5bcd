package config

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// The canonical encoding is the one spelling of a config value that every
// "did it change" decision compares: Hash writes each leaf in it,
// and a Source's part of the input hash is its checked tree in it (Equal
// and ChangedKeys judge the same leaves without encoding them, see
// leafEqual). Values are spelled as Hash always spelled them
// (so digests stay as they were): integers in decimal (durations in ns),
// floats in the shortest 'g' form, booleans as true/false, strings quoted,
// int lists as [1 2 3]; at the top of a leaf a string list is its quoted
// items each followed by a comma and a map its "key":value pairs, each
// followed by a comma, in key order. Nested inside a map or a list, a map
// is wrapped in {} and a list in [] (items separated by a space), so that a
// tree's encoding is unambiguous: an empty map, an empty list and an absent
// key all read differently.

// canonicalEncoder appends canonical encodings, reusing its scratch space.
// It is not safe for concurrent use.
type canonicalEncoder struct {
	kv [][2]string // the current string map's pairs
}

// value appends the canonical encoding of v to b; top is true for a leaf's
// value as a whole (see above).
func (e *canonicalEncoder) value(b []byte, v reflect.Value, top bool) []byte {
	switch v.Kind() {
	case reflect.Invalid:
		return append(b, "null"...)
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return append(b, "null"...)
		}
		return e.value(b, v.Elem(), top)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(b, v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.AppendUint(b, v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return strconv.AppendFloat(b, v.Float(), 'g', -1, 64)
	case reflect.Bool:
		return strconv.AppendBool(b, v.Bool())
	case reflect.String:
		return strconv.AppendQuote(b, v.String())
	case reflect.Slice, reflect.Array:
		if top && v.Type().Elem().Kind() == reflect.String {
			for i := range v.Len() {
				b = strconv.AppendQuote(b, v.Index(i).String())
				b = append(b, ',')
			}
			return b
		}
		b = append(b, '[')
		for i := range v.Len() {
			if i > 0 {
				b = append(b, ' ')
			}
			b = e.value(b, v.Index(i), false)
		}
		return append(b, ']')
	case reflect.Map:
		if !top {
			b = append(b, '{')
		}
		if v.CanConvert(stringMapType) {
			b = e.stringMap(b, stringMapOf(v))
		} else {
			keys := v.MapKeys()
			slices.SortFunc(keys, func(x, y reflect.Value) int { return cmp.Compare(mapKey(x), mapKey(y)) })
			for _, k := range keys {
				b = strconv.AppendQuote(b, mapKey(k))
				b = append(b, ':')
				b = e.value(b, v.MapIndex(k), false)
				b = append(b, ',')
			}
		}
		if !top {
			b = append(b, '}')
		}
		return b
	}
	panic(fmt.Sprintf("config: no canonical encoding for %v", v.Type()))
}

// mapKey returns a map key as text.
func mapKey(k reflect.Value) string {
	if k.Kind() == reflect.String {
		return k.String()
	}
	return fmt.Sprint(k.Interface())
}

// stringMap appends the pairs of m (headers) in key order, without
// allocating once the scratch space has grown.
func (e *canonicalEncoder) stringMap(b []byte, m map[string]string) []byte {
	kv := e.kv[:0]
	for k, v := range m {
		kv = append(kv, [2]string{k, v})
	}
	slices.SortFunc(kv, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	for _, p := range kv {
		b = strconv.AppendQuote(b, p[0])
		b = append(b, ':')
		b = strconv.AppendQuote(b, p[1])
		b = append(b, ',')
	}
	clear(kv) // they may hold secret values
	e.kv = kv[:0]
	return b
}

// canonicalTree returns the canonical encoding of a layer's checked tree
// (sections as maps, leaves as the canonical values of toTree), as a
// Source's part of the input hash.
func canonicalTree(tree map[string]any) []byte {
	var e canonicalEncoder
	return e.value(nil, reflect.ValueOf(tree), false)
}
