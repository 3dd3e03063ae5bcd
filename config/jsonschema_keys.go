package config

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-http/switchboard/middleware"
)

// Key describes one key of a `defaults` or `clients.<name>` section, as the
// JSON Schema and docs/reference.md show it. A plain value.
type Key struct {
	// Path is the dotted key path within a client section, such as
	// "retry.max_retries"; "headers" stands for the whole headers map.
	Path string
	// Type is "duration", "integer", "number", "boolean", "string",
	// "list of integers", "list of strings" or "map of header name to value".
	Type string
	// Default is the built-in value as written in YAML ("30s", "[]", `""`).
	Default string
	// Allowed is the enumeration or range the value must be in, such as
	// "full | equal | decorrelated | none" or ">= 0"; "" when any value of
	// Type is allowed.
	Allowed string
	// Doc is the key's description, saying what zero means.
	Doc string
	// Secret is true for keys whose values are never shown.
	Secret bool
}

// Keys returns every key of a client section in the order of the file
// format, each with its type, built-in default, allowed values and
// description. Every call returns a fresh slice. It is safe for concurrent use.
func Keys() []Key {
	var out []Key
	for _, l := range keyTable {
		out = append(out, Key{
			Path:    l.path,
			Type:    typeName(l.kind),
			Default: render(l.kind, l.def),
			Allowed: allowed(l),
			Doc:     l.doc,
			Secret:  l.secret(),
		})
	}
	return out
}

func typeName(k kind) string {
	switch k {
	case kindDuration:
		return "duration"
	case kindInt:
		return "integer"
	case kindFloat:
		return "number"
	case kindBool:
		return "boolean"
	case kindString:
		return "string"
	case kindIntList:
		return "list of integers"
	case kindStringList:
		return "list of strings"
	case kindStringMap:
		return "map of header name to value"
	}
	return "section"
}

// allowed renders the enumeration or range of a leaf.
func allowed(l *field) string {
	tag := l.tag
	if e := enumOf(tag); e != nil {
		shown := slices.Clone(e)
		for i, v := range shown {
			if v == "" {
				shown[i] = `""`
			}
		}
		return strings.Join(shown, " | ")
	}
	lo, hasLo := tag.Lookup("minimum")
	xlo, hasXlo := tag.Lookup("exclusiveMinimum")
	hi, hasHi := tag.Lookup("maximum")
	xhi, hasXhi := tag.Lookup("exclusiveMaximum")
	switch {
	case hasLo && hasXhi:
		return "[" + lo + ", " + xhi + ")"
	case l.kind == kindDuration && hasXlo:
		return "> " + xlo
	case l.kind == kindDuration:
		return ">= 0"
	case hasLo && hasHi:
		return lo + ".." + hi
	case hasXlo && hasHi:
		return "(" + xlo + ", " + hi + "]"
	case hasLo:
		return ">= " + lo
	case hasXlo:
		return "> " + xlo
	}
	return l.format
}

// render writes a canonical tree value as YAML would show it.
func render(k kind, v any) string {
	switch x := v.(type) {
	case time.Duration:
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		if x == "" || k != kindString {
			return strconv.Quote(x)
		}
		return x
	case []int:
		s := make([]string, len(x))
		for i, n := range x {
			s[i] = strconv.Itoa(n)
		}
		return "[" + strings.Join(s, ", ") + "]"
	case []string:
		return "[" + strings.Join(x, ", ") + "]"
	case map[string]any:
		if len(x) == 0 {
			return "{}"
		}
		parts := make([]string, 0, len(x))
		for _, name := range slices.Sorted(maps.Keys(x)) {
			parts = append(parts, name+": "+fmt.Sprint(x[name]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v)
}

// Reference returns the Markdown table of every key of a client section:
// key, type, built-in default, allowed values and description, generated
// from the same source as JSONSchema. docs/reference.md holds a copy between
// <!-- reference:start --> and <!-- reference:end -->, which a test keeps
// in step. It is safe for concurrent use.
func Reference() string {
	var b strings.Builder
	b.WriteString("| key | type | default | allowed | description |\n")
	b.WriteString("|---|---|---|---|---|\n")
	for _, k := range Keys() {
		allowed := k.Allowed
		if strings.Contains(allowed, " | ") {
			allowed = "`" + strings.ReplaceAll(allowed, " | ", "` \\| `") + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s | %s |\n",
			k.Path, k.Type, k.Default, allowed, strings.ReplaceAll(k.Doc, "|", "\\|"))
	}
	fmt.Fprintf(&b, "| `routes` | map of route pattern to route section | `{}` | http.ServeMux patterns | %s |\n", routesDoc)
	return b.String()
}

// Redacted replaces a secret value in Settings and ChangedKeys.
const Redacted = middleware.Redacted

// Setting is one effective key of a ClientConfig with its value, ready to
// show: secrets are already replaced by Redacted. A plain value.
type Setting struct {
	// Key is the dotted path within the client section, as in Provenance:
	// "retry.max_retries", or "headers.User-Agent" for each header
	// ("headers" alone when there are none).
	Key string
	// Value is the value in JSON-friendly form: durations as Go duration
	// strings, numbers, booleans, strings, lists, or Redacted.
	Value any
	// Text is the value as written in YAML ("500ms", "[429, 502]", `""`).
	Text string
	// Redacted is true when Value and Text hide a secret.
	Redacted bool
}

// Settings returns every effective key of c in the order of the file
// format, then each route's keys (RouteKey; patterns sorted, only the keys
// a route may set), with every value redacted as the key table's redaction
// column says (the one decision, see Redacted): auth.bearer_token and
// auth.basic.password, header values whose names look sensitive
// (middleware.IsSensitiveHeader: Authorization, X-Api-Key, …), and the
// userinfo and sensitive query parameters of transport.proxy_url
// (middleware.RedactProxyURL: the userinfo reads REDACTED@, so a
// configured credential shows). Empty secrets are shown as they are. It is
// safe for concurrent use.
func (c ClientConfig) Settings() []Setting {
	raw := c.settings()
	out := make([]Setting, len(raw))
	for i, s := range raw {
		out[i] = s.redacted()
	}
	return out
}

// rawSetting is a Setting before redaction.
type rawSetting struct {
	key    string
	kind   kind
	value  any           // canonical tree value
	rv     reflect.Value // the value itself, for leafEqual
	redact redaction     // the key table's column; a header's is redactHeaders
	header string        // the header's name, for a header's setting
}

func (c ClientConfig) settings() []rawSetting {
	return append(c.leafSettings(), c.routeSettings()...)
}

// leafSettings returns the settings of c's own keys, routes left out.
func (c ClientConfig) leafSettings() []rawSetting {
	cv := reflect.ValueOf(&c).Elem()
	var out []rawSetting
	for _, l := range keyTable {
		fv := l.valueOf(cv)
		v := treeValue(l.kind, fv)
		if l.kind == kindStringMap {
			h := v.(map[string]any)
			if len(h) == 0 {
				out = append(out, rawSetting{key: l.path, kind: kindStringMap, value: h})
			}
			for _, name := range slices.Sorted(maps.Keys(h)) {
				out = append(out, rawSetting{key: l.path + "." + name, kind: kindString, value: h[name],
					rv: reflect.ValueOf(h[name]), redact: l.redact, header: name})
			}
			continue
		}
		out = append(out, rawSetting{key: l.path, kind: l.kind, value: v, rv: fv, redact: l.redact})
	}
	return out
}

func (s rawSetting) redacted() Setting {
	out := Setting{Key: s.key, Value: jsonValue(s.value), Text: render(s.kind, s.value)}
	if str, isStr := s.value.(string); isStr {
		if red := redactValue(s.redact, s.header, str); red != str {
			out.Value, out.Text, out.Redacted = red, red, true
		}
	}
	return out
}

// KeyChange is one key whose effective value differs between two client
// configurations, with both values shown as Settings shows them (a changed
// secret reads Redacted on both sides). A plain value.
type KeyChange struct {
	Key      string // as in Setting.Key
	Old, New string // Setting.Text; "" when the key is absent (a header)
	Redacted bool   // a secret changed
}

// ChangedKeys returns the keys whose values differ between old and new, in
// the order of the file format (a header added or removed counts as a
// change of that header). It judges values as Equal does, leaf by leaf
// (leafEqual, after listDefaults), so it is empty exactly when Equal
// reports true: a nil retry list shows as the default list it means.
// Secret values are compared but never returned. It is safe for
// concurrent use.
func ChangedKeys(old, new ClientConfig) []KeyChange {
	old, new = withListDefaults(old), withListDefaults(new)
	type entry struct {
		raw rawSetting
		at  int
	}
	index := func(rs []rawSetting) map[string]entry {
		m := make(map[string]entry, len(rs))
		for i, r := range rs {
			m[r.key] = entry{r, i}
		}
		return m
	}
	o, n := old.settings(), new.settings()
	om, nm := index(o), index(n)
	// Keys in new's order, then keys only old has, each at its place.
	keys := make([]string, 0, len(n)+2)
	for _, r := range n {
		keys = append(keys, r.key)
	}
	for _, r := range o {
		if _, ok := nm[r.key]; !ok {
			keys = append(keys, r.key)
		}
	}
	slices.SortStableFunc(keys, func(a, b string) int { return keyOrder(a) - keyOrder(b) })
	var out []KeyChange
	for _, k := range keys {
		oe, inOld := om[k]
		ne, inNew := nm[k]
		if oe.raw.kind == kindStringMap || ne.raw.kind == kindStringMap {
			continue // the empty-map placeholder (a nil and an empty map are alike)
		}
		if inOld && inNew && leafEqual(oe.raw.kind, oe.raw.rv, ne.raw.rv) {
			continue
		}
		kc := KeyChange{Key: k}
		if inOld {
			s := oe.raw.redacted()
			kc.Old, kc.Redacted = s.Text, s.Redacted
		}
		if inNew {
			s := ne.raw.redacted()
			kc.New, kc.Redacted = s.Text, kc.Redacted || s.Redacted
		}
		out = append(out, kc)
	}
	return out
}

// keyOrder is the position of key in the file format: the index of its
// leaf, headers sorted within theirs.
func keyOrder(key string) int {
	for i, l := range keyTable {
		if key == l.path || strings.HasPrefix(key, l.path+".") {
			return i
		}
	}
	return 1 << 30
}
